//! A small chaos run: a seeded swarm of crash windows, and kills of the actors and restarts of
//! the services armed on the steps the actors report, under load. The plan is in the trace, its
//! windows and its step faults fire, the run recovers, the real systems' ground truth shows every
//! task applied exactly once, every task in the store has its acceptance in the trace, and the analyzer finds
//! every invariant holding. A scripted API crash between a create's commit and its report shows
//! the retried create reporting the original transaction.

use crate::common;

use std::collections::BTreeMap;

use outbox_analyzer::check::{analyse, RunVerdict};
use outbox_trace::{Kind, Step};

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
    assert!(plan.get("actions").is_none(), "nothing is timed: {plan}");
    let end = common::run_end(common::of(&rows, Kind::RunEnd)[0]);
    let armed = end.chaos.as_ref().expect("what the draw armed").armed.len();
    assert!(armed >= 3, "{end:?}");
    let injected = rows
        .iter()
        .filter(|e| {
            (e.kind == Kind::Crash && common::crash_point(e).contains(":after-"))
                || e.kind == Kind::Fault
        })
        .count();
    assert!(injected >= 2, "faults were injected: {injected} of {armed}");
    // The swarm's windows fired, each as a crash naming its point.
    let windows: Vec<&str> = plan["windows"]
        .as_array()
        .expect("the plan's windows")
        .iter()
        .filter_map(|w| w["point"].as_str())
        .collect();
    assert!(windows.len() >= 3, "{plan}");
    let fired = rows
        .iter()
        .filter(|e| e.kind == Kind::Crash && windows.contains(&common::crash_point(e).as_str()))
        .count();
    assert!(fired >= 1, "the armed windows fired: {plan}");
    assert_eq!(end.recovered, Some(true), "{end:?}");
    let truth = common::observed(&rows);
    let expected: i64 = (0..400).map(|i| (i % 9) + 1).sum();
    assert_eq!(
        truth.counter,
        Some(expected.into()),
        "every task applied exactly once: {truth:?}"
    );
    assert_eq!(truth.results, Some(400), "{truth:?}");
    assert_eq!(truth.tasks_done, Some(400), "no task lost: {truth:?}");
    assert_eq!(truth.dedup_keys, Some(400), "{truth:?}");
    assert_eq!(truth.outbox_pending, Some(0), "{truth:?}");
    creates_complete(&rows);
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "the reference survives chaos"
    );
    events
}

/// Every task and outbox record in the store has its acceptance in the trace: the distinct
/// `task_accepted` tasks are `observed.tasks`, the distinct `intent_recorded` events are
/// `outbox_published + outbox_pending`, and each acceptance and its intent name one transaction.
fn creates_complete(rows: &[&outbox_trace::Event]) {
    let truth = common::observed(rows);
    let accepted: BTreeMap<&str, i64> = common::of(rows, Kind::TaskAccepted)
        .iter()
        .map(|e| (e.task_id.as_deref().unwrap(), e.store_rev.unwrap()))
        .collect();
    let intents: BTreeMap<&str, i64> = common::of(rows, Kind::IntentRecorded)
        .iter()
        .map(|e| (e.event_id.as_deref().unwrap(), e.store_rev.unwrap()))
        .collect();
    assert_eq!(Some(accepted.len() as i64), truth.tasks, "{truth:?}");
    let (published, pending) = (truth.outbox_published, truth.outbox_pending);
    assert_eq!(
        Some(intents.len() as i64),
        published.zip(pending).map(|(a, b)| a + b),
        "{truth:?}"
    );
    for (task, rev) in &accepted {
        assert_eq!(intents.get(format!("evt-{task}").as_str()), Some(rev));
    }
}

/// Creates whose answer never came, for every API life the draw kills (seed 3: after its 165th
/// acceptance).
fn api_killed_mid_flight(backend: &str) {
    let events = chaos_with(&["--backend", backend, "--rate", "150"], "3");
    let rows = common::scenario(&events, "load");
    let killed: Vec<u32> = rows
        .iter()
        .filter(|e| {
            e.actor == "api"
                && e.kind == Kind::Crash
                && common::crash_point(e) == "api:after-task_accepted"
        })
        .map(|e| e.incarnation)
        .collect();
    assert!(!killed.is_empty(), "the draw killed the API");
    let later = common::of(&rows, Kind::TaskAccepted)
        .iter()
        .filter(|e| e.actor == "api" && e.incarnation > killed[0])
        .count();
    assert!(later > 0, "a later API life went on creating");
}

