//! Scenarios that read steps from the wire (`run_start.detail.wire_steps`): the wire's rows are
//! judged, the spans' accounts of the same steps only compared with them (`sources-agree`), in
//! the streamed check and the whole-file model alike ([`check`] asserts they agree word for
//! word).

use crate::common::*;
use outbox_analyzer::check::{Reason, Report, Verdict};
use outbox_trace::{Event, Kind::*};

const WIRE: &str = r#"{"source":"wire"}"#;
const SPAN: &str = r#"{"source":"span"}"#;

/// The lab scenario reading its commits from the wire: each `effect_committed` comes from the
/// wire, followed by the worker's span reporting it.
fn wire_lab() -> Vec<Event> {
    let mut t = lab();
    t[0].detail = Some(r#"{"tasks":3,"wire_steps":["effect_committed"]}"#.into());
    let mut out = Vec::new();
    for e in t {
        if e.kind == EffectCommitted {
            out.push(e.clone().detail(WIRE));
            out.push(e.detail(SPAN));
        } else {
            out.push(e);
        }
    }
    out
}

/// The position of the span row reporting the commit of `event`.
fn span_commit(t: &[Event], event: &str) -> usize {
    t.iter()
        .position(|e| {
            e.kind == EffectCommitted
                && e.event_id.as_deref() == Some(event)
                && e.detail.as_deref() == Some(SPAN)
        })
        .expect("a span commit")
}

fn reason(report: &Report) -> Option<Reason> {
    outcome(report, "sources-agree").reason.clone()
}

#[test]
fn agreeing_sources_pass_and_the_spans_are_not_counted_twice() {
    let report = check(&wire_lab());
    only_fails(&report, "(none)");
    assert_eq!(reason(&report), None);
    assert_eq!(report.scenarios[0].figures.effects, 3);
}

#[test]
fn a_span_commit_reported_twice_fails_sources_agree_not_single_effect() {
    let mut t = wire_lab();
    let at = span_commit(&t, "evt-1");
    let again = t[at].clone();
    t.insert(at + 1, again);
    let report = check(&t);
    only_fails(&report, "sources-agree");
    assert_eq!(failing_events(&report, "sources-agree"), ["evt-1"]);
    // The wire's commit, its span, and the extra span right after.
    let wire_seq = at as u64; // seq is the position plus one; the wire row sits just before
    assert_eq!(
        witness_seqs(&report, "sources-agree"),
        [wire_seq, at as u64 + 2]
    );
    let words = explanation(&report, "sources-agree");
    assert!(
        words.contains("effect_committed of evt-1 by worker#0")
            && words.contains("the spans have the extra")
            && words.contains("never crossed the wire"),
        "{words}"
    );
}

#[test]
fn a_span_commit_without_its_wire_commit_fails() {
    let mut t = wire_lab();
    // The worker says it committed evt-9; no COMMIT went over the wire (it was rolled back).
    let at = span_commit(&t, "evt-3") + 1;
    let rolled_back = ev(EffectCommitted, "worker")
        .task("t-9")
        .event("evt-9")
        .amount(1, 11)
        .rev(40)
        .detail(SPAN);
    t.insert(at, rolled_back);
    let report = check(&t);
    only_fails(&report, "sources-agree");
    assert_eq!(failing_events(&report, "sources-agree"), ["evt-9"]);
    assert_eq!(witness_seqs(&report, "sources-agree"), [at as u64 + 1]);
}

/// The wire trace whose worker never reported the commit of evt-3.
fn unreported() -> Vec<Event> {
    let mut t = wire_lab();
    let at = span_commit(&t, "evt-3");
    t.remove(at);
    t
}

#[test]
fn a_wire_commit_the_spans_never_reported_fails_on_a_life_that_lived_on() {
    let t = unreported();
    let report = check(&t);
    only_fails(&report, "sources-agree");
    assert_eq!(failing_events(&report, "sources-agree"), ["evt-3"]);
    let wire = t
        .iter()
        .position(|e| e.kind == EffectCommitted && e.event_id.as_deref() == Some("evt-3"))
        .expect("the wire commit");
    assert_eq!(witness_seqs(&report, "sources-agree"), [wire as u64 + 1]);
    let words = explanation(&report, "sources-agree");
    assert!(
        words.contains("the wire has the extra") && words.contains("never reported"),
        "{words}"
    );
}

#[test]
fn an_unreported_commit_on_a_crashed_life_is_explained() {
    let mut t = unreported();
    let end = t.len() - 2;
    t.insert(end, ev(Crash, "worker").detail(r#"{"point":"kill"}"#));
    let report = check(&t);
    let o = outcome(&report, "sources-agree");
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert_eq!(o.reason, Some(Reason::FaultHitLives { disagreements: 1 }));
    let words = outbox_analyzer::explain::reason(o.reason.as_ref().expect("a note"));
    assert_eq!(words, "1 disagreement(s) on lives a fault hit: not judged");
}

#[test]
fn an_unreported_commit_on_a_life_a_wire_fault_hit_is_explained() {
    let mut t = unreported();
    let end = t.len() - 2;
    let fault = r#"{"fault":"lose-commit-reply","target":"worker","service":"postgres","dropped_messages":0}"#;
    t.insert(end, ev(Fault, "faults").detail(fault));
    let report = check(&t);
    let o = outcome(&report, "sources-agree");
    assert_eq!(o.verdict, Verdict::Pass, "{o:?}");
    assert_eq!(o.reason, Some(Reason::FaultHitLives { disagreements: 1 }));
    // A span's claim the wire lacks on such a life cannot be judged: unknown, never pass.
    let mut t = wire_lab();
    let at = find(&t, EffectCommitted, Some("evt-1"));
    let mut claim = t[at].clone();
    claim.detail = Some(SPAN.into());
    claim.event_id = Some("evt-9".into());
    t.insert(at + 1, claim);
    let end = t.len() - 2;
    t.insert(end, ev(Fault, "faults").detail(fault));
    let o = outcome(&check(&t), "sources-agree").clone();
    assert_eq!(o.verdict, Verdict::Unknown, "{o:?}");
    // The same claim on a life that only crashed is judged: a crash explains no lie.
    let mut t = wire_lab();
    let mut claim = t[at].clone();
    claim.detail = Some(SPAN.into());
    claim.event_id = Some("evt-9".into());
    t.insert(at + 1, claim);
    let end = t.len() - 2;
    t.insert(end, ev(Crash, "worker").detail(r#"{"point":"kill"}"#));
    assert_eq!(outcome(&check(&t), "sources-agree").verdict, Verdict::Fail);
    // A restart of a service every process reaches hits every life then running: unknown.
    let mut t = wire_lab();
    let mut claim = t[at].clone();
    claim.detail = Some(SPAN.into());
    claim.event_id = Some("evt-9".into());
    t.insert(at + 1, claim);
    let end = t.len() - 2;
    let restart = r#"{"fault":"service-restart","target":"nats"}"#;
    t.insert(end, ev(Fault, "faults").detail(restart));
    assert_eq!(
        outcome(&check(&t), "sources-agree").verdict,
        Verdict::Unknown
    );
    // A fault without a service is no wire fault: the disagreement stands.
    let mut t = unreported();
    t.insert(
        end,
        ev(Fault, "faults").detail(r#"{"fault":"pause","target":"worker"}"#),
    );
    assert_eq!(outcome(&check(&t), "sources-agree").verdict, Verdict::Fail);
}

#[test]
fn a_scenario_without_wire_steps_has_one_source() {
    let report = check(&lab());
    only_fails(&report, "(none)");
    assert_eq!(reason(&report), Some(Reason::OneSource));
    // Span rows in a scenario that reads nothing from the wire are judged as any row.
    let mut t = lab();
    let at = find(&t, EffectCommitted, Some("evt-1"));
    t[at].detail = Some(SPAN.into());
    let again = t[at].clone();
    t.insert(at + 1, again);
    let report = check(&t);
    assert_eq!(outcome(&report, "single-effect").verdict, Verdict::Fail);
    assert_eq!(failing_events(&report, "single-effect"), ["evt-1"]);
    assert_eq!(reason(&report), Some(Reason::OneSource));
}

#[test]
fn a_service_without_spans_of_the_wire_steps_has_nothing_to_compare() {
    let mut t = wire_lab();
    t.retain(|e| e.detail.as_deref() != Some(SPAN));
    let report = check(&t);
    only_fails(&report, "(none)");
    assert_eq!(reason(&report), Some(Reason::NoSpanAccounts));
    assert_eq!(
        outbox_analyzer::explain::reason(&Reason::NoSpanAccounts),
        "the service reported none of the steps read from the wire: nothing to compare"
    );
    // The wire's rows are judged: a commit read twice from the wire is a double effect.
    let at = find(&t, EffectCommitted, Some("evt-1"));
    let again = t[at].clone();
    t.insert(at + 1, again);
    let report = check(&t);
    assert_eq!(outcome(&report, "single-effect").verdict, Verdict::Fail);
    assert_eq!(failing_events(&report, "single-effect"), ["evt-1"]);
    assert_eq!(reason(&report), Some(Reason::NoSpanAccounts));
}

#[test]
fn the_text_report_has_a_line_for_sources_agree() {
    let mut t = wire_lab();
    let at = span_commit(&t, "evt-2");
    t.remove(at);
    let report = check(&t);
    let mut out = Vec::new();
    outbox_analyzer::explain::text::write(&report, &mut out).expect("text");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains("  sources-agree FAIL: 1 violation(s)"),
        "{text}"
    );
    assert!(
        text.contains("FAIL sources-agree: event_id evt-2"),
        "{text}"
    );
    assert!(text.contains("source=wire"), "{text}");
}

#[test]
fn a_large_trace_read_from_the_wire_with_spans_checks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain.parquet");
    outbox_analyzer::model::synth::write(&plain, 90_000).expect("synth");
    let events = outbox_trace::read_trace(&plain).expect("read").events;
    let mut wired = Vec::with_capacity(events.len() * 2);
    for e in events {
        match e.kind {
            RunStart => {
                let mut detail: serde_json::Value =
                    serde_json::from_str(e.detail.as_deref().unwrap_or("{}")).expect("json");
                detail["wire_steps"] = serde_json::json!(["effect_committed", "acked"]);
                wired.push(e.detail(&detail.to_string()));
            }
            EffectCommitted | Acked => {
                wired.push(e.clone().detail(WIRE));
                wired.push(e.detail(SPAN));
            }
            _ => wired.push(e),
        }
    }
    let path = write(dir.path(), "wired.parquet", &wired);
    let plain = outbox_analyzer::check::analyse(&[plain]).expect("analyse");
    let whole = outbox_analyzer::check::analyse(std::slice::from_ref(&path)).expect("analyse");
    let streamed = outbox_analyzer::check::check_paths(&[path]).expect("check");
    assert_eq!(whole.verdict, plain.verdict);
    assert_eq!(streamed.verdict, plain.verdict);
    for ((w, s), p) in whole
        .scenarios
        .iter()
        .zip(&streamed.scenarios)
        .zip(&plain.scenarios)
    {
        assert_eq!(w.figures, p.figures, "the spans are not counted");
        for ((wo, so), po) in w.outcomes.iter().zip(&s.outcomes).zip(&p.outcomes) {
            assert_eq!(wo, so);
            if wo.invariant.id() == "sources-agree" {
                assert_eq!(wo.verdict, Verdict::Pass, "{wo:?}");
            } else {
                assert_eq!(
                    (wo.verdict, wo.violations.len()),
                    (po.verdict, po.violations.len())
                );
            }
        }
    }
}
