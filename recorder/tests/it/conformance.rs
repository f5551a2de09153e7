//! One test body, every backend: the scenarios the backends share, the reference protocol and the
//! broken variants, recorded for real and checked by the analyzer. A difference between backends
//! here is a difference between the systems, not between two implementations of the protocol.

use crate::common;

use outbox_analyzer::check::Verdict;
use outbox_analyzer::check::{analyse, Report, RunVerdict};
use outbox_trace::{Event, Kind};

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

/// Records `protocol` in `scenario` on `backend`; the analyzer must fail each of `expected`.
fn caught(backend: &str, protocol: &str, scenario: &str, expected: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    common::record_ok(
        dir.path(),
        &[
            "--backend",
            backend,
            "--protocol",
            protocol,
            "--scenario",
            scenario,
        ],
    );
    let report = check(dir.path());
    assert_eq!(
        report.verdict,
        RunVerdict::Invalid,
        "{backend}: {protocol} in {scenario} must be caught"
    );
    let failed = failed(&report, scenario);
    for id in expected {
        assert!(
            failed.contains(id),
            "{backend}: {protocol}: expected {id} to fail, failed: {failed:?}"
        );
    }
}

fn shared_scenarios_pass(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = [
        "crash-before-publish",
        "relay-crash",
        "lost-publish-ack",
        "lost-consumer-ack",
        "concurrent-workers",
    ];
    let mut args = vec!["--backend", backend];
    for s in &scenarios {
        args.extend(["--scenario", s]);
    }
    let events = common::record_ok(dir.path(), &args);
    let report = check(dir.path());
    assert_eq!(report.scenarios.len(), scenarios.len());
    for s in &report.scenarios {
        for o in &s.outcomes {
            assert_eq!(
                o.verdict,
                Verdict::Pass,
                "{backend}: {} in {}",
                o.invariant.id(),
                scenario_name(&report, s.history)
            );
        }
    }
    for name in scenarios {
        let rows = common::scenario(&events, name);
        assert_eq!(
            common::observed(&rows).counter,
            Some(10.into()),
            "{backend} {name}"
        );
        assert_eq!(common::observed(&rows).results, Some(3), "{backend} {name}");
    }
    relay_crash_publishes_twice_and_applies_once(&common::scenario(&events, "relay-crash"));
    lost_consumer_ack_is_redelivered_and_suppressed(&common::scenario(
        &events,
        "lost-consumer-ack",
    ));
}

fn relay_crash_publishes_twice_and_applies_once(rows: &[&Event]) {
    let crash = common::position(rows, 0, |e| e.kind == Kind::Crash && e.actor == "relay")
        .expect("relay crash");
    assert_eq!(
        common::crash_point(rows[crash]),
        "relay:between-publish-and-mark"
    );
    let id = rows[crash].event_id.clone().unwrap();
    let same = |e: &Event| e.event_id.as_ref() == Some(&id);
    let acked: Vec<_> = rows
        .iter()
        .filter(|e| e.kind == Kind::PublishAcked && same(e))
        .collect();
    assert_eq!(
        acked.len(),
        2,
        "published by the crashed life and by the next"
    );
    assert_ne!(acked[0].incarnation, acked[1].incarnation);
    assert_ne!(
        acked[0].broker_seq, acked[1].broker_seq,
        "two copies on the broker"
    );
    assert_eq!(
        rows.iter()
            .filter(|e| e.kind == Kind::OutboxMarked && same(e))
            .count(),
        1
    );
    assert_eq!(
        rows.iter()
            .filter(|e| e.kind == Kind::EffectCommitted && same(e))
            .count(),
        1
    );
    assert_eq!(
        rows.iter()
            .filter(|e| e.kind == Kind::DuplicateSuppressed && same(e))
            .count(),
        1
    );
}

