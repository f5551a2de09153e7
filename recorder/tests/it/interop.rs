//! What the recorder writes reads elsewhere: another Parquet reader (pyarrow) sees the contract's
//! column types and metadata, and `compose.yaml` is a valid Compose file.

use crate::common;

use std::process::Command;

#[test]
fn pyarrow_reads_the_trace_with_the_contract_types() {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_ok(dir.path(), &["--scenario", "lost-publish-ack"]);
    let script = r#"
import json, sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
schema = f.schema_arrow
meta = {k.decode(): v.decode() for k, v in (f.metadata.metadata or {}).items()}
print(json.dumps({
    "types": {field.name: str(field.type) for field in schema},
    "version": meta.get("outbox_trace.schema_version"),
    "run": json.loads(meta["outbox_trace.run"]),
    "rows": f.metadata.num_rows,
}))
"#;
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(common::trace_path(dir.path()))
        .output()
        .expect("python3 runs (scripts/deps.sh installs it with pyarrow)");
    assert!(
        output.status.success(),
        "pyarrow could not read the trace (scripts/deps.sh installs pyarrow): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let expected = [
        ("run_id", "string"),
        ("scenario", "string"),
        ("seq", "uint64"),
        ("ts_ns", "int64"),
        ("backend", "string"),
        ("actor", "string"),
        ("incarnation", "uint32"),
        ("kind", "string"),
        ("task_id", "string"),
        ("event_id", "string"),
        ("aggregate_id", "string"),
        ("aggregate_seq", "uint64"),
        ("attempt", "uint32"),
        ("broker_seq", "uint64"),
        ("store_rev", "int64"),
        ("amount", "int64"),
        ("counter", "int64"),
        ("detail", "string"),
    ];
    for (name, ty) in expected {
        assert_eq!(seen["types"][name], ty, "column {name}");
    }
    assert_eq!(seen["version"], "1");
    assert_eq!(seen["rows"], events.len());
    assert_eq!(seen["run"]["backend"], "etcd-jetstream");
    assert_eq!(seen["run"]["protocol"], "reference");
}

#[test]
fn compose_file_is_valid() {
    let compose = concat!(env!("CARGO_MANIFEST_DIR"), "/../compose.yaml");
    let output = Command::new("docker-compose")
        .args(["-f", compose, "config", "-q"])
        .output()
        .expect("docker-compose runs (Debian package docker-compose; scripts/deps.sh installs it)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(compose).unwrap();
    for service in ["etcd:", "nats:", "redis:", "-js"] {
        assert!(text.contains(service), "compose.yaml lacks {service}");
    }
    // The `cluster` profile: three etcd members and three NATS servers.
    let output = Command::new("docker-compose")
        .args([
            "-f",
            compose,
            "--profile",
            "cluster",
            "config",
            "--services",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let services = String::from_utf8_lossy(&output.stdout);
    for member in ["etcd-1", "etcd-2", "etcd-3", "nats-1", "nats-2", "nats-3"] {
        assert!(
            services.lines().any(|s| s == member),
            "the cluster profile lacks {member}: {services}"
        );
    }
}
