//! The lab's scenarios on real etcd and NATS JetStream, started by the recorder itself: every
//! number is asserted from the Parquet file read back and from the ground truth the recorder read
//! from the services.

use crate::common;

use common::*;
use outbox_trace::Kind;

#[test]
fn every_scenario_gives_counter_ten_and_three_results() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.json");
    let events = record_ok(
        dir.path(),
        &["--scenario", "all", "--report", report.to_str().unwrap()],
    );

    let mut names: Vec<&str> = events.iter().map(|e| e.scenario.as_str()).collect();
    names.dedup();
    for lab in [
        "crash-before-publish",
        "lost-publish-ack",
        "lost-consumer-ack",
    ] {
        assert!(names.contains(&lab), "{lab} is part of all");
    }
    for &name in &names {
        let rows = scenario(&events, name);
        let seen = observed(&rows);
        assert_eq!(seen.counter, Some(10.into()), "{name}: counter");
        assert_eq!(seen.results, Some(3), "{name}: results");
        assert_eq!(seen.dedup_keys, Some(3), "{name}: dedup keys");
        assert_eq!(seen.outbox_pending, Some(0), "{name}: pending outbox");
        assert_eq!(of(&rows, Kind::EffectCommitted).len(), 3, "{name}: effects");
        let total: i64 = of(&rows, Kind::EffectCommitted)
            .iter()
            .map(|e| e.amount.unwrap())
            .sum();
        assert_eq!(total, 10, "{name}: committed amounts");
        let end = of(&rows, Kind::RunEnd);
        assert_eq!(end.len(), 1);
        assert_eq!(run_end(end[0]).recovered, Some(true), "{name}: recovered");
        assert!(rows.iter().all(|e| e.backend == "etcd-jetstream"));
    }
    // seq is unique and increasing across the file.
    let mut seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    assert_eq!(seqs.len(), events.len());

    // The lab's JSON holds the same figures, in the contract's one shape.
    let lab: outbox_trace::lab::LabJson =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(lab.scenarios.len(), names.len());
    for s in &lab.scenarios {
        assert_eq!(s.figures.counter, Some(10), "{}", s.scenario);
        assert_eq!(s.figures.results, Some(3), "{}", s.scenario);
        assert!(s.figures.deliveries >= 3, "{}", s.scenario);
        assert!(s.figures.stream_messages >= Some(3), "{}", s.scenario);
        assert!(s.figures.publish_attempts >= 3, "{}", s.scenario);
        assert!(s.duration_ms.is_some(), "{}", s.scenario);
        assert_eq!(s.backend, "etcd-jetstream");
        assert_eq!(s.recovered, Some(true));
    }
    let lost_ack = lab
        .scenarios
        .iter()
        .find(|s| s.scenario == "lost-publish-ack")
        .unwrap();
    assert!(lost_ack.figures.stream_messages.unwrap() >= 4);
}

#[test]
fn crash_before_publish_leaves_the_stream_empty_until_the_relay_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "crash-before-publish"]);
    let rows = scenario(&events, "crash-before-publish");
    let crash =
        position(&rows, 0, |e| e.kind == Kind::Crash && e.actor == "relay").expect("relay crash");
    assert_eq!(crash_point(rows[crash]), "relay:before-publish");
    assert_eq!(rows[crash].incarnation, 0);
    assert!(
        position(&rows, 0, |e| e.kind == Kind::PublishAttempt).unwrap() > crash,
        "no publish before the crash"
    );
    // The relay died holding a committed intent (it read it from the store; the API's report of it
    // may reach the recorder before or after the crash: different processes); the next life
    // publishes it.
    let crashed_event = rows[crash].event_id.clone().unwrap();
    assert!(rows
        .iter()
        .any(|e| e.kind == Kind::IntentRecorded && e.event_id.as_ref() == Some(&crashed_event)));
    let restart = position(&rows, crash, |e| {
        e.kind == Kind::Restart && e.actor == "relay"
    })
    .expect("restart");
    assert_eq!(rows[restart].incarnation, 1);
    assert!(rows
        .iter()
        .all(|e| !(e.actor == "relay" && e.incarnation == 0 && e.seq > rows[crash].seq)));
    let publish = position(&rows, restart, |e| {
        e.kind == Kind::PublishAcked && e.event_id.as_ref() == Some(&crashed_event)
    });
    assert!(
        publish.is_some(),
        "the restarted relay publishes the pending intent"
    );
    assert_eq!(observed(&rows).stream_messages, Some(3));
}

