//! A broker that orders per partition (Kafka): `broker_seq` is an offset within its `partition`,
//! so equal offsets in two partitions are two copies. The lab scenario with its copies spread
//! over partitions at equal offsets is valid and counts every copy; `ack-after-commit` pairs an
//! ACK with the delivery of its own partition's copy (where reading offsets alone would pair it
//! with another copy's delivery and fail it), fails an ACK of a second copy sent before its
//! suppression, and stays `unknown` where the trace reports no commits.
//!
//! The builders are shared with the SQL agreement corpus (`tests/sql/rules.rs`).

use crate::common::*;
use outbox_analyzer::check::{Reason, RunVerdict, Verdict};
use outbox_trace::{Event, Kind, Kind::*};

/// Where each event's copy sits: `(event, partition, offset)`. evt-1 and evt-2 share offset 7
/// in partitions 0 and 1.
const COPIES: [(&str, i32, u64); 3] = [("evt-1", 0, 7), ("evt-2", 1, 7), ("evt-3", 0, 8)];

/// The partition a second copy of evt-1 lands in, at evt-1's own offset 7.
const SECOND: (i32, u64) = (2, 7);

/// `e` at `offset` in `partition`.
fn at(mut e: Event, (partition, offset): (i32, u64)) -> Event {
    e.partition = Some(partition);
    e.broker_seq = Some(offset);
    e
}

/// The lab scenario on a Kafka-like broker: each event's publish ACK, deliveries and consumer
/// ACKs carry its copy's partition and offset ([`COPIES`]).
pub fn kafka_lab() -> Vec<Event> {
    let mut t = lab();
    for e in t.iter_mut() {
        e.backend = "kafka".into();
        if !matches!(e.kind, PublishAcked | Delivered | Redelivered | Acked) {
            continue;
        }
        let copy = COPIES
            .iter()
            .find(|(id, _, _)| e.event_id.as_deref() == Some(id))
            .expect("every copy row names its event");
        *e = at(e.clone(), (copy.1, copy.2));
    }
    t
}

/// The rows of a second copy of evt-1 (partition [`SECOND`], at evt-1's offset) that the worker
/// receives after committing evt-1: `ack_first` puts the consumer ACK of that copy before the
/// dedup check that suppresses it.
fn second_copy(t: &mut Vec<Event>, ack_first: bool) {
    let delivered = at(ev(Redelivered, "worker").event("evt-1").attempt(2), SECOND);
    let suppressed = ev(DuplicateSuppressed, "worker").task("t-1").event("evt-1");
    let acked = at(ev(Acked, "worker").event("evt-1"), SECOND);
    // After evt-1's commit, before the ACK of its first copy.
    let commit = find(t, EffectCommitted, Some("evt-1"));
    t.insert(commit + 1, delivered);
    let after = find(t, Acked, Some("evt-1")) + 1;
    let rows = if ack_first {
        [acked, suppressed]
    } else {
        [suppressed, acked]
    };
    for (i, row) in rows.into_iter().enumerate() {
        t.insert(after + i, row);
    }
}

/// A second copy of evt-1 at the same offset in another partition, ACKed in order: its ACK
/// follows its suppression, and the ACK of the first copy its commit. Offsets alone would pair
/// the first copy's ACK with the second copy's delivery, which came after the commit.
pub fn kafka_second_copy_in_order() -> Vec<Event> {
    let mut t = kafka_lab();
    second_copy(&mut t, false);
    t
}

/// The second copy of evt-1 ACKed before its dedup check: a crash between them would lose
/// nothing here, but the order is the one `ack-after-commit` forbids.
pub fn kafka_second_copy_acked_early() -> Vec<Event> {
    let mut t = kafka_lab();
    second_copy(&mut t, true);
    t
}

/// The Kafka lab as a service reporting its messaging steps only: no commit or suppression rows.
pub fn kafka_no_commit_rows() -> Vec<Event> {
    let mut t = kafka_lab();
    t.retain(|e| !matches!(e.kind, EffectCommitted | DuplicateSuppressed));
    t
}

#[test]
fn equal_offsets_in_two_partitions_are_two_copies_and_the_lab_stays_valid() {
    let report = check(&kafka_lab());
    let s = &report.scenarios[0];
    for o in &s.outcomes {
        assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    }
    assert_eq!(s.verdict, RunVerdict::Valid);
    // Three copies: offsets 7, 7 and 8 (two distinct) in partitions 0, 1 and 0.
    assert_eq!(s.figures.stream_copies, 3);
    // Without the column, the same offsets are one sequence: two positions.
    let mut flat = kafka_lab();
    flat.iter_mut().for_each(|e| e.partition = None);
    assert_eq!(check(&flat).scenarios[0].figures.stream_copies, 2);
}

#[test]
fn an_ack_pairs_with_the_delivery_of_its_own_partition() {
    let t = kafka_second_copy_in_order();
    let report = check(&t);
    assert_eq!(outcome(&report, "ack-after-commit").verdict, Verdict::Pass);
    assert_eq!(report.scenarios[0].figures.stream_copies, 4);
    // Read as one sequence, the first copy's ACK answers the second copy's delivery (offset 7
    // too), which came after the commit: the ACK would look premature.
    let mut flat = t;
    flat.iter_mut().for_each(|e| e.partition = None);
    let flat = check(&flat);
    assert_eq!(outcome(&flat, "ack-after-commit").verdict, Verdict::Fail);
}

#[test]
fn an_ack_of_a_second_copy_before_its_suppression_fails() {
    let t = kafka_second_copy_acked_early();
    let report = check(&t);
    only_fails(&report, "ack-after-commit");
    assert_eq!(failing_events(&report, "ack-after-commit"), ["evt-1"]);
    // The witness, in seq order: the delivery of the copy in partition 2, then its ACK.
    let mut sorted = t.clone();
    renumber(&mut sorted);
    let second = |kind: Kind| {
        sorted
            .iter()
            .find(|e| e.kind == kind && e.partition == Some(SECOND.0))
            .map(|e| e.seq)
            .unwrap()
    };
    let seqs = witness_seqs(&report, "ack-after-commit");
    assert_eq!(seqs[..2], [second(Redelivered), second(Acked)]);
    let text = explanation(&report, "ack-after-commit");
    assert!(text.contains("evt-1"), "{text}");
}

#[test]
fn without_commit_rows_ack_after_commit_stays_unknown() {
    let report = check(&kafka_no_commit_rows());
    let o = outcome(&report, "ack-after-commit");
    assert_eq!(o.verdict, Verdict::Unknown, "{o:?}");
    assert_eq!(
        o.reason,
        Some(Reason::NoRows(&[EffectCommitted, DuplicateSuppressed]))
    );
}

#[test]
fn a_witness_row_names_its_partition() {
    let report = check(&kafka_second_copy_acked_early());
    let mut json = Vec::new();
    outbox_analyzer::explain::json::write(&report, &mut json).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let witness = &json["scenarios"][0]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "ack-after-commit")
        .unwrap()["violations"][0]["witness"];
    for (row, kind) in [(0, "redelivered"), (1, "acked")] {
        let w = &witness[row];
        assert_eq!(
            (&w["kind"], &w["broker_seq"], &w["partition"]),
            (&kind.into(), &7.into(), &2.into())
        );
    }
    // The text names the partition with the position.
    let mut text = Vec::new();
    outbox_analyzer::explain::text::write(&report, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("partition=2"), "{text}");
}
