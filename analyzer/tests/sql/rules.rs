//! The contract's cross-cutting rules, as traces for the SQL agreement corpus: brokers without
//! positions (a RabbitMQ service traced with standard messaging spans only, runs without
//! `broker_seq`, an actor life holding two copies of one event), a broker that orders per
//! partition (equal offsets in two partitions are two copies), refused and unmapped spans
//! (`"(none)"` for spans without `outbox.kind`), runs without `task_id` or `store_rev`, zero rows
//! where work happened, a named fault that never fired, an interrupted run, and a lost commit
//! reply.
//!
//! [`expected`] gives the verdicts of the rules `check` gains alongside the SQL (the `"(none)"`
//! entry of `run_end.detail.refused`, a run without `run_end` or interrupted, the scenario's own
//! wire fault that lost replies): on those `(trace, invariant)` the SQL is held to them, on every
//! other to `analyzer check` itself. [`SHOWN`] says what each rule must show, so that each is
//! seen both ways.

use crate::common::*;
use crate::partitions;
use crate::variants;
use outbox_trace::{Event, Kind, Kind::*};

/// The lab trace edited by `f`.
fn edit(f: impl FnOnce(&mut Vec<Event>)) -> Vec<Event> {
    let mut t = lab();
    f(&mut t);
    t
}

fn set_detail(t: &mut [Event], kind: Kind, detail: &str) {
    let at = find(t, kind, None);
    t[at].detail = Some(detail.into());
}

/// No row carries a broker position or a delivery count.
fn no_positions(t: &mut [Event]) {
    for e in t.iter_mut() {
        if matches!(e.kind, PublishAcked | Delivered | Redelivered | Acked) {
            e.broker_seq = None;
            e.attempt = None;
        }
    }
}

/// The lab service with standard messaging spans only: no outbox kinds (no acceptances,
/// intents, marks or commits), no positions or delivery counts, the store's totals read.
fn rabbitmq(t: &mut Vec<Event>) {
    t.retain(|e| {
        !matches!(
            e.kind,
            TaskAccepted | IntentRecorded | OutboxMarked | EffectCommitted | DuplicateSuppressed
        )
    });
    no_positions(t);
    for e in t.iter_mut() {
        if e.kind == PublishAttempt {
            e.attempt = None;
        }
    }
    set_detail(
        t,
        Observed,
        r#"{"stream_messages":3,"results":3,"tasks_done":3,"counter":10}"#,
    );
}

/// evt-1 reaches the worker twice (no positions) and is ACKed once before its commit.
fn two_copies(t: &mut Vec<Event>) {
    no_positions(t);
    let commit = find(t, EffectCommitted, Some("evt-1"));
    t.insert(commit, ev(Redelivered, "worker").event("evt-1"));
    t.insert(commit + 1, ev(Acked, "worker").event("evt-1"));
}

/// The store counts `results` effects; the scenario's own fault row says what it dropped.
fn lost_replies(t: &mut Vec<Event>, fault: &str, results: &str, dedup: &str) {
    set_detail(
        t,
        Observed,
        &format!(
            r#"{{"stream_messages":3,"counter":10,"results":{results},"dedup_keys":{dedup}}}"#
        ),
    );
    let at = find(t, Observed, None);
    t.insert(at, ev(Fault, "faults").detail(fault));
}

const LOSE_ONE: &str = r#"{"fault":"lose-commit-reply","target":"store","dropped_messages":1}"#;
const DROP_UNCOUNTED: &str = r#"{"fault":"drop-replies","target":"store","dropped_bytes":120}"#;