/// The API commits a create and dies before reporting it: its next life retries with the same
/// idempotency key, and the answer names the original transaction, which the API reports itself.
fn unreported_create(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_ok(
        dir.path(),
        &["--backend", backend, "--scenario", "unreported-create"],
    );
    let rows = common::scenario(&events, "unreported-create");
    let crash = rows
        .iter()
        .find(|e| e.actor == "api" && e.kind == Kind::Crash)
        .expect("the API's crash");
    let Step::Crash { crash: died, .. } = common::step(crash) else {
        unreachable!()
    };
    assert_eq!(died.point, "api:before-reporting-create");
    assert_eq!(crash.incarnation, 0);
    let committed = died.committed_rev.expect("the crash names the commit");
    let task = crash.task_id.clone();
    let accepted = common::of(&rows, Kind::TaskAccepted);
    let retried: Vec<_> = accepted.iter().filter(|e| e.task_id == task).collect();
    assert_eq!(retried.len(), 1, "one acceptance of the crashed task");
    assert_eq!(
        (retried[0].actor.as_str(), retried[0].incarnation),
        ("api", 1)
    );
    assert_eq!(
        retried[0].store_rev,
        Some(committed),
        "the retry reports the original transaction"
    );
    let intent: Vec<_> = common::of(&rows, Kind::IntentRecorded)
        .into_iter()
        .filter(|e| e.event_id == crash.event_id)
        .collect();
    assert_eq!(intent.len(), 1);
    assert_eq!(
        (intent[0].actor.as_str(), intent[0].store_rev),
        ("api", Some(committed))
    );
    assert!(
        rows.iter()
            .all(|e| e.actor != "observer" || e.kind == Kind::Observed),
        "nothing left for the observer to fill"
    );
    assert_eq!(accepted.len(), 3);
    creates_complete(&rows);
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(report.verdict, RunVerdict::Valid);
}

/// The API reports a task and dies before reporting its outbox record: the task is answered, so
/// no retry reports the record; the observer records it from the store, with the task's `store_rev`.
fn unreported_intent(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_ok(
        dir.path(),
        &["--backend", backend, "--scenario", "unreported-intent"],
    );
    let rows = common::scenario(&events, "unreported-intent");
    let crash = rows
        .iter()
        .find(|e| e.actor == "api" && e.kind == Kind::Crash)
        .expect("the API's crash");
    assert_eq!(common::crash_point(crash), "api:before-reporting-intent");
    let accepted = common::of(&rows, Kind::TaskAccepted);
    let task = accepted
        .iter()
        .find(|e| e.task_id == crash.task_id)
        .expect("the task was reported");
    assert_eq!(task.actor, "api");
    let intent: Vec<_> = common::of(&rows, Kind::IntentRecorded)
        .into_iter()
        .filter(|e| e.event_id == crash.event_id)
        .collect();
    assert_eq!(intent.len(), 1);
    assert_eq!(intent[0].actor, "observer");
    assert!(common::note(intent[0]).seen_in_store());
    assert_eq!(intent[0].store_rev, task.store_rev);
    creates_complete(&rows);
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(report.verdict, RunVerdict::Valid);
}

#[test]
fn unreported_intent_on_etcd_jetstream() {
    unreported_intent("etcd-jetstream");
}

#[test]
fn unreported_intent_on_sqlite_redis() {
    unreported_intent("sqlite-redis");
}

#[test]
fn unreported_create_on_etcd_jetstream() {
    unreported_create("etcd-jetstream");
}

#[test]
fn unreported_create_on_sqlite_redis() {
    unreported_create("sqlite-redis");
}

#[test]
fn api_killed_mid_flight_on_etcd_jetstream() {
    api_killed_mid_flight("etcd-jetstream");
}

#[test]
fn api_killed_mid_flight_on_sqlite_redis() {
    api_killed_mid_flight("sqlite-redis");
}

#[test]
fn chaos_on_etcd_jetstream() {
    chaos("etcd-jetstream", "5");
}

#[test]
fn chaos_on_sqlite_redis_restarts_redis_on_its_append_only_file() {
    let events = chaos("sqlite-redis", "18");
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
    let events = chaos_with(&["--cluster", "3"], "1");
    let end = common::run_end(events.iter().find(|e| e.kind == Kind::RunEnd).unwrap());
    let armed = end.chaos.expect("what the draw armed").armed;
    assert!(
        armed
            .iter()
            .any(|a| a.fault.starts_with("restart etcd-") || a.fault.starts_with("restart nats-")),
        "the draw restarts cluster members: {armed:?}"
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
