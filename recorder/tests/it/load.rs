//! A small version of the load scenario: many tasks over several aggregates and workers sharing one
//! durable consumer, on both backends; the relay marks in batches and the workers commit in
//! batches, and every invariant still holds.

use crate::common;

use outbox_analyzer::check::{analyse, RunVerdict};
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
    assert_eq!(seen.counter, Some(expected.into()));
    assert_eq!(seen.results, Some(tasks));
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
    // One guarded transaction marked several records, and one commit applied several effects.
    assert!(
        shared_revisions(&rows, Kind::OutboxMarked) > 0,
        "the relay marked a batch in one transaction"
    );
    assert!(
        shared_revisions(&rows, Kind::EffectCommitted) > 0,
        "a worker committed a batch in one transaction"
    );
    let report = analyse(&[common::trace_path(dir.path())]).unwrap();
    assert_eq!(report.verdict, RunVerdict::Valid);
}

/// Revisions that more than one row of `kind` carries.
fn shared_revisions(rows: &[&outbox_trace::Event], kind: Kind) -> usize {
    let mut per_rev = std::collections::HashMap::<i64, usize>::new();
    for e in common::of(rows, kind) {
        *per_rev.entry(e.store_rev.unwrap()).or_default() += 1;
    }
    per_rev.values().filter(|n| **n > 1).count()
}

#[test]
fn without_tracing_only_the_recorders_own_rows_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_ok(dir.path(), &["--tasks", "100", "--no-trace"]);
    let kinds: std::collections::BTreeSet<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["observed", "run_end", "run_start"].into_iter().collect()
    );
    let rows = common::scenario(&events, "load");
    let expected: i64 = (0..100).map(|i| (i % 9) + 1).sum();
    assert_eq!(common::observed(&rows).counter, Some(expected.into()));
}

#[test]
fn load_on_etcd_jetstream() {
    load("etcd-jetstream");
}

#[test]
fn load_on_sqlite_redis() {
    load("sqlite-redis");
}
