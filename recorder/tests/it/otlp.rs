//! `recorder run --otlp FILE`: the same run as OpenTelemetry spans (OTLP JSON Lines). One recorded
//! run, with a broken protocol so that some verdicts fail, checked from its Parquet file and from
//! its spans: the same verdicts, the same violations and witnesses, the same figures.

use crate::common;

use std::path::{Path, PathBuf};

use outbox_analyzer::check::analyse;
use outbox_analyzer::explain::json;
use serde_json::Value;

/// `analyzer check --json` of one file, as a value.
fn check_json(path: &Path) -> Value {
    let report = analyse(&[path.to_path_buf()]).expect("the file reads");
    let mut out = Vec::new();
    json::write(&report, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

/// The scenarios of a report without the file they came from, by name.
fn judged(doc: &Value) -> Vec<(String, Value)> {
    let mut scenarios: Vec<(String, Value)> = doc["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .map(|s| {
            let mut s = s.clone();
            s.as_object_mut().unwrap().remove("file");
            (s["scenario"].as_str().unwrap().to_string(), s)
        })
        .collect();
    scenarios.sort_by(|a, b| a.0.cmp(&b.0));
    scenarios
}

#[test]
fn parquet_and_otlp_of_one_run_give_the_same_verdicts_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let otlp: PathBuf = dir.path().join("run.otlp.jsonl");
    let otlp_arg = otlp.to_str().unwrap();
    let events = common::record_ok(
        dir.path(),
        &[
            "--backend",
            "sqlite-redis",
            "--protocol",
            "no-dedup",
            "--scenario",
            "lost-consumer-ack",
            "--scenario",
            "crash-before-publish",
            "--otlp",
            otlp_arg,
        ],
    );

    // One span per row, each with outbox.seq; the seqs are the rows'.
    let mut seqs = Vec::new();
    for line in std::fs::read_to_string(&otlp).unwrap().lines() {
        let data: Value = serde_json::from_str(line).expect("one TracesData per line");
        for rs in data["resourceSpans"].as_array().unwrap() {
            for span in rs["scopeSpans"][0]["spans"].as_array().unwrap() {
                let seq = span["attributes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|kv| kv["key"] == "outbox.seq")
                    .unwrap_or_else(|| panic!("a span without outbox.seq: {span}"));
                seqs.push(
                    seq["value"]["intValue"]
                        .as_str()
                        .unwrap()
                        .parse::<u64>()
                        .unwrap(),
                );
            }
        }
    }
    let mut want: Vec<u64> = events.iter().map(|e| e.seq).collect();
    seqs.sort_unstable();
    want.sort_unstable();
    assert_eq!(seqs, want);

    let from_parquet = check_json(&common::trace_path(dir.path()));
    let from_otlp = check_json(&otlp);
    assert_eq!(from_parquet["verdict"], "invalid", "no-dedup is caught");
    assert_eq!(from_otlp["verdict"], from_parquet["verdict"]);
    let (a, b) = (judged(&from_parquet), judged(&from_otlp));
    assert_eq!(a.len(), 2);
    for ((name, parquet), (_, spans)) in a.iter().zip(&b) {
        assert_eq!(parquet, spans, "scenario {name}");
    }
    // Not a comparison of two empty reports: a violation with its witnesses is among them.
    let fails = from_otlp
        .to_string()
        .matches("\"verdict\":\"fail\"")
        .count();
    assert!(fails >= 1, "{from_otlp:#}");
}

#[test]
fn otlp_and_out_must_be_two_files() {
    let dir = tempfile::tempdir().unwrap();
    let same = common::trace_path(dir.path());
    let output = common::record(dir.path(), &["--otlp", same.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("--otlp must name another file"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
