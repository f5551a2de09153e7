//! Every broken protocol variant, recorded for real, is caught by the analyzer with the invariant it
//! breaks; the reference passes everything.

mod common;

use outbox_analyzer::analysis::{analyse, Report, RunVerdict};
use outbox_analyzer::check::Verdict;

fn check(dir: &std::path::Path) -> Report {
    analyse(&[common::trace_path(dir)]).expect("the trace keeps the contract")
}

fn scenario_name(report: &Report, history: usize) -> &str {
    report
        .loaded
        .names
        .name(report.loaded.histories[history].scenario)
}

/// Ids of the invariants that failed in `scenario`.
fn failed(report: &Report, scenario: &str) -> Vec<&'static str> {
    let s = report
        .scenarios
        .iter()
        .find(|s| scenario_name(report, s.history) == scenario)
        .unwrap_or_else(|| panic!("scenario {scenario} checked"));
    s.outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect()
}

fn caught(protocol: &str, scenario: &str, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    common::record_ok(
        dir.path(),
        &["--protocol", protocol, "--scenario", scenario],
    );
    let report = check(dir.path());
    assert_eq!(
        report.verdict,
        RunVerdict::Invalid,
        "{protocol} in {scenario} must be caught"
    );
    let failed = failed(&report, scenario);
    for id in expected {
        assert!(
            failed.contains(id),
            "{protocol}: expected {id} to fail, failed: {failed:?}"
        );
    }
}

#[test]
fn the_reference_passes_every_invariant_in_every_scenario() {
    let dir = tempfile::tempdir().unwrap();
    common::record_ok(dir.path(), &["--scenario", "all"]);
    let report = check(dir.path());
    assert_eq!(report.scenarios.len(), 5);
    for s in &report.scenarios {
        for o in &s.outcomes {
            assert_eq!(
                o.verdict,
                Verdict::Pass,
                "{} in {}",
                o.invariant.id(),
                scenario_name(&report, s.history)
            );
        }
    }
    assert_eq!(report.verdict, RunVerdict::Valid);
}

#[test]
fn ack_before_commit_is_caught() {
    caught(
        "ack-before-commit",
        "lost-consumer-ack",
        &["ack-after-commit", "no-lost-task"],
    );
}

#[test]
fn no_dedup_is_caught() {
    caught(
        "no-dedup",
        "lost-publish-ack",
        &["single-effect", "observed-agrees"],
    );
    caught("no-dedup", "lost-consumer-ack", &["single-effect"]);
}

#[test]
fn split_outbox_is_caught() {
    caught(
        "split-outbox",
        "crash-after-accept",
        &["intent-atomic", "no-lost-task"],
    );
}

#[test]
fn mark_before_publish_is_caught() {
    caught(
        "mark-before-publish",
        "crash-before-publish",
        &["mark-after-puback", "no-lost-task"],
    );
}

#[test]
fn unguarded_counter_is_caught() {
    caught(
        "unguarded-counter",
        "concurrent-workers",
        &["counter-exact"],
    );
}

#[test]
fn dedup_expiry_is_caught() {
    caught("dedup-expiry", "lost-consumer-ack", &["single-effect"]);
}

#[test]
fn broker_dedup_is_caught() {
    caught("broker-dedup", "lost-consumer-ack", &["single-effect"]);
}
