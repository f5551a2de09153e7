//! The `analyzer` binary: exit codes, text and JSON output, and one clear line for every kind of
//! bad input.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::*;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use assert_cmd::Command;
use outbox_trace::Kind::*;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use predicates::prelude::*;

fn analyzer() -> Command {
    Command::cargo_bin("analyzer").expect("binary")
}

fn broken_ack() -> Vec<outbox_trace::Event> {
    let mut t = lab();
    let ack = t.remove(find(&t, Acked, Some("evt-3")));
    t.insert(find(&t, EffectCommitted, Some("evt-3")), ack);
    t
}

#[test]
fn valid_trace_exits_0_with_one_line_per_invariant() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "lab.parquet", &lab());
    let out = analyzer().arg("check").arg(&path).assert().code(0);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for id in [
        "single-effect",
        "intent-atomic",
        "mark-after-puback",
        "ack-after-commit",
        "aggregate-order",
        "counter-exact",
        "observed-agrees",
        "external-single-effect",
        "no-lost-task",
        "sources-agree",
    ] {
        assert!(
            text.contains(&format!("  {id} pass")),
            "{id} missing in\n{text}"
        );
    }
    assert!(text.contains("counts: 3 tasks, 3 publish attempts, 3 stream copies, 4 deliveries, 1 redeliveries, 1 suppressions, 3 effects, 4 ACKs"), "{text}");
    assert!(text.contains("counter 10"), "{text}");
    assert!(text.contains("verdict: valid"), "{text}");
}

#[test]
fn violation_exits_1_with_witness_and_explanation() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "broken.parquet", &broken_ack());
    let out = analyzer().arg("check").arg(&path).assert().code(1);
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("ack-after-commit FAIL: 1 violation(s)"),
        "{text}"
    );
    assert!(
        text.contains("FAIL ack-after-commit: event_id evt-3, task_id t-3"),
        "{text}"
    );
    assert!(
        text.contains("worker#0 ACKed delivery 1 of evt-3"),
        "{text}"
    );
    assert!(
        text.contains("a crash between the two would lose the task"),
        "{text}"
    );
    assert!(
        text.contains("worker#0  acked  event_id=evt-3 broker_seq=3"),
        "{text}"
    );
    assert!(text.contains("verdict: invalid"), "{text}");
}

#[test]
fn unrecovered_run_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = lab();
    let end = find(&t, RunEnd, None);
    t[end].detail = Some(r#"{"recovered":false}"#.into());
    let path = write(dir.path(), "unrecovered.parquet", &t);
    analyzer()
        .arg("check")
        .arg(&path)
        .assert()
        .code(3)
        .stdout(predicate::str::contains(
            "no-lost-task unknown: run_end.recovered is false",
        ));
}

#[test]
fn fail_wins_over_unknown_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = lab();
    t.remove(find(&t, RunEnd, None));
    let unknown = write(dir.path(), "a.parquet", &t);
    let invalid = write(dir.path(), "b.parquet", &broken_ack());
    analyzer().arg("check").arg(&unknown).assert().code(3);
    analyzer()
        .arg("check")
        .arg(&unknown)
        .arg(&invalid)
        .assert()
        .code(1);
}

#[test]
fn json_has_a_verdict_per_invariant_per_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.parquet", &lab());
    let b = write(dir.path(), "b.parquet", &broken_ack());
    let out = analyzer()
        .args(["check", "--json"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(1);
    let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(doc["format"], 1);
    assert_eq!(doc["verdict"], "invalid");
    assert_eq!(doc["files"].as_array().unwrap().len(), 2);
    let scenarios = doc["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2);
    for s in scenarios {
        assert_eq!(s["run_id"], "run-1");
        assert_eq!(s["scenario"], "lost-consumer-ack");
        assert_eq!(s["backend"], "etcd-jetstream");
        let invariants = s["invariants"].as_array().unwrap();
        assert_eq!(invariants.len(), 10);
        for i in invariants {
            assert!(["pass", "fail", "unknown"].contains(&i["verdict"].as_str().unwrap()));
            assert!(["safety", "liveness"].contains(&i["class"].as_str().unwrap()));
        }
        assert_eq!(s["counts"]["effects"], 3);
        assert_eq!(s["counts"]["counter"], 10);
    }
    assert_eq!(scenarios[0]["verdict"], "valid");
    assert_eq!(scenarios[1]["verdict"], "invalid");
    let ack = scenarios[1]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "ack-after-commit")
        .unwrap();
    assert_eq!(ack["verdict"], "fail");
    assert_eq!(ack["more"], 0);
    let v = &ack["violations"][0];
    assert_eq!(v["event_id"], "evt-3");
    assert_eq!(v["task_id"], "t-3");
    assert!(v["explanation"].as_str().unwrap().contains("ACKed"));
    let kinds: Vec<&str> = v["witness"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["delivered", "acked", "effect_committed"]);
    assert_eq!(v["witness"][1]["actor"], "worker");
    assert_eq!(v["witness"][1]["incarnation"], 0);
    assert_eq!(v["witness"][1]["broker_seq"], 3);
    assert!(
        v["witness"][1].get("amount").is_none(),
        "null fields are left out"
    );
}

#[test]
fn help_documents_exit_codes_and_usage_errors_exit_2() {
    analyzer()
        .arg("--help")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("Exit codes"));
    analyzer()
        .args(["check", "--help"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("3  nothing failed"));
    analyzer().arg("check").assert().code(2);
    analyzer().arg("bogus").assert().code(2);
    analyzer().assert().code(2);
    analyzer()
        .args(["check", "--no-such-flag", "x.parquet"])
        .assert()
        .code(2);
}

/// Runs `analyzer check path` and asserts exit 2 with one line on stderr naming the file.
fn rejects(path: &Path, reason: &str) {
    let out = analyzer().arg("check").arg(path).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let prefix = format!("analyzer: {}: ", path.display());
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert!(stderr.contains(reason), "expected `{reason}` in: {stderr}");
    assert!(out.get_output().stdout.is_empty());
}

fn lab_batch() -> RecordBatch {
    let mut t = lab();
    renumber(&mut t);
    outbox_trace::to_batch(&t).unwrap()
}

fn write_batch(path: &Path, batch: &RecordBatch, metadata: Option<Vec<KeyValue>>) {
    let props = WriterProperties::builder()
        .set_key_value_metadata(metadata)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// The lab batch with column `name` replaced by `array` of field `field`.
fn replace_column(name: &str, field: Field, array: ArrayRef) -> RecordBatch {
    let batch = lab_batch();
    let schema = batch.schema();
    let (i, _) = schema.column_with_name(name).unwrap();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns = batch.columns().to_vec();
    fields[i] = field;
    columns[i] = array;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn tmp(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

#[test]
fn not_parquet_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "notes.parquet");
    std::fs::write(&path, "run_id,seq\nrun-1,1\n").unwrap();
    rejects(&path, "not a readable Parquet file");
}

#[test]
fn truncated_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let full = write(dir.path(), "full.parquet", &lab());
    let bytes = std::fs::read(&full).unwrap();
    let path = tmp(&dir, "half.parquet");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    rejects(&path, "Parquet");
}

#[test]
fn zero_byte_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "zero.parquet");
    std::fs::write(&path, b"").unwrap();
    rejects(&path, "Parquet");
}

