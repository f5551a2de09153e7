//! The drawing, report and comparison commands through the real binary: outputs and exit codes.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::str::contains;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn analyzer() -> Command {
    Command::cargo_bin("analyzer").unwrap()
}

#[test]
fn chain_writes_svg_png_and_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("etcd_reference.parquet");
    for (name, magic) in [("c.svg", &b"<svg"[..]), ("c.png", &b"\x89PNG"[..])] {
        let out = dir.path().join(name);
        analyzer()
            .args([
                "chain",
                "--scenario",
                "lost-consumer-ack",
                "--task",
                "task-1",
                "-o",
            ])
            .arg(&out)
            .arg(&trace)
            .assert()
            .success();
        assert!(std::fs::read(&out).unwrap().starts_with(magic), "{name}");
    }
    analyzer()
        .args([
            "chain",
            "--scenario",
            "external-effect",
            "--format",
            "mermaid",
        ])
        .arg(&trace)
        .assert()
        .success()
        .stdout(contains("sequenceDiagram").and(contains("participant receiver")));
}

#[test]
fn chain_errors_have_their_exit_codes() {
    let trace = fixture("etcd_reference.parquet");
    analyzer()
        .args(["chain", "--scenario", "lost-consumer-ack", "--task", "nope"])
        .arg(&trace)
        .assert()
        .code(4)
        .stderr(contains("no row carries task nope"));
    analyzer()
        .args(["chain", "--task", "task-1"])
        .arg(&trace)
        .assert()
        .code(4)
        .stderr(contains("choose one with --scenario"));
    analyzer()
        .args(["chain", "--violation", "1"])
        .arg(&trace)
        .assert()
        .code(4)
        .stderr(contains("found 0 violation"));
    analyzer()
        .args(["chain", "--format", "png"])
        .arg(&trace)
        .assert()
        .code(2)
        .stderr(contains("PNG output needs a file"));
}

#[test]
fn violation_chain_of_a_broken_recording() {
    analyzer()
        .args(["chain", "--violation", "1", "--format", "text"])
        .arg(fixture("etcd_split_outbox.parquet"))
        .assert()
        .success()
        .stdout(contains("violation 1: intent-atomic").and(contains("* seq")));
}

#[test]
fn diff_exits_1_on_divergence_and_compare_4_when_nothing_is_shared() {
    let (a, b) = (
        fixture("etcd_reference.parquet"),
        fixture("etcd_split_outbox.parquet"),
    );
    analyzer()
        .args(["diff", "--scenario", "crash-after-accept"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(1)
        .stdout(contains("first divergence"));
    analyzer()
        .args(["compare", "--scenario", "no-such"])
        .arg(&a)
        .arg(&b)
        .assert()
        .code(4);
    analyzer()
        .args(["compare", "--json"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stdout(contains("\"not_shared\""));
}

use predicates::prelude::PredicateBooleanExt;
