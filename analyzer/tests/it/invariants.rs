//! Each invariant on hand-built traces: the valid lab scenario passes everything, and one edit per
//! invariant breaks exactly that invariant, naming the right event.

use crate::common::*;
use outbox_analyzer::check::RunVerdict;
use outbox_analyzer::check::{Reason, Verdict};
use outbox_trace::Kind::{self, *};

#[test]
fn valid_lab_trace_passes_every_invariant() {
    let report = check(&lab());
    assert_eq!(report.scenarios.len(), 1);
    let s = &report.scenarios[0];
    for o in &s.outcomes {
        assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    }
    assert_eq!(s.verdict, RunVerdict::Valid);
    assert_eq!(report.verdict, RunVerdict::Valid);
    let c = &s.figures;
    // Deliveries count every copy a worker received: 3 first deliveries and 1 redelivery.
    assert_eq!(
        (
            c.tasks,
            c.publish_attempts,
            c.stream_copies,
            c.deliveries,
            c.redeliveries
        ),
        (3, 3, 3, 4, 1)
    );
    assert_eq!(
        (c.suppressions, c.effects, c.acks, c.counter),
        (1, 3, 4, Some(10))
    );
    // Passes with a remark where nothing could be compared.
    assert_eq!(
        outcome(&report, "external-single-effect").reason,
        Some(Reason::NoExternalCalls)
    );
}

