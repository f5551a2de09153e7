//! The recordings committed under `traces/examples/` say what `traces/README.md` says they say.

use assert_cmd::Command;

fn check(file: &str) -> i32 {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../traces/examples/").to_string() + file;
    Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", &path])
        .output()
        .unwrap()
        .status
        .code()
        .unwrap()
}

#[test]
fn the_reference_example_is_valid() {
    assert_eq!(check("reference.parquet"), 0);
}

#[test]
fn the_broken_example_is_invalid() {
    assert_eq!(check("ack-before-commit.parquet"), 1);
}

#[test]
fn the_sqlite_example_fails_only_its_dual_write() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../traces/examples/sqlite-redis.parquet"
    );
    let output = Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", "--json", path])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for scenario in report["scenarios"].as_array().unwrap() {
        let expected = if scenario["scenario"] == "dual-write" {
            "invalid"
        } else {
            "valid"
        };
        assert_eq!(scenario["verdict"], expected, "{}", scenario["scenario"]);
    }
}

/// Every file under `dir`, by its path from `dir`.
fn files_under(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut found = std::collections::BTreeMap::new();
    let mut next = vec![dir.to_path_buf()];
    while let Some(at) = next.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                next.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                found.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    found
}

/// The reports committed beside the recordings are what `analyzer report` writes of them today:
/// written again and compared, file by file.
#[test]
fn the_committed_reports_are_what_the_analyzer_writes_today() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["reference", "ack-before-commit", "sqlite-redis"] {
        let out = tempfile::tempdir().unwrap();
        Command::cargo_bin("analyzer")
            .unwrap()
            .current_dir(&root)
            .args(["report", &format!("traces/examples/{name}.parquet"), "-o"])
            .arg(out.path())
            .output()
            .unwrap();
        let committed = files_under(&root.join(format!("traces/examples/{name}-report")));
        let written = files_under(out.path());
        let again = format!(
            "write it again: analyzer report traces/examples/{name}.parquet -o traces/examples/{name}-report"
        );
        assert_eq!(
            committed.keys().collect::<Vec<_>>(),
            written.keys().collect::<Vec<_>>(),
            "{again}"
        );
        for (path, bytes) in &written {
            assert!(
                committed[path] == *bytes,
                "{} differs; {again}",
                path.display()
            );
        }
    }
}
