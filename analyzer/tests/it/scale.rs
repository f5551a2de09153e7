//! Every view on a trace of 160,000 events, generated here: each must finish and say something
//! true of the trace. Nothing is timed (the benchmark, `scripts/bench-check.sh`, measures speed);
//! a view that scanned the trace once per task would make this test take hours instead of
//! seconds.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

const ROWS: u64 = 160_000;

fn trace(dir: &Path) -> PathBuf {
    let path = dir.join("large.parquet");
    let (rows, tasks) = outbox_analyzer::model::synth::write(&path, ROWS).expect("write");
    assert!(
        rows >= 150_000 && tasks > 10_000,
        "{rows} rows, {tasks} tasks"
    );
    path
}

fn analyzer(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::cargo_bin("analyzer")
        .expect("binary")
        .args(args)
        .output()
        .expect("run");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn every_view_handles_a_large_trace() {
    let dir = tempfile::tempdir().unwrap();
    let path = trace(dir.path());
    let file = path.to_str().unwrap();

    let (code, text) = analyzer(&["check", file]);
    assert_eq!(code, Some(0), "{text}");

    // The most eventful task is one whose worker crashed between commit and ACK.
    let (code, text) = analyzer(&["chain", file]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("after-commit-before-ack"), "{text}");

    let (code, text) = analyzer(&["chain", file, "--task", "t-15000"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("t-15000") && text.contains("redeliver"),
        "{text}"
    );

    let (code, text) = analyzer(&["boundaries", file]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("task and outbox record committed together"),
        "{text}"
    );

    let svg = dir.path().join("timeline.svg");
    let (code, text) = analyzer(&["timeline", file, "-o", svg.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("crash"));

    let report = dir.path().join("report");
    let (code, text) = analyzer(&["report", file, "-o", report.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{text}");
    let lab = std::fs::read_to_string(report.join("lab.json")).unwrap();
    let lab: serde_json::Value = serde_json::from_str(&lab).unwrap();
    assert_eq!(lab["scenarios"][0]["verdict"], "valid");
    assert!(lab["scenarios"][0]["effects"].as_u64().unwrap() > 10_000);

    let (code, text) = analyzer(&["compare", file, file]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("redeliveries"), "{text}");

    let (code, text) = analyzer(&["diff", file, file]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("no divergence"), "{text}");
}

/// A check that reads for more than a second shows a progress line on a terminal (here a
/// pseudo-terminal that `script` opens), and none off a terminal or with `--quiet`.
#[test]
fn a_long_check_shows_its_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("larger.parquet");
    outbox_analyzer::model::synth::write(&path, 3_000_000).expect("write");
    let binary = assert_cmd::cargo::cargo_bin("analyzer");
    let on_terminal = |quiet: &str| {
        let command = format!("{} check {} {quiet}", binary.display(), path.display());
        let out = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = on_terminal("");
    assert!(
        text.contains("analyzer: reading larger.parquet: ") && text.contains("rows), about"),
        "{text}"
    );
    assert!(text.contains("verdict: valid"), "{text}");
    assert!(!on_terminal("--quiet").contains("analyzer: reading"));
    let (code, piped) = analyzer(&["check", path.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(!piped.contains("analyzer: reading"), "{piped}");
}
