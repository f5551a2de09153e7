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

#[test]
fn redis_stream_entry_ids_are_drawn_as_written_in_chains_witnesses_and_the_report() {
    use crate::common::{find, lab, write};
    use outbox_trace::{BrokerPosition, Kind};
    let dir = tempfile::tempdir().unwrap();
    let mut events = lab();
    for e in events.iter_mut() {
        if let Some(n) = e.broker_seq {
            e.broker_seq = Some(BrokerPosition::redis_entry(1_700_000_000_000, n).unwrap().0);
        }
    }
    // The second task's ACK comes before its commit: the ACK and its delivery are witnesses,
    // with the copy's position.
    let ack = find(&events, Kind::Acked, Some("evt-2"));
    let ack = events.remove(ack);
    let commit = find(&events, Kind::EffectCommitted, Some("evt-2"));
    events.insert(commit, ack);
    let path = write(dir.path(), "entries.parquet", &events);
    let packed = BrokerPosition::redis_entry(1_700_000_000_000, 2)
        .unwrap()
        .0
        .to_string();

    let chain = analyzer()
        .args(["chain", "--task", "t-2", "--format", "text"])
        .arg(&path)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&chain.get_output().stdout).into_owned();
    assert!(text.contains("seq 1700000000000-2"), "{text}");
    assert!(!text.contains(&packed), "{text}");

    let check = analyzer().arg("check").arg(&path).assert().code(1);
    let text = String::from_utf8_lossy(&check.get_output().stdout).into_owned();
    assert!(text.contains("1700000000000-2"), "{text}");
    assert!(!text.contains(&packed), "{text}");

    let json = analyzer()
        .args(["check", "--json"])
        .arg(&path)
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&json.get_output().stdout).into_owned();
    assert!(
        text.contains("\"broker_seq\": \"1700000000000-2\""),
        "{text}"
    );

    let html = dir.path().join("report.html");
    analyzer()
        .args(["report", "--html"])
        .arg(&html)
        .arg(&path)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("\"entry_ids\":[\"1700000000000-1\""),
        "no entry ids in the page"
    );
}
