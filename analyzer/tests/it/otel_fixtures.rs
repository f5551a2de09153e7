//! Traces written by the OpenTelemetry Python SDK (`analyzer/tests/otel/generate.py`, a tiny real
//! outbox service on SQLite; its output committed under `tests/fixtures/otel/`), judged as the
//! contract promises: thinner data gives `unknown`, never a false pass or failure.
//!
//! - only the standard messaging spans: no FAIL, and no pass resting on zero rows;
//! - a batch span processor across a SIGKILL: `unknown` with the store's and the trace's counts,
//!   not a false `no-lost-task` failure;
//! - a stock per item (`outbox.counter_key`): valid; with one item's step broken, `counter-exact`
//!   fails on that item alone;
//! - a RabbitMQ service traced with standard OpenTelemetry only (HTTP, database and AMQP spans, no
//!   position, no delivery count): exit 3, no FAIL, no pass resting on zero rows,
//!   the spans that mapped to no kind counted and named, and what to add said once.
//!
//! The generator must still run: its fresh output gets the same verdicts. Without `python3` and
//! the OpenTelemetry packages (`scripts/deps.sh`) the test fails with the generator's reason.

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;
use serde_json::Value;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otel")
}

/// `analyzer check --json FILE`: the exit code and the only scenario's invariants by id.
fn check(file: &Path) -> (i32, Vec<(String, String, String)>, Value) {
    let out = Command::cargo_bin("analyzer")
        .unwrap()
        .args(["check", "--json"])
        .arg(file)
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let scenarios = doc["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1, "{}", file.display());
    let invariants = scenarios[0]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_string();
            (s("id"), s("verdict"), s("reason"))
        })
        .collect();
    (out.status.code().unwrap(), invariants, doc)
}

/// The passes that mean "nothing of this kind happened", with their notes.
const NOTES: &[(&str, &str)] = &[
    ("aggregate-order", "no aggregate information"),
    ("external-single-effect", "no external calls recorded"),
    ("sources-agree", "one source"),
];

fn messaging_spans_get_no_false_verdict(dir: &Path) {
    let (code, invariants, _) = check(&dir.join("messaging.otlp.jsonl"));
    assert_eq!(code, 3, "{invariants:?}");
    for (id, verdict, reason) in &invariants {
        assert_ne!(verdict, "fail", "{id}: {reason}");
        if verdict == "pass" {
            assert!(
                NOTES.contains(&(id.as_str(), reason.as_str())),
                "{id} passes on rows it does not have: {reason:?}"
            );
        }
    }
    let reason = |want: &str| {
        invariants
            .iter()
            .find(|(id, _, _)| id == want)
            .map(|(_, _, r)| r.clone())
            .unwrap()
    };
    assert_eq!(
        reason("single-effect"),
        "the trace records no effect_committed rows"
    );
    assert_eq!(
        reason("ack-after-commit"),
        "the trace records no effect_committed or duplicate_suppressed rows"
    );
    // The text report says the same, on the line scripts read.
    let out = Command::cargo_bin("analyzer")
        .unwrap()
        .arg("check")
        .arg(dir.join("messaging.otlp.jsonl"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\n  single-effect unknown: the trace records no effect_committed rows\n"),
        "{text}"
    );
}

fn batch_kill_is_unknown_with_the_counts(dir: &Path) {
    let (code, invariants, doc) = check(&dir.join("batch-kill.otlp.jsonl"));
    assert_eq!(code, 3, "{invariants:?}");
    for (id, verdict, reason) in &invariants {
        assert_ne!(verdict, "fail", "{id}: {reason}");
    }
    let effects = doc["scenarios"][0]["effects"].as_i64().unwrap();
    assert!(effects < 40, "the kill lost no span: {effects} effects");
    let (_, verdict, reason) = invariants
        .iter()
        .find(|(id, _, _)| id == "no-lost-task")
        .unwrap();
    assert_eq!(verdict, "unknown");
    assert!(
        reason.starts_with("the store holds 40 completed tasks, the trace ")
            && reason.ends_with("tasks with an effect: the trace lacks rows (a step never reported, or a span never exported); see what to turn off"),
        "{reason}"
    );
}

fn counter_per_key_is_checked_per_key(dir: &Path) {
    let (code, invariants, _) = check(&dir.join("counter-per-key.otlp.jsonl"));
    assert_eq!(code, 0, "{invariants:?}");
    let (code, invariants, doc) = check(&dir.join("counter-per-key-broken.otlp.jsonl"));
    assert_eq!(code, 1, "{invariants:?}");
    for (id, verdict, reason) in &invariants {
        let want = if id == "counter-exact" {
            "fail"
        } else {
            "pass"
        };
        if id == "observed-agrees" || NOTES.iter().any(|(n, _)| n == id) {
            continue;
        }
        assert_eq!(verdict, want, "{id}: {reason}");
    }
    let counter = doc["scenarios"][0]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "counter-exact")
        .unwrap();
    // Every violation is about the item the broken build steps wrong, and says so.
    for v in counter["violations"].as_array().unwrap() {
        let text = v["explanation"].as_str().unwrap();
        assert!(text.contains("pear"), "{text}");
        assert!(!text.contains("apple") && !text.contains("plum"), "{text}");
    }
}

fn rabbitmq_with_standard_spans_only_is_unknown_and_says_why(dir: &Path) {
    let file = dir.join("rabbitmq.otlp.jsonl");
    let (code, invariants, doc) = check(&file);
    assert_eq!(code, 3, "{invariants:?}");
    for (id, verdict, reason) in &invariants {
        assert_ne!(verdict, "fail", "{id}: {reason}");
        if verdict == "pass" {
            assert!(
                NOTES.contains(&(id.as_str(), reason.as_str())),
                "{id} passes on rows it does not have: {reason:?}"
            );
        }
    }
    let (_, _, reason) = invariants
        .iter()
        .find(|(id, _, _)| id == "single-effect")
        .unwrap();
    assert!(
        reason.contains("mapped to no kind") && reason.contains("POST /orders"),
        "{reason}"
    );
    // The RabbitMQ messaging spans map without positions or counts, the flag as a redelivery.
    let s = &doc["scenarios"][0];
    assert_eq!(s["redeliveries"].as_i64(), Some(1), "{s}");
    let out = Command::cargo_bin("analyzer")
        .unwrap()
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("spans were lost"), "{text}");
    let add = text.split("what to add").nth(1).expect("a closing block");
    assert_eq!(text.matches("what to add").count(), 1, "{text}");
    assert!(add.contains("`outbox.kind = effect_committed`"), "{text}");
}

#[test]
fn the_committed_sdk_traces_get_honest_verdicts() {
    let dir = fixtures();
    rabbitmq_with_standard_spans_only_is_unknown_and_says_why(&dir);
    messaging_spans_get_no_false_verdict(&dir);
    batch_kill_is_unknown_with_the_counts(&dir);
    counter_per_key_is_checked_per_key(&dir);
}

#[test]
fn the_generator_still_runs_and_its_output_gets_the_same_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/otel/generate.py");
    let out = Process::new("python3")
        .arg(script)
        .arg(dir.path())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "the generator failed ({}); scripts/deps.sh installs what it needs: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    messaging_spans_get_no_false_verdict(dir.path());
    rabbitmq_with_standard_spans_only_is_unknown_and_says_why(dir.path());
    batch_kill_is_unknown_with_the_counts(dir.path());
    counter_per_key_is_checked_per_key(dir.path());
}