#[test]
fn second_commit_of_an_event_breaks_single_effect() {
    let mut t = lab();
    // The redelivered copy of evt-2 is committed again instead of suppressed.
    let at = find(&t, DuplicateSuppressed, Some("evt-2"));
    t[at] = ev(EffectCommitted, "worker")
        .task("t-2")
        .event("evt-2")
        .amount(3, 13)
        .rev(34);
    let obs = find(&t, Observed, None);
    t[obs] = ev(Observed, "observer")
        .detail(r#"{"stream_messages":3,"counter":13,"results":4,"dedup_keys":4}"#);
    let report = check(&t);
    only_fails(&report, "single-effect");
    assert_eq!(failing_events(&report, "single-effect"), ["evt-2"]);
    // Witness: both commits and the deliveries that led to them.
    let h = &report.loaded.histories[0];
    let v = &outcome(&report, "single-effect").violations[0];
    let kinds: Vec<Kind> = v.witness.iter().map(|&i| h.rows[i].kind).collect();
    assert_eq!(
        kinds,
        [Delivered, EffectCommitted, Redelivered, EffectCommitted]
    );
    assert!(explanation(&report, "single-effect").contains("committed 2 times"));
}

#[test]
fn one_task_committed_under_two_events_breaks_single_effect() {
    let mut t = lab();
    let at = find(&t, EffectCommitted, Some("evt-3"));
    t[at].task_id = Some("t-2".into());
    let report = check(&t);
    let o = outcome(&report, "single-effect");
    assert_eq!(o.verdict, Verdict::Fail);
    assert_eq!(
        report.loaded.names.name_opt(o.violations[0].task),
        Some("t-2")
    );
    // t-3 now has no effect: the liveness check sees that too.
    assert_eq!(outcome(&report, "no-lost-task").verdict, Verdict::Fail);
}

#[test]
fn intent_in_another_transaction_breaks_intent_atomic() {
    let mut t = lab();
    let at = find(&t, IntentRecorded, Some("evt-2"));
    t[at].store_rev = Some(99);
    let report = check(&t);
    only_fails(&report, "intent-atomic");
    assert_eq!(failing_events(&report, "intent-atomic"), ["evt-2"]);
    assert_eq!(witness_seqs(&report, "intent-atomic"), [4, 5]);
}

#[test]
fn missing_intent_breaks_intent_atomic() {
    let mut t = lab();
    t.remove(find(&t, IntentRecorded, Some("evt-1")));
    let report = check(&t);
    only_fails(&report, "intent-atomic");
    assert_eq!(failing_events(&report, "intent-atomic"), ["evt-1"]);
    assert!(explanation(&report, "intent-atomic").contains("no intent_recorded"));
}

#[test]
fn mark_before_publish_ack_breaks_mark_after_puback() {
    let mut t = lab();
    let mark = t.remove(find(&t, OutboxMarked, Some("evt-3")));
    t.insert(find(&t, PublishAcked, Some("evt-3")), mark);
    let report = check(&t);
    only_fails(&report, "mark-after-puback");
    assert_eq!(failing_events(&report, "mark-after-puback"), ["evt-3"]);
    let w = witness_seqs(&report, "mark-after-puback");
    assert_eq!(w.len(), 2, "the mark and the later publish ACK");
    assert!(w[0] < w[1]);
}

#[test]
fn ack_before_commit_breaks_ack_after_commit() {
    let mut t = lab();
    let ack = t.remove(find(&t, Acked, Some("evt-3")));
    t.insert(find(&t, EffectCommitted, Some("evt-3")), ack);
    let report = check(&t);
    only_fails(&report, "ack-after-commit");
    assert_eq!(failing_events(&report, "ack-after-commit"), ["evt-3"]);
    let h = &report.loaded.histories[0];
    let v = &outcome(&report, "ack-after-commit").violations[0];
    let kinds: Vec<Kind> = v.witness.iter().map(|&i| h.rows[i].kind).collect();
    assert_eq!(kinds, [Delivered, Acked, EffectCommitted]);
    let text = explanation(&report, "ack-after-commit");
    assert!(text.contains("ACKed delivery 1 of evt-3"), "{text}");
    assert!(text.contains("commit came at seq"), "{text}");
}

#[test]
fn ack_of_a_redelivery_needs_its_own_commit_or_suppression() {
    let mut t = lab();
    // The redelivered copy of evt-2 is ACKed without the dedup check.
    t.remove(find(&t, DuplicateSuppressed, Some("evt-2")));
    let report = check(&t);
    only_fails(&report, "ack-after-commit");
    assert_eq!(failing_events(&report, "ack-after-commit"), ["evt-2"]);
    assert!(explanation(&report, "ack-after-commit").contains("delivery 2 of evt-2"));
}

#[test]
fn commit_in_an_earlier_incarnation_does_not_cover_the_ack() {
    let mut t = lab();
    // The worker crashes after committing evt-3; the restarted incarnation ACKs a redelivery
    // without checking the dedup key.
    let at = find(&t, Acked, Some("evt-3"));
    t[at] = ev(Crash, "worker").detail(r#"{"point":"after-commit"}"#);
    t.insert(at + 1, ev(Restart, "worker").inc(1));
    t.insert(
        at + 2,
        ev(Redelivered, "worker")
            .inc(1)
            .event("evt-3")
            .attempt(2)
            .broker(3),
    );
    t.insert(at + 3, ev(Acked, "worker").inc(1).event("evt-3").broker(3));
    let report = check(&t);
    only_fails(&report, "ack-after-commit");
    assert_eq!(failing_events(&report, "ack-after-commit"), ["evt-3"]);
}

#[test]
fn redelivery_after_broker_restart_with_count_one_is_fine() {
    let mut t = lab();
    // After a broker crash the copy of evt-3 is delivered again with its count back at 1.
    let at = find(&t, Acked, Some("evt-3")) + 1;
    t.insert(
        at,
        ev(Fault, "faults").detail(r#"{"fault":"broker-restart"}"#),
    );
    t.insert(
        at + 1,
        ev(Delivered, "worker").event("evt-3").attempt(1).broker(3),
    );
    t.insert(at + 2, ev(DuplicateSuppressed, "worker").event("evt-3"));
    t.insert(at + 3, ev(Acked, "worker").event("evt-3").broker(3));
    let report = check(&t);
    assert_eq!(report.verdict, RunVerdict::Valid);
}

#[test]
fn out_of_order_first_publication_breaks_aggregate_order() {
    let mut t = lab();
    // The relay publishes evt-3 before evt-2; the aggregate comes from the intent rows.
    let start = find(&t, PublishAttempt, Some("evt-3"));
    let evt3: Vec<_> = t.drain(start..start + 3).collect();
    let at = find(&t, PublishAttempt, Some("evt-2"));
    for (i, e) in evt3.into_iter().enumerate() {
        t.insert(at + i, e);
    }
    let report = check(&t);
    only_fails(&report, "aggregate-order");
    assert_eq!(failing_events(&report, "aggregate-order"), ["evt-2"]);
    let text = explanation(&report, "aggregate-order");
    assert!(text.contains("in aggregate acct-1"), "{text}");
}

#[test]
fn a_publication_before_its_intent_is_judged_by_that_intent() {
    let mut t = lab();
    // evt-1's acceptance says position 1 of acct-1, but its intent, written after every
    // publication, says 5: the intent wins, so evt-2 and evt-3 went out after a later position.
    let at = find(&t, IntentRecorded, Some("evt-1"));
    let mut intent = t.remove(at);
    intent.aggregate_seq = Some(5);
    let at = find(&t, Observed, None);
    t.insert(at, intent);
    let report = check(&t);
    assert_eq!(
        failing_events(&report, "aggregate-order"),
        ["evt-2", "evt-3"]
    );
    assert_eq!(outcome(&report, "intent-atomic").verdict, Verdict::Pass);
}

#[test]
fn an_acceptance_is_settled_by_any_intent_of_its_revision() {
    let mut t = lab();
    // evt-2 has a first intent in another transaction, then one in the acceptance's.
    let at = find(&t, IntentRecorded, Some("evt-2"));
    let mut other = t[at].clone();
    other.store_rev = Some(99);
    t.insert(at, other);
    let report = check(&t);
    assert_eq!(outcome(&report, "intent-atomic").verdict, Verdict::Pass);
}

#[test]
fn aggregate_order_uses_the_publish_rows_when_they_carry_it() {
    let mut t = lab();
    for e in t.iter_mut() {
        if e.kind != PublishAttempt {
            e.aggregate_id = None;
            e.aggregate_seq = None;
        }
    }
    let report = check(&t);
    assert_eq!(
        outcome(&report, "aggregate-order").reason,
        Some(Reason::NoAggregateInfo)
    );
    let at = find(&t, PublishAttempt, Some("evt-1"));
    t[at].aggregate_id = Some("acct-1".into());
    t[at].aggregate_seq = Some(5);
    let at = find(&t, PublishAttempt, Some("evt-2"));
    t[at].aggregate_id = Some("acct-1".into());
    t[at].aggregate_seq = Some(4);
    let report = check(&t);
    assert_eq!(failing_events(&report, "aggregate-order"), ["evt-2"]);
}

#[test]
fn wrong_counter_step_breaks_counter_exact() {
    let mut t = lab();
    let at = find(&t, EffectCommitted, Some("evt-2"));
    t[at].counter = Some(6);
    let at = find(&t, EffectCommitted, Some("evt-3"));
    t[at].counter = Some(11);
    let obs = find(&t, Observed, None);
    t[obs] = ev(Observed, "observer")
        .detail(r#"{"stream_messages":3,"counter":10,"results":3,"dedup_keys":3}"#);
    let report = check(&t);
    only_fails(&report, "counter-exact");
    // One bad step (evt-2); evt-3 steps right from the value the store reported.
    assert_eq!(failing_events(&report, "counter-exact"), ["evt-2"]);
    assert!(explanation(&report, "counter-exact").contains("set the counter to 6"));
}

#[test]
fn counter_steps_follow_store_rev_not_row_order() {
    let mut t = lab();
    // evt-2 commits last in the store (rev 39) but its row comes before evt-3's (rev 33).
    let at = find(&t, EffectCommitted, Some("evt-2"));
    t[at].store_rev = Some(39);
    t[at].counter = Some(10);
    let at = find(&t, EffectCommitted, Some("evt-3"));
    t[at].counter = Some(7);
    let report = check(&t);
    assert_eq!(outcome(&report, "counter-exact").verdict, Verdict::Pass);
    // A wrong step on the commit that came late is found, and named.
    t[at].counter = Some(8);
    let at = find(&t, EffectCommitted, Some("evt-2"));
    t[at].counter = Some(11);
    let obs = find(&t, Observed, None);
    t[obs] = ev(Observed, "observer")
        .detail(r#"{"stream_messages":3,"counter":11,"results":3,"dedup_keys":3}"#);
    let report = check(&t);
    assert_eq!(failing_events(&report, "counter-exact"), ["evt-3"]);
    assert!(explanation(&report, "counter-exact").contains("set the counter to 8"));
}

#[test]
fn observed_counter_off_breaks_counter_exact() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"stream_messages":3,"counter":12,"results":3,"dedup_keys":3}"#.into());
    let report = check(&t);
    only_fails(&report, "counter-exact");
    assert!(explanation(&report, "counter-exact").contains("read counter 12"));
}

#[test]
fn counter_start_from_run_start_is_used() {
    let mut t = lab();
    t[0].detail = Some(r#"{"counter_start":100}"#.into());
    for e in t.iter_mut() {
        if let Some(c) = e.counter.as_mut() {
            *c += 100;
        }
    }
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"counter":110}"#.into());
    let report = check(&t);
    assert_eq!(outcome(&report, "counter-exact").verdict, Verdict::Pass);
}

#[test]
fn no_observed_counter_makes_counter_exact_unknown() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"results":3}"#.into());
    let report = check(&t);
    let o = outcome(&report, "counter-exact");
    assert_eq!(o.verdict, Verdict::Unknown);
    assert_eq!(o.reason, Some(Reason::NoObservedCounter));
}

#[test]
fn observed_results_off_breaks_observed_agrees() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"stream_messages":3,"counter":10,"results":4,"dedup_keys":3}"#.into());
    let report = check(&t);
    only_fails(&report, "observed-agrees");
    assert!(explanation(&report, "observed-agrees").contains("results = 4"));
}