#[test]
fn lost_publish_ack_stores_a_second_copy_and_the_worker_applies_once() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "lost-publish-ack"]);
    let rows = scenario(&events, "lost-publish-ack");
    let unacked = of(&rows, Kind::PublishUnacked);
    assert_eq!(unacked.len(), 1);
    let event_id = unacked[0].event_id.clone().unwrap();
    assert_eq!(unacked[0].attempt, Some(1));
    let retry: Vec<_> = of(&rows, Kind::PublishAcked)
        .into_iter()
        .filter(|e| e.event_id.as_ref() == Some(&event_id))
        .collect();
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].attempt, Some(2));
    // The mark came only after the ACKed retry.
    let marks: Vec<_> = of(&rows, Kind::OutboxMarked)
        .into_iter()
        .filter(|e| e.event_id.as_ref() == Some(&event_id))
        .collect();
    assert_eq!(marks.len(), 1);
    assert!(marks[0].seq > retry[0].seq);
    // Two copies on the stream, two deliveries, one effect, one suppression.
    let copies: std::collections::BTreeSet<u64> = rows
        .iter()
        .filter(|e| {
            matches!(e.kind, Kind::Delivered | Kind::Redelivered)
                && e.event_id.as_ref() == Some(&event_id)
        })
        .filter_map(|e| e.broker_seq)
        .collect();
    assert_eq!(copies.len(), 2, "both copies were delivered");
    let effects = of(&rows, Kind::EffectCommitted)
        .into_iter()
        .filter(|e| e.event_id.as_ref() == Some(&event_id))
        .count();
    assert_eq!(effects, 1);
    assert_eq!(of(&rows, Kind::DuplicateSuppressed).len(), 1);
    assert!(observed(&rows).stream_messages.unwrap() >= 4);
}

#[test]
fn lost_consumer_ack_is_redelivered_to_the_next_life_and_suppressed() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "lost-consumer-ack"]);
    let rows = scenario(&events, "lost-consumer-ack");
    let crash =
        position(&rows, 0, |e| e.kind == Kind::Crash && e.actor == "worker").expect("worker crash");
    assert_eq!(crash_point(rows[crash]), "worker:between-commit-and-ack");
    let event_id = rows[crash].event_id.clone().unwrap();
    let same = |e: &outbox_trace::Event| e.event_id.as_ref() == Some(&event_id);
    let commit = position(&rows, 0, |e| e.kind == Kind::EffectCommitted && same(e)).unwrap();
    assert!(commit < crash && rows[commit].incarnation == 0);
    assert!(
        !rows[..crash]
            .iter()
            .any(|e| e.kind == Kind::Acked && same(e)),
        "no ACK before the crash"
    );
    let redelivered =
        position(&rows, crash, |e| e.kind == Kind::Redelivered && same(e)).expect("redelivery");
    assert_eq!(rows[redelivered].attempt, Some(2));
    assert!(rows[redelivered].incarnation >= 1);
    // The AckWait gap: the redelivery comes about 2 s after the first delivery.
    let first = position(&rows, 0, |e| e.kind == Kind::Delivered && same(e)).unwrap();
    assert!(rows[redelivered].ts_ns - rows[first].ts_ns >= 1_500_000_000);
    let suppressed = position(&rows, redelivered, |e| {
        e.kind == Kind::DuplicateSuppressed && same(e)
    })
    .unwrap();
    let acked = position(&rows, suppressed, |e| e.kind == Kind::Acked && same(e)).unwrap();
    assert_eq!(rows[suppressed].incarnation, rows[redelivered].incarnation);
    assert_eq!(rows[acked].incarnation, rows[redelivered].incarnation);
    assert_eq!(
        of(&rows, Kind::EffectCommitted)
            .iter()
            .filter(|e| same(e))
            .count(),
        1
    );
}

#[test]
fn creating_twice_with_one_idempotency_key_yields_one_task() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "crash-after-accept"]);
    let rows = scenario(&events, "crash-after-accept");
    let crash =
        position(&rows, 0, |e| e.kind == Kind::Crash && e.actor == "api").expect("api crash");
    assert_eq!(crash_point(rows[crash]), "api:between-task-and-outbox");
    // The API's next life creates again, with the same keys, the tasks whose acceptance was not
    // reported (the `unreported-create` scenario retries a committed key).
    assert!(position(&rows, crash, |e| e.kind == Kind::Restart
        && e.actor == "api")
    .is_some());
    assert_eq!(
        of(&rows, Kind::TaskAccepted).len(),
        3,
        "the retried key is not accepted again"
    );
    assert_eq!(observed(&rows).tasks, Some(3));
    assert_eq!(observed(&rows).counter, Some(10.into()));
}

#[test]
fn concurrent_workers_turn_the_race_into_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "concurrent-workers"]);
    let rows = scenario(&events, "concurrent-workers");
    let workers: std::collections::BTreeSet<&str> = of(&rows, Kind::EffectCommitted)
        .iter()
        .map(|e| e.actor.as_str())
        .collect();
    assert!(workers.iter().all(|w| w.starts_with("worker-")));
    assert!(
        !of(&rows, Kind::CommitConflict).is_empty(),
        "the stalled workers collided"
    );
    let mut commits = of(&rows, Kind::EffectCommitted);
    commits.sort_by_key(|e| e.store_rev);
    let mut counter = 0;
    for c in commits {
        counter += c.amount.unwrap();
        assert_eq!(
            c.counter,
            Some(counter),
            "each commit steps the counter by its amount"
        );
    }
    assert_eq!(observed(&rows).counter, Some(10.into()));
}