#[test]
fn file_without_rows_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "empty.parquet");
    let batch = lab_batch().slice(0, 0);
    write_batch(&path, &batch, None);
    rejects(&path, "no events");
}

#[test]
fn missing_column_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "no-seq.parquet");
    let batch = lab_batch();
    let keep: Vec<usize> = (0..batch.num_columns()).filter(|&i| i != 2).collect();
    write_batch(&path, &batch.project(&keep).unwrap(), None);
    rejects(&path, "required column `seq` is missing");
}

#[test]
fn wrong_type_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "seq-text.parquet");
    let n = lab_batch().num_rows();
    let seqs: StringArray = (1..=n).map(|i| Some(i.to_string())).collect();
    let batch = replace_column(
        "seq",
        Field::new("seq", DataType::Utf8, false),
        Arc::new(seqs),
    );
    write_batch(&path, &batch, None);
    rejects(&path, "column `seq` has type");
}

#[test]
fn null_in_required_column_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "null-actor.parquet");
    let n = lab_batch().num_rows();
    let actors: StringArray = (0..n)
        .map(|i| if i == 3 { None } else { Some("api") })
        .collect();
    let batch = replace_column(
        "actor",
        Field::new("actor", DataType::Utf8, true),
        Arc::new(actors),
    );
    write_batch(&path, &batch, None);
    rejects(&path, "column `actor` must not be null");
}

#[test]
fn other_schema_version_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "v2.parquet");
    let meta = vec![KeyValue::new(
        "outbox_trace.schema_version".to_string(),
        "2".to_string(),
    )];
    write_batch(&path, &lab_batch(), Some(meta));
    rejects(&path, "schema version `2` is not supported");
}

#[test]
fn duplicate_seq_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "dup.parquet");
    let mut t = lab();
    renumber(&mut t);
    t[5].seq = t[9].seq;
    let mut w = outbox_trace::TraceWriter::create(&path, None).unwrap();
    w.write(&t).unwrap();
    w.finish().unwrap();
    rejects(&path, "repeats seq 10");
}

#[test]
fn nonexistent_path_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    rejects(&tmp(&dir, "missing.parquet"), "No such file");
}

#[test]
fn file_without_version_key_is_read_as_version_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "noversion.parquet");
    write_batch(&path, &lab_batch(), None);
    analyzer()
        .arg("check")
        .arg(&path)
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "no outbox_trace.schema_version key; read as version 1",
        ));
}

#[test]
fn bad_file_among_good_ones_still_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.parquet", &lab());
    let bad = tmp(&dir, "bad.parquet");
    std::fs::write(&bad, "nope").unwrap();
    let out = analyzer()
        .arg("check")
        .arg(&good)
        .arg(&bad)
        .assert()
        .code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.parquet"), "{stderr}");
}

/// One input named twice, by the same path, another path to the same file, or `-` twice, is
/// judged as one run.
#[test]
fn one_input_named_twice_is_one_run() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/etcd_reference.parquet");
    let once = analyzer()
        .args(["check", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("again.parquet");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let twice = analyzer()
        .args(["check", "--json"])
        .arg(&file)
        .arg(&file)
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(once.status.code(), twice.status.code());
    assert_eq!(
        String::from_utf8_lossy(&once.stdout),
        String::from_utf8_lossy(&twice.stdout)
    );
    let bytes = std::fs::read(&file).unwrap();
    let piped = analyzer()
        .args(["check", "--json", "-", "-"])
        .write_stdin(bytes)
        .output()
        .unwrap();
    assert_eq!(once.status.code(), piped.status.code(), "{piped:?}");
}
