//! A small version of the load scenario: many tasks over several aggregates and workers sharing one
//! durable consumer, on both backends; every invariant still holds.

mod common;

use outbox_analyzer::analysis::{analyse, RunVerdict};
use outbox_trace::Kind;

fn load(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tasks = 300;
    let events = common::record_ok(
        dir.path(),
        &[
            "--backend",
            backend,
            "--tasks",
            &tasks.to_string(),
            "--workers",
            "3",
            "--aggregates",
            "5",
        ],
    );
    let rows = common::scenario(&events, "load");
    let expected: i64 = (0..tasks).map(|i| (i % 9) + 1).sum();
    let seen = common::observed(&rows);
    assert_eq!(seen["counter"], expected);
    assert_eq!(seen["results"], tasks);
    let workers: std::collections::BTreeSet<&str> = common::of(&rows, Kind::EffectCommitted)
        .iter()
        .map(|e| e.actor.as_str())
        .collect();
    assert!(
        workers.len() >= 2,
        "the workers shared the consumer: {workers:?}"
    );
    let aggregates: std::collections::BTreeSet<&str> = common::of(&rows, Kind::PublishAcked)
        .iter()
        .filter_map(|e| e.aggregate_id.as_deref())
        .collect();
    assert_eq!(aggregates.len(), 5);
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(report.verdict, RunVerdict::Valid);
}

#[test]
fn load_on_etcd_jetstream() {
    load("etcd-jetstream");
}

#[test]
fn load_on_sqlite_redis() {
    load("sqlite-redis");
}