#[test]
fn processed_is_a_synonym_of_results() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"counter":10,"processed":3}"#.into());
    assert_eq!(check(&t).verdict, RunVerdict::Valid);
    t[obs].detail = Some(r#"{"counter":10,"processed":2}"#.into());
    only_fails(&check(&t), "observed-agrees");
}

#[test]
fn too_few_stream_messages_break_observed_agrees() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"counter":10,"stream_messages":2}"#.into());
    only_fails(&check(&t), "observed-agrees");
    t[obs].detail = Some(r#"{"counter":10,"stream_messages":5}"#.into());
    assert_eq!(check(&t).verdict, RunVerdict::Valid);
}

#[test]
fn a_task_in_the_store_missing_from_the_trace_breaks_observed_agrees() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    let totals = r#"{"counter":10,"tasks":3,"outbox_published":3,"outbox_pending":0}"#;
    t[obs].detail = Some(totals.into());
    assert_eq!(check(&t).verdict, RunVerdict::Valid);
    // One acceptance removed: the store holds three tasks, the trace accepts two.
    let accepted = find(&t, TaskAccepted, Some("evt-2"));
    t.remove(accepted);
    let report = check(&t);
    assert!(failing_events(&report, "observed-agrees").is_empty());
    assert!(
        explanation(&report, "observed-agrees").contains("tasks = 3"),
        "{}",
        explanation(&report, "observed-agrees")
    );
    assert!(explanation(&report, "observed-agrees").contains("accepted 2 distinct task(s)"));
}

