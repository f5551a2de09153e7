//! `analyzer report` on the committed real recordings: the files it writes, their contents, and
//! the same bytes on a second run.

use std::path::{Path, PathBuf};

use outbox_analyzer::report::write_report;
use outbox_analyzer::views::scene::Scenes;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn report(trace: &Path, dir: &Path) -> Vec<PathBuf> {
    report_as(trace, dir, false)
}

fn report_as(trace: &Path, dir: &Path, lab: bool) -> Vec<PathBuf> {
    let traces = vec![trace.to_path_buf()];
    let scenes = Scenes::load(&traces).expect("load");
    write_report(&scenes, &traces, dir, lab).expect("report")
}

#[test]
fn the_labs_templates_are_written_only_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("etcd_reference.parquet");
    let (plain, lab) = (dir.path().join("plain"), dir.path().join("lab"));
    report_as(&trace, &plain, false);
    report_as(&trace, &lab, true);
    let plain = std::fs::read_to_string(plain.join("report.md")).unwrap();
    let lab = std::fs::read_to_string(lab.join("report.md")).unwrap();
    assert!(
        !plain.contains("to complete") && !plain.contains("## ADR"),
        "{plain}"
    );
    assert!(plain.contains("Retention, atomic scope, the shared counter: facts"));
    assert!(
        lab.contains("### Decision (to complete)") && lab.contains("## ADR"),
        "{lab}"
    );
}

#[test]
fn report_has_every_deliverable_and_is_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("etcd_reference.parquet");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let files = report(&trace, &a);
    report(&trace, &b);
    for f in &files {
        let rel = f.strip_prefix(&a).unwrap();
        assert_eq!(
            std::fs::read(f).unwrap(),
            std::fs::read(b.join(rel)).unwrap(),
            "{rel:?}"
        );
    }
    let md = std::fs::read_to_string(a.join("report.md")).unwrap();
    for needle in [
        "![chain of task-1](lost-consumer-ack/chain.svg)",
        "```mermaid\nsequenceDiagram",
        "![boundaries](lost-consumer-ack/boundaries.svg)",
        "| `single-effect` | safety | pass | 0 |",
        "AckWait (`run_start.detail.ack_wait_ms`): 2000 ms",
        "Longest redelivery delay seen:",
        "commit_conflict",
    ] {
        assert!(md.contains(needle), "report.md lacks {needle:?}");
    }
    assert!(a.join("lost-consumer-ack/chain.svg").exists());
    let lab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("lab.json")).unwrap()).unwrap();
    let lca = lab["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == "lost-consumer-ack")
        .unwrap();
    assert_eq!(lca["redeliveries"], 1);
    assert_eq!(lca["suppressions"], 1);
    assert_eq!(lca["counter"], 10);
    assert_eq!(lca["verdict"], "valid");
}

#[test]
fn split_outbox_report_names_the_split_and_the_failure() {
    let dir = tempfile::tempdir().unwrap();
    report(&fixture("etcd_split_outbox.parquet"), dir.path());
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("| `intent-atomic` | safety | **FAIL** |"),
        "{md}"
    );
    assert!(
        md.contains("NOT committed together in: crash-after-accept"),
        "{md}"
    );
}
