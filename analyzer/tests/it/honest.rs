//! The contract's rules for a producer that reports less than the columns, each shown both ways:
//! where the rule applies the verdict is `unknown` (never a pass on zero rows, never a failure for
//! a column a broker never had), and where the data is there the invariant still passes or fails.
//!
//! - brokers without positions or delivery counts (RabbitMQ, SQS): `broker_seq` and `attempt`
//!   null on publishes, deliveries and ACKs;
//! - zero rows are no evidence where work happened;
//! - refused and unmapped spans (`run_end.detail.refused`, `unmapped`).

use crate::common::*;
use crate::variants;
use outbox_analyzer::check::{RunVerdict, Verdict};
use outbox_trace::{Event, Kind, Kind::*};

/// Every `broker_seq` and `attempt` of the publishes, deliveries and ACKs left null.
fn no_positions(t: &mut [Event]) {
    for e in t.iter_mut() {
        if matches!(
            e.kind,
            PublishAttempt | PublishAcked | PublishUnacked | Delivered | Redelivered | Acked
        ) {
            e.broker_seq = None;
            e.attempt = None;
        }
    }
}

fn edited(mut t: Vec<Event>, f: impl FnOnce(&mut Vec<Event>)) -> Vec<Event> {
    f(&mut t);
    t
}

fn verdict(events: &[Event], id: &str) -> (Verdict, String) {
    let report = check(events);
    let o = outcome(&report, id);
    let said = o
        .reason
        .as_ref()
        .map(outbox_analyzer::explain::reason)
        .unwrap_or_default();
    (o.verdict, said)
}

fn run_end(t: &mut [Event], detail: &str) {
    let at = find(t, RunEnd, None);
    t[at].detail = Some(detail.into());
}