#[test]
fn an_intent_in_the_store_missing_from_the_trace_breaks_observed_agrees() {
    let mut t = lab();
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"counter":10,"outbox_published":3,"outbox_pending":1}"#.into());
    only_fails(&check(&t), "observed-agrees");
    // Compared only where both keys are present.
    t[obs].detail = Some(r#"{"counter":10,"outbox_pending":1}"#.into());
    assert_ne!(
        outcome(&check(&t), "observed-agrees").verdict,
        Verdict::Fail
    );
}

#[test]
fn no_observed_row_is_unknown() {
    let mut t = lab();
    t.remove(find(&t, Observed, None));
    let report = check(&t);
    assert_eq!(
        outcome(&report, "observed-agrees").reason,
        Some(Reason::NoObserved)
    );
    assert_eq!(
        outcome(&report, "observed-agrees").verdict,
        Verdict::Unknown
    );
    assert_eq!(report.verdict, RunVerdict::Unknown);
}

fn with_external(applied_twice: bool) -> Vec<outbox_trace::Event> {
    let mut t = lab();
    let at = find(&t, EffectCommitted, Some("evt-1"));
    let mut calls = vec![
        ev(ExternalRequest, "worker").event("evt-1").attempt(1),
        ev(ExternalApplied, "receiver").event("evt-1"),
        ev(ExternalRequest, "worker").event("evt-1").attempt(2),
    ];
    calls.push(if applied_twice {
        ev(ExternalApplied, "receiver").event("evt-1")
    } else {
        ev(ExternalReplayed, "receiver").event("evt-1")
    });
    for (i, e) in calls.into_iter().enumerate() {
        t.insert(at + i, e);
    }
    t
}

#[test]
fn replayed_external_call_is_fine() {
    let report = check(&with_external(false));
    assert_eq!(report.verdict, RunVerdict::Valid);
    assert_eq!(outcome(&report, "external-single-effect").reason, None);
}