fn lost_consumer_ack_is_redelivered_and_suppressed(rows: &[&Event]) {
    let crash = common::position(rows, 0, |e| e.kind == Kind::Crash && e.actor == "worker")
        .expect("worker crash");
    let id = rows[crash].event_id.clone().unwrap();
    let same = |e: &Event| e.event_id.as_ref() == Some(&id);
    let redelivered = common::position(rows, crash, |e| e.kind == Kind::Redelivered && same(e))
        .expect("redelivery");
    assert_eq!(rows[redelivered].attempt, Some(2));
    let suppressed = common::position(rows, redelivered, |e| {
        e.kind == Kind::DuplicateSuppressed && same(e)
    })
    .unwrap();
    let acked = common::position(rows, suppressed, |e| e.kind == Kind::Acked && same(e)).unwrap();
    assert!(rows[acked].incarnation > rows[crash].incarnation);
}

/// A worker that dies between its commit and its report: the observer finds the commit in the
/// store (from the dedup key it wrote) and records it, so the trace stays complete and valid.
fn unreported_commit_is_recorded_from_the_store(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_ok(
        dir.path(),
        &["--backend", backend, "--scenario", "unreported-commit"],
    );
    let rows = common::scenario(&events, "unreported-commit");
    let crash = common::position(&rows, 0, |e| e.kind == Kind::Crash && e.actor == "worker")
        .expect("worker crash");
    assert_eq!(
        common::crash_point(rows[crash]),
        "worker:before-reporting-commit"
    );
    let id = rows[crash].event_id.clone();
    let commits: Vec<_> = rows
        .iter()
        .filter(|e| e.kind == Kind::EffectCommitted && e.event_id == id)
        .collect();
    assert_eq!(commits.len(), 1, "one commit for the crashed event");
    assert_eq!(commits[0].actor, "observer");
    assert!(common::note(commits[0]).seen_in_store());
    // The redelivery's suppression names the same commit.
    let suppressed = rows
        .iter()
        .find(|e| e.kind == Kind::DuplicateSuppressed && e.event_id == id)
        .expect("suppression");
    assert_eq!(common::note(suppressed).committed_rev, commits[0].store_rev);
    let report = check(dir.path());
    assert_eq!(report.verdict, RunVerdict::Valid);
}

macro_rules! conformance {
    ($($module:ident => $backend:literal),+ $(,)?) => {$(
        mod $module {
            use super::*;

            #[test]
            fn shared_scenarios_pass_every_invariant() {
                shared_scenarios_pass($backend);
            }

            #[test]
            fn unreported_commit_is_recorded() {
                unreported_commit_is_recorded_from_the_store($backend);
            }

            #[test]
            fn ack_before_commit_is_caught() {
                caught($backend, "ack-before-commit", "lost-consumer-ack", &["ack-after-commit", "no-lost-task"]);
            }

            #[test]
            fn no_dedup_is_caught() {
                caught($backend, "no-dedup", "lost-publish-ack", &["single-effect", "observed-agrees"]);
                caught($backend, "no-dedup", "lost-consumer-ack", &["single-effect"]);
            }

            #[test]
            fn split_outbox_is_caught() {
                caught($backend, "split-outbox", "crash-after-accept", &["intent-atomic", "no-lost-task"]);
            }

            #[test]
            fn mark_before_publish_is_caught() {
                caught($backend, "mark-before-publish", "crash-before-publish", &["mark-after-puback", "no-lost-task"]);
            }

            #[test]
            fn unguarded_counter_is_caught() {
                caught($backend, "unguarded-counter", "concurrent-workers", &["counter-exact"]);
            }

            #[test]
            fn dedup_expiry_is_caught() {
                caught($backend, "dedup-expiry", "lost-consumer-ack", &["single-effect"]);
            }

            #[test]
            fn broker_dedup_is_caught() {
                caught($backend, "broker-dedup", "lost-consumer-ack", &["single-effect"]);
            }
        }
    )+};
}

conformance! {
    etcd_jetstream => "etcd-jetstream",
    sqlite_redis => "sqlite-redis",
}
