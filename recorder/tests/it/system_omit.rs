//! `recorder run --system` on a service that reports less than the contract's columns: the Python
//! example with `OUTBOX_OMIT`, which leaves `outbox.*` attributes off its spans as a service that
//! does not have them would. Without positions or delivery counts (a RabbitMQ-like broker) the
//! verdicts still decide: the reference is valid, its planted bugs fail. Without `outbox.kind`,
//! `outbox.store_rev` or `outbox.task_id` the recorder counts the spans it refused or could not
//! map, and the analyzer fails nothing, says `unknown` (exit 3) and says why.

use crate::common::{self, output_text, rows};

use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, Invariant, Report, RunVerdict, Verdict};
use outbox_trace::Kind;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system.toml")
}

/// Runs the example's scenario `scenario` with the environment `env` (`KEY=VALUE` each) and the
/// extra faults `faults`; returns the report, its text and the trace's events.
fn run(
    scenario: &str,
    env: &[&str],
    faults: &[&str],
) -> (Report, String, Vec<outbox_trace::Event>) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--scenario", scenario];
    for e in env {
        args.extend(["--env", e]);
    }
    for f in faults {
        args.extend(["--fault", f]);
    }
    let (output, out) = common::record_system(dir.path(), &example(), &args);
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    let mut text = Vec::new();
    outbox_analyzer::explain::text::write(&report, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let events = outbox_trace::read_trace(&out).unwrap().events;
    (report, text, events)
}

/// The invariants that failed, by id.
fn failed(report: &Report) -> Vec<&'static str> {
    report
        .scenarios
        .iter()
        .flat_map(|s| &s.outcomes)
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect()
}

const KILL_WORKER: &str = "worker-killed-before-ack";

#[test]
fn system_without_positions_the_reference_is_valid() {
    for omit in ["OUTBOX_OMIT=broker_seq", "OUTBOX_OMIT=broker_seq,attempt"] {
        let (report, text, events) = run(KILL_WORKER, &[omit], &[]);
        assert_eq!(report.verdict, RunVerdict::Valid, "{omit}: {text}");
        // The data is there, without the columns: acks and deliveries without positions.
        let acks = rows(&events, Kind::PublishAcked);
        assert!(!acks.is_empty() && acks.iter().all(|e| e.broker_seq.is_none()));
        let delivered = rows(&events, Kind::Delivered);
        assert!(delivered.iter().all(|e| e.broker_seq.is_none()), "{omit}");
        if omit.contains("attempt") {
            assert!(delivered.iter().all(|e| e.attempt.is_none()));
        }
        // The kill landed and the decisions rest on rows, not on their absence.
        assert!(!rows(&events, Kind::Crash).is_empty(), "{omit}");
        for o in report.scenarios.iter().flat_map(|s| &s.outcomes) {
            assert_eq!(o.verdict, Verdict::Pass, "{omit}: {o:?}");
        }
    }
}

#[test]
fn system_without_positions_a_worker_without_dedup_fails_single_effect() {
    let env = ["OUTBOX_OMIT=broker_seq,attempt", "BUG=no-dedup"];
    let (report, text, _) = run(KILL_WORKER, &env, &[]);
    assert_eq!(report.verdict, RunVerdict::Invalid, "{text}");
    assert!(failed(&report).contains(&"single-effect"), "{text}");
}

#[test]
fn system_without_positions_a_relay_that_marks_first_fails_no_lost_task() {
    let env = ["OUTBOX_OMIT=broker_seq,attempt", "BUG=mark-first"];
    let (report, text, events) = run(
        "relay-killed-before-mark",
        &env,
        &["kill relay after outbox_marked"],
    );
    assert_eq!(report.verdict, RunVerdict::Invalid, "{text}");
    assert!(failed(&report).contains(&"no-lost-task"), "{text}");
    // It ended recovered: `quiet` waits for nothing left to move, not for every task done.
    let end = common::run_end(rows(&events, Kind::RunEnd)[0]);
    assert_eq!(end.recovered, Some(true), "{end:?}");
}

#[test]
fn system_without_a_counter_only_counter_exact_is_undecided() {
    // Most services keep no single counter: their commits carry no amount and no counter.
    let (mut report, text, events) = run(KILL_WORKER, &["OUTBOX_OMIT=amount,counter"], &[]);
    let commits = rows(&events, Kind::EffectCommitted);
    assert!(!commits.is_empty(), "{text}");
    assert!(commits.iter().all(|e| e.counter.is_none()), "{text}");
    let end = common::run_end(rows(&events, Kind::RunEnd)[0]);
    assert!(
        end.refused.is_empty(),
        "nothing refused for want of a counter: {end:?}"
    );
    let outcomes: Vec<_> = report.scenarios.iter().flat_map(|s| &s.outcomes).collect();
    for o in &outcomes {
        let expected = if o.invariant == Invariant::CounterExact {
            Verdict::Unknown
        } else {
            Verdict::Pass
        };
        assert_eq!(o.verdict, expected, "{}: {text}", o.invariant.id());
    }
    report.skip(&[Invariant::CounterExact]);
    assert_eq!(report.verdict, RunVerdict::Valid, "{text}");
    let mut skipped = Vec::new();
    outbox_analyzer::explain::text::write(&report, &mut skipped).unwrap();
    let skipped = String::from_utf8(skipped).unwrap();
    assert!(skipped.contains("counter-exact skipped"), "{skipped}");
}

#[test]
fn system_without_kinds_or_store_numbers_or_tasks_nothing_fails_and_check_says_why() {
    // Without a kind or a task id a span is no step (refused, and counted); without store_rev
    // it is a row all the same, and only the invariants that order by it are undecided.
    for (omit, says, refused) in [
        ("OUTBOX_OMIT=kind", "refused for want of kind", true),
        ("OUTBOX_OMIT=store_rev", "no store_rev", false),
        ("OUTBOX_OMIT=task_id", "refused for want of task_id", true),
    ] {
        let (report, text, events) = run(KILL_WORKER, &[omit], &[]);
        assert!(failed(&report).is_empty(), "{omit}: {text}");
        assert_eq!(report.verdict, RunVerdict::Unknown, "{omit}: {text}");
        assert_eq!(
            outbox_analyzer::cli::exit::Exit::from(report.verdict) as i32,
            3,
            "{omit}"
        );
        assert!(text.contains(says), "{omit}: {text}");
        assert!(!text.contains("spans were lost"), "{omit}: {text}");
        // The recorder counted what it refused in run_end.
        let end = common::run_end(rows(&events, Kind::RunEnd)[0]);
        assert_eq!(end.spans_dropped(), refused, "{omit}: {end:?}");
    }
}