#[test]
fn external_effect_applied_twice_breaks_external_single_effect() {
    let report = check(&with_external(true));
    only_fails(&report, "external-single-effect");
    assert_eq!(failing_events(&report, "external-single-effect"), ["evt-1"]);
    assert_eq!(witness_seqs(&report, "external-single-effect").len(), 2);
}

/// evt-3 is published but never delivered: its task never takes effect.
fn lost_third_task() -> Vec<outbox_trace::Event> {
    let mut t = lab();
    t.retain(|e| {
        e.event_id.as_deref() != Some("evt-3")
            || !matches!(e.kind, Delivered | EffectCommitted | Acked)
    });
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"stream_messages":3,"counter":5,"results":2,"dedup_keys":2}"#.into());
    t
}

#[test]
fn task_without_effect_on_a_recovered_run_breaks_no_lost_task() {
    let report = check(&lost_third_task());
    only_fails(&report, "no-lost-task");
    let o = outcome(&report, "no-lost-task");
    assert_eq!(
        report.loaded.names.name_opt(o.violations[0].task),
        Some("t-3")
    );
    assert_eq!(failing_events(&report, "no-lost-task"), ["evt-3"]);
    // Witness: accepted, intent, publish attempt, publish ack, mark.
    assert_eq!(witness_seqs(&report, "no-lost-task").len(), 5);
}

