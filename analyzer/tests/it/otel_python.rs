//! The OpenTelemetry producer in `examples/otel-python`: a Python outbox service (API, relay and
//! worker as separate processes, on a SQLite file and a real redis-server, traced with the
//! OpenTelemetry Python SDK's file exporter), run by its supervisor, which kills the worker with
//! SIGKILL between a commit and its ACK. Its OTLP JSON Lines, read directly and imported to
//! Parquet, are judged valid; with `--bug` (no dedup check) the redelivered copy is applied twice
//! and `single-effect` fails on the event whose ACK the crash lost.
//!
//! Needs `python3`, `redis-server` and the Python packages `scripts/deps.sh` installs. Without
//! them the test fails with the supervisor's one-line reason: it never passes by skipping.

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;
use serde_json::Value;

/// The example's supervisor.
fn supervisor() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/supervisor.py")
}

/// Runs the example into `dir/spans.jsonl`; returns the spans' path and the event id whose ACK
/// the crash lost.
fn run_example(dir: &Path, bug: bool) -> (PathBuf, String) {
    let spans = dir.join("spans.jsonl");
    let mut cmd = Process::new("python3");
    cmd.arg(supervisor())
        .arg("--out")
        .arg(&spans)
        .arg("--workdir")
        .arg(dir.join("work"));
    if bug {
        cmd.arg("--bug");
    }
    let out = cmd
        .output()
        .expect("python3 runs (apt-get install python3)");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the example failed ({}); scripts/deps.sh installs what it needs:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // "killed worker#0 at after-commit-before-ack of evt-..."
    let killed = stdout
        .lines()
        .find_map(|l| l.strip_prefix("killed worker#0 at after-commit-before-ack of "))
        .unwrap_or_else(|| panic!("the supervisor killed no worker:\n{stdout}"))
        .trim()
        .to_string();
    (spans, killed)
}

/// `analyzer check --json FILE`: the exit code and the report.
fn check_json(file: &Path) -> (i32, Value) {
    let out = Command::cargo_bin("analyzer")
        .expect("binary")
        .args(["check", "--json"])
        .arg(file)
        .output()
        .expect("analyzer runs");
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check --json: {e}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().expect("exit code"), doc)
}

/// `analyzer import SPANS -o PARQUET`, required to succeed.
fn import(spans: &Path, parquet: &Path) {
    Command::cargo_bin("analyzer")
        .expect("binary")
        .arg("import")
        .arg(spans)
        .arg("-o")
        .arg(parquet)
        .assert()
        .code(0);
}

/// The one scenario of a report.
fn scenario(doc: &Value) -> &Value {
    let scenarios = doc["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 1, "{doc:#}");
    &scenarios[0]
}

/// The invariant `id` of a scenario.
fn invariant<'a>(scenario: &'a Value, id: &str) -> &'a Value {
    scenario["invariants"]
        .as_array()
        .expect("invariants")
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {scenario:#}"))
}

/// A scenario without the file it came from and its notes: what the OTLP and Parquet reports must
/// share. (The note that `seq` came from span times is the spans' own: the imported Parquet holds
/// the `seq` the import gave.)
fn judged(scenario: &Value) -> Value {
    let mut s = scenario.clone();
    let o = s.as_object_mut().expect("object");
    o.remove("file");
    o.remove("notes");
    s
}

#[test]
fn the_correct_service_is_valid_across_a_crash_between_commit_and_ack() {
    let dir = tempfile::tempdir().unwrap();
    let (spans, killed) = run_example(dir.path(), false);
    let (code, doc) = check_json(&spans);
    let s = scenario(&doc);
    assert_eq!((code, &s["verdict"]), (0, &Value::from("valid")), "{s:#}");
    for inv in s["invariants"].as_array().unwrap() {
        assert_eq!(inv["verdict"], "pass", "{inv:#}");
    }
    assert_eq!(s["backend"], "python-sqlite-redis");
    // Six tasks, six effects, one crash; the killed life's copy came back and was suppressed.
    for (figure, want) in [
        ("tasks", 6),
        ("effects", 6),
        ("crashes", 1),
        ("redeliveries", 1),
        ("suppressions", 1),
        ("results", 6),
        ("dedup_keys", 6),
        ("counter", 21),
    ] {
        assert_eq!(s[figure], want, "{figure} in {s:#}");
    }
    let notes = s["notes"].to_string();
    assert!(notes.contains("separate clocks"), "{notes}");

    // The same verdicts and figures from the imported Parquet.
    let parquet = dir.path().join("spans.parquet");
    import(&spans, &parquet);
    let (code, imported) = check_json(&parquet);
    assert_eq!(code, 0);
    assert_eq!(judged(scenario(&imported)), judged(s));

    // The text report: the stable lines.
    let text = Command::cargo_bin("analyzer")
        .expect("binary")
        .arg("check")
        .arg(&spans)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("  single-effect pass"), "{text}");
    assert!(!killed.is_empty());
}

#[test]
fn without_its_dedup_check_the_redelivered_copy_breaks_single_effect() {
    let dir = tempfile::tempdir().unwrap();
    let (spans, killed) = run_example(dir.path(), true);
    let parquet = dir.path().join("spans.parquet");
    import(&spans, &parquet);
    for file in [&spans, &parquet] {
        let (code, doc) = check_json(file);
        let s = scenario(&doc);
        assert_eq!((code, &s["verdict"]), (1, &Value::from("invalid")), "{s:#}");
        let single = invariant(s, "single-effect");
        assert_eq!(single["verdict"], "fail", "{single:#}");
        let violations = single["violations"].as_array().unwrap();
        assert_eq!(violations.len(), 1, "{single:#}");
        assert_eq!(violations[0]["event_id"], killed.as_str(), "{single:#}");
        // The crash rule does not excuse it: the killed life's crash span is there.
        assert_eq!(invariant(s, "ack-after-commit")["verdict"], "pass");
        assert_eq!(s["effects"], 7, "{s:#}");
    }
}