fn declare_all(t: &mut [Event]) {
    let kinds: Vec<String> = Kind::ALL.iter().map(|k| format!("\"{k}\"")).collect();
    t[0].detail = Some(format!(r#"{{"tasks":3,"records":[{}]}}"#, kinds.join(",")));
}

#[test]
fn without_positions_or_counts_the_reference_is_valid_and_the_bugs_still_fail() {
    let report = check(&edited(lab(), |t| no_positions(t)));
    assert_eq!(report.verdict, RunVerdict::Valid);
    for o in report.scenarios.iter().flat_map(|s| &s.outcomes) {
        assert!(o.verdict == Verdict::Pass, "{o:?}");
    }
    let ack_first = edited(variants::ack_before_commit(), |t| no_positions(t));
    assert_eq!(verdict(&ack_first, "ack-after-commit").0, Verdict::Fail);
    let twice = edited(variants::no_dedup(), |t| no_positions(t));
    assert_eq!(verdict(&twice, "single-effect").0, Verdict::Fail);
}

#[test]
fn an_ack_without_a_position_while_its_life_holds_two_copies_is_unknown() {
    // evt-1: delivered, committed, delivered again in the same life, then one ACK: with
    // positions the ACK names the first copy (settled); without, it could answer either.
    let two = |positions: bool| {
        edited(lab(), |t| {
            let commit = find(t, EffectCommitted, Some("evt-1"));
            let mut again = ev(Redelivered, "worker")
                .event("evt-1")
                .attempt(2)
                .broker(9);
            if !positions {
                no_positions(std::slice::from_mut(&mut again));
            }
            t.insert(commit + 1, again);
            if !positions {
                no_positions(t);
            }
        })
    };
    assert_eq!(verdict(&two(true), "ack-after-commit").0, Verdict::Pass);
    let (v, said) = verdict(&two(false), "ack-after-commit");
    assert_eq!(v, Verdict::Unknown, "{said}");
    assert!(said.contains("two copies"), "{said}");
}

#[test]
fn the_stream_comparison_is_made_only_where_positions_exist() {
    // The store's stream holds fewer copies than events ACKed: a failure with positions.
    let short = |t: &mut Vec<Event>| {
        let at = find(t, Observed, None);
        t[at].detail = Some(r#"{"stream_messages":2,"results":3,"dedup_keys":3}"#.into());
    };
    assert_eq!(
        verdict(&edited(lab(), short), "observed-agrees").0,
        Verdict::Fail
    );
    let without = edited(lab(), |t| {
        short(t);
        no_positions(t);
    });
    assert_eq!(verdict(&without, "observed-agrees").0, Verdict::Pass);
}

#[test]
fn zero_rows_of_a_judged_kind_where_work_happened_are_unknown_unless_declared() {
    // No effect at all, but tasks accepted and delivered, and the store's counter moved.
    let no_effects = |t: &mut Vec<Event>| {
        t.retain(|e| e.kind != EffectCommitted);
        let at = find(t, Observed, None);
        t[at].detail = Some(r#"{"counter":10}"#.into());
    };
    let (v, said) = verdict(&edited(lab(), no_effects), "counter-exact");
    assert_eq!(v, Verdict::Unknown, "{said}");
    assert_eq!(said, "the trace records no effect_committed rows");
    // Declared: the absence is evidence, and the observed counter (10 from 0) fails.
    let declared = edited(lab(), |t| {
        no_effects(t);
        declare_all(t);
    });
    assert_eq!(verdict(&declared, "counter-exact").0, Verdict::Fail);
    // observed-agrees: no intents and an outbox count is no failure; declared, it is.
    let no_intents = |t: &mut Vec<Event>| {
        t.retain(|e| e.kind != IntentRecorded);
        let at = find(t, Observed, None);
        t[at].detail = Some(r#"{"outbox_published":3,"outbox_pending":0}"#.into());
    };
    let (v, said) = verdict(&edited(lab(), no_intents), "observed-agrees");
    assert_eq!(v, Verdict::Unknown, "{said}");
    assert!(said.contains("no intent_recorded rows"), "{said}");
    let declared = edited(lab(), |t| {
        no_intents(t);
        declare_all(t);
    });
    let (v, said) = verdict(&declared, "observed-agrees");
    assert_eq!(v, Verdict::Fail, "{said}");
}

#[test]
fn refused_spans_turn_what_their_rows_could_change_unknown() {
    let refused_marks =
        r#"{"recovered":true,"refused":{"outbox_marked":{"spans":3,"missing":["store_rev"]}}}"#;
    // A pass the refused rows could break: unknown, even where the kind is declared.
    let t = edited(lab(), |t| {
        declare_all(t);
        run_end(t, refused_marks);
    });
    let (v, said) = verdict(&t, "mark-after-puback");
    assert_eq!(v, Verdict::Unknown, "{said}");
    assert!(
        said.contains("3 outbox_marked span(s) were refused for want of store_rev"),
        "{said}"
    );
    // Invariants that do not read the refused kind decide as before.
    assert_eq!(verdict(&t, "single-effect").0, Verdict::Pass);
    // A duplicate stays a failure: missing rows only hide those.
    let twice = edited(variants::no_dedup(), |t| {
        run_end(
            t,
            r#"{"recovered":true,"refused":{"effect_committed":{"spans":1,"missing":["counter"]}}}"#,
        )
    });
    assert_eq!(verdict(&twice, "single-effect").0, Verdict::Fail);
    // A violation the refused rows could remove is unknown.
    let ack_first = edited(variants::ack_before_commit(), |t| {
        run_end(
            t,
            r#"{"recovered":true,"refused":{"effect_committed":{"spans":1,"missing":["store_rev"]}}}"#,
        )
    });
    assert_eq!(verdict(&ack_first, "ack-after-commit").0, Verdict::Unknown);
    assert_eq!(
        verdict(&variants::ack_before_commit(), "ack-after-commit").0,
        Verdict::Fail
    );
}

#[test]
fn unmapped_spans_make_no_declared_kind_with_zero_rows_evidence() {
    let no_acks = |t: &mut Vec<Event>| {
        t.retain(|e| e.kind != Acked);
        declare_all(t);
    };
    // Declared and no unmapped span: no ACK at all is evidence, and nothing was ACKed early.
    assert_eq!(
        verdict(&edited(lab(), no_acks), "ack-after-commit").0,
        Verdict::Pass
    );
    let t = edited(lab(), |t| {
        no_acks(t);
        run_end(
            t,
            r#"{"recovered":true,"unmapped":{"spans":4,"names":["GET /health","orders ack"]}}"#,
        );
    });
    let (v, said) = verdict(&t, "ack-after-commit");
    assert_eq!(v, Verdict::Unknown, "{said}");
    assert!(
        said.contains("4 span(s) (GET /health, orders ack) mapped to no kind"),
        "{said}"
    );
    // A kind with rows stays evidence.
    assert_eq!(verdict(&t, "single-effect").0, Verdict::Pass);
    // The passes the contract's table gives a note keep it: nothing of that kind happened.
    assert_eq!(
        verdict(&t, "external-single-effect"),
        (Verdict::Pass, "no external calls recorded".to_string())
    );
}