#[test]
fn run_that_did_not_recover_is_unknown_not_invalid() {
    let mut t = lost_third_task();
    let end = find(&t, RunEnd, None);
    t[end].detail = Some(r#"{"recovered":false}"#.into());
    let report = check(&t);
    let o = outcome(&report, "no-lost-task");
    assert_eq!(o.verdict, Verdict::Unknown);
    assert_eq!(o.reason, Some(Reason::NotRecovered));
    assert_eq!(report.verdict, RunVerdict::Unknown);
}

#[test]
fn no_run_end_is_unknown() {
    let mut t = lab();
    t.remove(find(&t, RunEnd, None));
    let report = check(&t);
    assert_eq!(
        outcome(&report, "no-lost-task").reason,
        Some(Reason::NoRunEnd)
    );
    assert_eq!(report.verdict, RunVerdict::Unknown);
}

#[test]
fn rows_lacking_required_fields_are_noted_and_never_pass_silently() {
    let mut t = lab();
    let at = find(&t, Acked, Some("evt-1"));
    t[at].event_id = None;
    let report = check(&t);
    let h = &report.loaded.histories[0];
    assert_eq!(h.missing.get(&(Acked, "event_id")), Some(&1));
    let o = outcome(&report, "ack-after-commit");
    assert_eq!(o.verdict, Verdict::Unknown);
    assert!(matches!(
        o.reason,
        Some(Reason::MissingFields { kind: Acked, .. })
    ));
}

#[test]
fn scenarios_are_checked_separately_and_violations_capped() {
    let mut t = lab();
    // A second scenario in the same run where every ACK comes before its commit.
    let mut other: Vec<_> = lab()
        .into_iter()
        .map(|mut e| {
            e.scenario = "crash-before-publish".into();
            e
        })
        .collect();
    for n in 1..=3 {
        let e = format!("evt-{n}");
        let ack = other.remove(find(&other, Acked, Some(&e)));
        other.insert(find(&other, EffectCommitted, Some(&e)), ack);
    }
    // The redelivery's ACK also lacks its suppression: four violations in all.
    other.remove(find(&other, DuplicateSuppressed, Some("evt-2")));
    t.extend(other);
    let report = check(&t);
    assert_eq!(report.scenarios.len(), 2);
    assert_eq!(report.scenarios[0].verdict, RunVerdict::Valid);
    assert_eq!(report.scenarios[1].verdict, RunVerdict::Invalid);
    let o = report.scenarios[1]
        .outcomes
        .iter()
        .find(|o| o.invariant.id() == "ack-after-commit")
        .unwrap();
    assert_eq!((o.violations.len(), o.more), (3, 1));
}

#[test]
fn row_order_in_the_file_does_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = lab();
    renumber(&mut t);
    t.reverse();
    let path = dir.path().join("reversed.parquet");
    let mut w = outbox_trace::TraceWriter::create(&path, None).unwrap();
    w.write(&t).unwrap();
    w.finish().unwrap();
    let report = outbox_analyzer::check::analyse(&[path]).unwrap();
    assert_eq!(report.verdict, RunVerdict::Valid);
    // Witnesses come back in seq order.
    let h = &report.loaded.histories[0];
    assert!(h.rows.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[test]
fn a_crash_after_an_early_ack_is_part_of_the_story() {
    let mut t = lab();
    // The worker ACKs evt-3 and dies before committing; the broker never redelivers it.
    let commit = find(&t, EffectCommitted, Some("evt-3"));
    let ack = t.remove(find(&t, Acked, Some("evt-3")));
    t[commit] = ack;
    t.insert(
        commit + 1,
        ev(Crash, "worker").detail(r#"{"point":"after-ack"}"#),
    );
    t.insert(commit + 2, ev(Restart, "worker").inc(1));
    let obs = find(&t, Observed, None);
    t[obs].detail = Some(r#"{"stream_messages":3,"counter":5,"results":2,"dedup_keys":2}"#.into());
    let report = check(&t);
    assert_eq!(failing_events(&report, "ack-after-commit"), ["evt-3"]);
    let text = explanation(&report, "ack-after-commit");
    assert!(text.contains("worker#0 crashed at seq"), "{text}");
    assert_eq!(failing_events(&report, "no-lost-task"), ["evt-3"]);
    let h = &report.loaded.histories[0];
    let lost = &outcome(&report, "no-lost-task").violations[0];
    assert!(lost.witness.iter().any(|&at| h.rows[at].kind == Crash));
    for id in [
        "single-effect",
        "counter-exact",
        "observed-agrees",
        "intent-atomic",
    ] {
        assert_eq!(outcome(&report, id).verdict, Verdict::Pass, "{id}");
    }
}

#[test]
fn unknown_kinds_make_no_scenario_of_their_own_but_their_seq_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = lab();
    renumber(&mut t);
    // A counter key only a row of an unknown kind carries is never named.
    t.last_mut().unwrap().counter_key = Some("only-on-a-heartbeat".into());
    let path = dir.path().join("t.parquet");
    let mut batch = outbox_trace::to_batch(&t).unwrap();
    // Rename the kind of the last row (run_end) to an unknown one in another scenario.
    let kinds: arrow_array::StringArray = t
        .iter()
        .enumerate()
        .map(|(i, e)| {
            Some(if i + 1 == t.len() {
                "heartbeat"
            } else {
                e.kind.as_str()
            })
        })
        .collect();
    let scenarios: arrow_array::StringArray = t
        .iter()
        .enumerate()
        .map(|(i, e)| {
            Some(if i + 1 == t.len() {
                "elsewhere"
            } else {
                e.scenario.as_str()
            })
        })
        .collect();
    let mut columns = batch.columns().to_vec();
    columns[7] = std::sync::Arc::new(kinds);
    columns[1] = std::sync::Arc::new(scenarios);
    batch = arrow_array::RecordBatch::try_new(batch.schema(), columns).unwrap();
    let mut w = outbox_trace::TraceWriter::create(&path, None).unwrap();
    w.write_batch(&batch).unwrap();
    w.finish().unwrap();
    let report = outbox_analyzer::check::analyse(std::slice::from_ref(&path)).unwrap();
    assert_eq!(report.scenarios.len(), 1);
    assert_eq!(
        outcome(&report, "no-lost-task").reason,
        Some(Reason::NoRunEnd)
    );
    let mut loaded = outbox_analyzer::model::load::Loaded::default();
    loaded.load(&path).unwrap();
    assert_eq!(loaded.names.get("only-on-a-heartbeat"), None);

    // The unknown row's seq repeats a known row's: rejected.
    let seqs: arrow_array::UInt64Array = t
        .iter()
        .enumerate()
        .map(|(i, e)| Some(if i + 1 == t.len() { 1 } else { e.seq }))
        .collect();
    let mut columns = batch.columns().to_vec();
    columns[2] = std::sync::Arc::new(seqs);
    let batch = arrow_array::RecordBatch::try_new(batch.schema(), columns).unwrap();
    let mut w = outbox_trace::TraceWriter::create(&path, None).unwrap();
    w.write_batch(&batch).unwrap();
    w.finish().unwrap();
    let err = outbox_analyzer::check::analyse(&[path]).unwrap_err();
    assert!(err.to_string().contains("repeats seq 1"), "{err}");
}
