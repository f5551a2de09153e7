//! `recorder run --system` on a service whose broker orders per partition (Kafka): the partition a
//! process reports on its spans (`outbox.partition`, else the messaging conventions'
//! `messaging.destination.partition.id`) is written in the trace's `partition` column beside the
//! offset in `broker_seq`, and equal offsets in two partitions stay two copies.

use crate::common::{self, rows};
use outbox_trace::Kind;

/// A worker ([`common::span_role`]) that reports two copies of one event at offset 7 of
/// partitions 0 and 1, each delivered, the first committed, the second suppressed, each ACKed;
/// then waits to be stopped.
const WORKER: &str = r#"
first = {"outbox.event_id": "e-1", "outbox.broker_seq": 7, "outbox.partition": 0}
second = {"outbox.event_id": "e-1", "outbox.broker_seq": 7,
          "messaging.destination.partition.id": "1"}
send(0, {**first, "outbox.kind": "delivered", "outbox.attempt": 1})
send(1, {**first, "outbox.kind": "effect_committed", "outbox.task_id": "t-1", "outbox.store_rev": 1})
send(2, {**second, "outbox.kind": "redelivered", "outbox.attempt": 2})
send(3, {**first, "outbox.kind": "acked"})
send(4, {**second, "outbox.kind": "duplicate_suppressed"})
send(5, {**second, "outbox.kind": "acked"})
time.sleep(30)
"#;

#[test]
fn spans_of_a_partitioned_broker_keep_their_partition_in_the_system_trace() {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_span_role(dir.path(), "kafka-like", "worker", WORKER);
    let copies = |kind| -> Vec<(Option<u64>, Option<i32>)> {
        rows(&events, kind)
            .iter()
            .map(|e| (e.broker_seq, e.partition))
            .collect()
    };
    assert_eq!(copies(Kind::Delivered), [(Some(7), Some(0))]);
    assert_eq!(copies(Kind::Redelivered), [(Some(7), Some(1))]);
    assert_eq!(copies(Kind::EffectCommitted), [(Some(7), Some(0))]);
    assert_eq!(copies(Kind::DuplicateSuppressed), [(Some(7), Some(1))]);
    assert_eq!(
        copies(Kind::Acked),
        [(Some(7), Some(0)), (Some(7), Some(1))]
    );
    // Each ACK answers its own partition's copy: the first after its commit, the second after
    // its suppression.
    let out = common::trace_path(dir.path());
    let report = outbox_analyzer::check::analyse(std::slice::from_ref(&out)).unwrap();
    let ack = report.scenarios[0]
        .outcomes
        .iter()
        .find(|o| o.invariant.id() == "ack-after-commit")
        .unwrap();
    assert_eq!(
        ack.verdict,
        outbox_analyzer::check::Verdict::Pass,
        "{ack:?}"
    );
    assert_eq!(report.scenarios[0].figures.stream_copies, 2);
}
