//! A small chaos run: seeded SIGKILLs of the actors and restarts of the services under load. The
//! plan is in the trace, the run recovers, the real systems' ground truth shows every task applied
//! exactly once, and the analyzer finds every invariant holding.

mod common;

use outbox_analyzer::analysis::{analyse, RunVerdict};
use outbox_trace::Kind;

fn chaos(backend: &str, seed: &str) -> Vec<outbox_trace::Event> {
    chaos_with(&["--backend", backend], seed)
}

fn chaos_with(setup: &[&str], seed: &str) -> Vec<outbox_trace::Event> {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = setup
        .iter()
        .copied()
        .chain([
            "--tasks",
            "400",
            "--workers",
            "2",
            "--chaos",
            seed,
            "--chaos-window",
            "5s",
        ])
        .collect();
    let events = common::record_ok(dir.path(), &args);
    let rows = common::scenario(&events, "load");
    let start = common::run_start(common::of(&rows, Kind::RunStart)[0]);
    let plan = start.chaos.expect("the plan is recorded");
    let planned = plan["actions"]
        .as_array()
        .expect("the plan's actions")
        .len();
    assert!(planned >= 3, "{plan}");
    let injected = rows
        .iter()
        .filter(|e| {
            (e.kind == Kind::Crash && common::crash_point(e) == "chaos:sigkill")
                || e.kind == Kind::Fault
        })
        .count();
    assert!(
        injected >= 2,
        "faults were injected: {injected} of {planned}"
    );
    let end = common::run_end(common::of(&rows, Kind::RunEnd)[0]);
    assert_eq!(end.recovered, Some(true), "{end:?}");
    let truth = common::observed(&rows);
    let expected: i64 = (0..400).map(|i| (i % 9) + 1).sum();
    assert_eq!(
        truth.counter,
        Some(expected),
        "every task applied exactly once: {truth:?}"
    );
    assert_eq!(truth.results, Some(400), "{truth:?}");
    assert_eq!(truth.dedup_keys, Some(400), "{truth:?}");
    assert_eq!(truth.outbox_pending, Some(0), "{truth:?}");
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "the reference survives chaos"
    );
    events
}

#[test]
fn chaos_on_etcd_jetstream() {
    chaos("etcd-jetstream", "11");
}

#[test]
fn chaos_on_sqlite_redis_restarts_redis_on_its_append_only_file() {
    let events = chaos("sqlite-redis", "9");
    let restarted = events
        .iter()
        .filter(|e| {
            e.kind == Kind::Fault && common::fault(e).service.as_deref() == Some("redis-server")
        })
        .count();
    assert!(restarted >= 1, "redis-server was restarted under load");
}

#[test]
fn chaos_on_a_three_node_cluster_restarts_members_and_holds() {
    let events = chaos_with(&["--cluster", "3"], "8");
    let start = common::run_start(events.iter().find(|e| e.kind == Kind::RunStart).unwrap());
    let plan = start.chaos.expect("the plan is recorded");
    let actions = plan["actions"].as_array().unwrap();
    assert!(
        actions.iter().any(|a| a[1]["member"].as_u64().is_some()),
        "the plan restarts cluster members: {plan}"
    );
    let members: std::collections::BTreeSet<String> = events
        .iter()
        .filter(|e| e.kind == Kind::Fault)
        .filter_map(|e| common::fault(e).member)
        .collect();
    assert!(!members.is_empty(), "a member was restarted");
    assert!(
        members.iter().all(|m| [
            "etcd-1",
            "etcd-2",
            "etcd-3",
            "nats-server-1",
            "nats-server-2",
            "nats-server-3"
        ]
        .contains(&m.as_str())),
        "{members:?}"
    );
}