/// The scenario names `spec` (its JSON text) and its `run_end` records it fired `fired` times,
/// beside a drawn fault that never fired.
fn named(t: &mut [Event], spec: &str, fired: u32) {
    t[0].detail = Some(format!(r#"{{"tasks":3,"faults":[{spec}]}}"#));
    set_detail(
        t,
        RunEnd,
        &format!(
            r#"{{"faults":[{{"fired":{fired},"spec":{spec},"why":"worker reported no acked"}},{{"fired":0,"spec":"pause relay after publish_acked for 1s"}}],"reason":"quiet","recovered":true}}"#
        ),
    );
}

/// The traces, by name.
pub fn corpus() -> Vec<(&'static str, Vec<Event>)> {
    let mut c = vec![
        ("rabbitmq-standard-spans", edit(rabbitmq)),
        (
            "rabbitmq-unmapped",
            edit(|t| {
                rabbitmq(t);
                set_detail(
                    t,
                    RunEnd,
                    r#"{"recovered":true,"unmapped":{"spans":6,"names":["orders process","charge"]}}"#,
                );
            }),
        ),
        ("no-broker-seq", edit(|t| no_positions(t))),
        ("two-copies", edit(two_copies)),
        (
            "no-task-id",
            edit(|t| t.iter_mut().for_each(|e| e.task_id = None)),
        ),
        (
            "commits-without-rev-amount-counter",
            edit(|t| {
                for e in t.iter_mut().filter(|e| e.kind == EffectCommitted) {
                    (e.store_rev, e.amount, e.counter) = (None, None, None);
                }
            }),
        ),
        (
            "refused-publish-acked",
            edit(|t| {
                set_detail(
                    t,
                    RunEnd,
                    r#"{"recovered":true,"refused":{"publish_acked":{"spans":2,"missing":["event_id","broker_seq"],"reasons":[]}}}"#,
                )
            }),
        ),
        (
            "refused-where-store-holds-more",
            edit(|t| {
                t.remove(find(t, EffectCommitted, Some("evt-3")));
                set_detail(
                    t,
                    RunEnd,
                    r#"{"recovered":true,"refused":{"effect_committed":{"spans":1,"missing":["event_id"]}}}"#,
                );
            }),
        ),
        (
            "no-outbox-kind",
            edit(|t| {
                set_detail(
                    t,
                    RunEnd,
                    r#"{"recovered":true,"refused":{"(none)":{"spans":4,"missing":["kind"]}}}"#,
                )
            }),
        ),
        (
            "no-commit-rows-unmapped",
            edit(|t| {
                t.retain(|e| !matches!(e.kind, EffectCommitted | DuplicateSuppressed));
                let kinds: Vec<String> = Kind::ALL.iter().map(|k| format!("\"{k}\"")).collect();
                t[0].detail = Some(format!(r#"{{"tasks":3,"records":[{}]}}"#, kinds.join(",")));
                set_detail(
                    t,
                    RunEnd,
                    r#"{"recovered":true,"unmapped":{"spans":3,"names":["charge card"]}}"#,
                );
            }),
        ),
        (
            "named-fault-never-fired",
            edit(|t| named(t, r#""kill worker after acked""#, 0)),
        ),
        (
            "named-fault-fired",
            edit(|t| named(t, r#""kill worker after acked""#, 1)),
        ),
        (
            "named-json-fault-never-fired",
            edit(|t| {
                named(
                    t,
                    r#""{\"fault\":\"crash\",\"point\":\"relay:before-publish\"}""#,
                    0,
                )
            }),
        ),
        (
            "interrupted",
            edit(|t| set_detail(t, RunEnd, r#"{"reason":"interrupted","recovered":true}"#)),
        ),
        (
            "interrupted-wrong-step",
            edit(|t| {
                set_detail(t, RunEnd, r#"{"reason":"interrupted","recovered":true}"#);
                let at = find(t, EffectCommitted, Some("evt-2"));
                t[at].counter = Some(6);
                let at = find(t, EffectCommitted, Some("evt-3"));
                t[at].counter = Some(11);
            }),
        ),
        (
            "lost-commit-reply",
            edit(|t| lost_replies(t, LOSE_ONE, "4", "4")),
        ),
        (
            "lost-commit-reply-more-than-lost",
            edit(|t| lost_replies(t, LOSE_ONE, "5", "5")),
        ),
        (
            "lost-commit-reply-store-disagrees",
            edit(|t| lost_replies(t, LOSE_ONE, "4", "3")),
        ),
        (
            "dropped-replies-uncounted",
            edit(|t| lost_replies(t, DROP_UNCOUNTED, "6", "6")),
        ),
    ];
    c.extend([
        ("kafka-partitions", partitions::kafka_lab()),
        (
            "kafka-second-copy-in-order",
            partitions::kafka_second_copy_in_order(),
        ),
        (
            "kafka-second-copy-acked-early",
            partitions::kafka_second_copy_acked_early(),
        ),
        ("kafka-no-commit-rows", partitions::kafka_no_commit_rows()),
    ]);
    let mut no_dedup = variants::no_dedup();
    no_positions(&mut no_dedup);
    c.push(("no-dedup-no-broker-seq", no_dedup));
    c
}

/// `(trace, invariant, verdict, violations, part of the reason)` each rule must give, so every
/// rule is seen both ways (`invariant` [`super::SCENARIO`]: the scenario's verdict and its named
/// faults that never fired).
pub const SHOWN: &[(&str, &str, &str, i64, &str)] = &[
    // The measured case: standard spans only, the store read.
    (
        "rabbitmq-standard-spans",
        "observed-agrees",
        "unknown",
        0,
        "no effect_committed rows",
    ),
    (
        "rabbitmq-standard-spans",
        "ack-after-commit",
        "unknown",
        0,
        "no effect_committed or",
    ),
    (
        "rabbitmq-standard-spans",
        "single-effect",
        "unknown",
        0,
        "no effect_committed rows",
    ),
    (
        "rabbitmq-unmapped",
        "single-effect",
        "unknown",
        0,
        "6 span(s) (orders process, charge)",
    ),
    (
        "rabbitmq-unmapped",
        "external-single-effect",
        "pass",
        0,
        "no external calls",
    ),
    ("no-broker-seq", "ack-after-commit", "pass", 0, ""),
    ("no-broker-seq", "observed-agrees", "pass", 0, ""),
    (
        "two-copies",
        "ack-after-commit",
        "unknown",
        0,
        "1 ACK(s) without a position",
    ),
    ("no-dedup-no-broker-seq", "single-effect", "fail", 1, ""),
    // Equal offsets in two partitions: the ACK answers its own partition's copy.
    (
        "kafka-second-copy-in-order",
        "ack-after-commit",
        "pass",
        0,
        "",
    ),
    (
        "kafka-second-copy-acked-early",
        "ack-after-commit",
        "fail",
        1,
        "",
    ),
    (
        "kafka-no-commit-rows",
        "ack-after-commit",
        "unknown",
        0,
        "no effect_committed or",
    ),
    ("no-task-id", "no-lost-task", "unknown", 0, "lack task_id"),
    (
        "commits-without-rev-amount-counter",
        "counter-exact",
        "unknown",
        0,
        "store_rev",
    ),
    (
        "commits-without-rev-amount-counter",
        "single-effect",
        "pass",
        0,
        "",
    ),
    (
        "refused-publish-acked",
        "mark-after-puback",
        "unknown",
        0,
        "for want of event_id, broker_seq",
    ),
    ("refused-publish-acked", "single-effect", "pass", 0, ""),
    (
        "refused-where-store-holds-more",
        "ack-after-commit",
        "unknown",
        0,
        "1 effect_committed span(s)",
    ),
    (
        "no-commit-rows-unmapped",
        "single-effect",
        "unknown",
        0,
        "3 span(s) (charge card) mapped",
    ),
    ("named-fault-never-fired", super::SCENARIO, "unknown", 1, ""),
    (
        "named-json-fault-never-fired",
        super::SCENARIO,
        "unknown",
        1,
        "",
    ),
    ("named-fault-fired", super::SCENARIO, "valid", 0, ""),
    ("interrupted", "no-lost-task", "pass", 0, ""),
    (
        "lost-commit-reply-more-than-lost",
        "observed-agrees",
        "fail",
        2,
        "",
    ),
    (
        "lost-commit-reply-store-disagrees",
        "observed-agrees",
        "fail",
        1,
        "",
    ),
];
