//! The recorder's own life: Ctrl-C keeps what was recorded; a killed recorder leaves readable
//! segments that the next run joins, and a temporary directory that the next run removes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn start(out: &std::path::Path) -> std::process::Child {
    start_in(out, &std::env::temp_dir())
}

/// `recorder run` with its temporary directory under `tmp`: one scenario of about ten seconds (400
/// tasks at 40 a second), so a signal sent once the first segment is sealed lands inside it, not
/// between two scenarios.
fn start_in(out: &std::path::Path, tmp: &std::path::Path) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .args([
            "run",
            "--quiet",
            "--scenario",
            "load",
            "--tasks",
            "400",
            "--rate",
            "40",
            "--out",
        ])
        .arg(out)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the journal has closed at least one segment.
fn wait_for_segment(parts: &std::path::Path) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let n = std::fs::read_dir(parts)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "parquet"))
                    .count()
            })
            .unwrap_or(0);
        if n > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no segment appeared in {}", parts.display());
}

#[test]
fn ctrl_c_stops_the_run_and_keeps_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    let child = start(&out);
    wait_for_segment(&dir.path().join("run.parquet.parts"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let trace = outbox_trace::read_trace(&out).expect("the trace is complete and readable");
    let ends: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.kind == outbox_trace::Kind::RunEnd)
        .collect();
    let last = ends.last().expect("the interrupted scenario is closed");
    let Ok(outbox_trace::Step::RunEnd(end)) = outbox_trace::Step::try_from(*last) else {
        panic!("a complete run_end: {last:?}");
    };
    assert_eq!(end.recovered, Some(false));
    assert_eq!(end.reason.as_deref(), Some("interrupted"));
    assert!(
        !dir.path().join("run.parquet.parts").exists(),
        "segments were joined"
    );
}

#[test]
fn a_killed_recorder_leaves_segments_the_next_run_joins() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    let parts = dir.path().join("run.parquet.parts");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut child = start_in(&out, &tmp);
    wait_for_segment(&parts);
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert!(!out.exists());
    let stale: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(
        stale.len(),
        1,
        "the killed run's temporary directory: {stale:?}"
    );
    // Every closed segment is a readable trace on its own.
    for entry in std::fs::read_dir(&parts).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "parquet") {
            outbox_trace::read_trace(&path).expect("segment readable");
        }
    }
    let next = assert_cmd::Command::cargo_bin("recorder")
        .unwrap()
        .args([
            "run",
            "--quiet",
            "--scenario",
            "crash-before-publish",
            "--out",
        ])
        .arg(&out)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    assert!(String::from_utf8_lossy(&next.stderr).contains("interrupted run"));
    let salvaged = outbox_trace::read_trace(&dir.path().join("run.interrupted.parquet")).unwrap();
    assert!(salvaged
        .events
        .iter()
        .any(|e| e.kind == outbox_trace::Kind::RunStart));
    assert!(!parts.exists());
    // The next run removed the killed one's temporary directory (and its own at its end).
    assert!(!stale[0].exists(), "{} removed", stale[0].display());
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
}
