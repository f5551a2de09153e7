//! Steps read from the wire: the Node.js example unmodified, its spans switched off with the
//! standard `OTEL_SDK_DISABLED=true`, and `outbox-system-wire.toml` (its system file plus
//! `[steps]`). Every step row then comes from the recorder's proxies; the run is valid, each
//! planted bug is caught by the fault that catches it through spans, and where spans and wire
//! both speak the trace keeps both and the analyzer names a span that claims a commit the wire
//! never carried.

use crate::common::{self, output_text, rows};
use crate::node_postgres::{caught_in, example, failed};

use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, RunVerdict, Verdict};
use outbox_trace::{Event, Kind};

const SPANS_OFF: &str = "OTEL_SDK_DISABLED=true";

/// The wire's system file (the npm packages installed once).
fn wire_file() -> PathBuf {
    example().with_file_name("outbox-system-wire.toml")
}

fn run_wire(dir: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    common::record_system(dir, &wire_file(), args)
}

/// Where a step row was read: its `detail.source`.
fn source(event: &Event) -> Option<String> {
    let mut step = common::step(event);
    step.note_mut().and_then(|n| n.source.take())
}

const STEP_KINDS: [Kind; 8] = [
    Kind::TaskAccepted,
    Kind::IntentRecorded,
    Kind::PublishAttempt,
    Kind::PublishAcked,
    Kind::OutboxMarked,
    Kind::Delivered,
    Kind::EffectCommitted,
    Kind::Acked,
];

#[test]
fn with_spans_off_every_step_is_read_from_the_wire_and_the_run_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--scenario", "calm", "--env", SPANS_OFF, "--tasks", "20"];
    let (output, out) = run_wire(dir.path(), &args);
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "failed: {:?}\n{}",
        failed(&report),
        output_text(&output)
    );
    let unknown: Vec<&str> = report
        .scenarios
        .iter()
        .flat_map(|s| s.outcomes.iter())
        .filter(|o| o.verdict == Verdict::Unknown)
        .map(|o| o.invariant.id())
        .collect();
    assert!(unknown.is_empty(), "unknown: {unknown:?}");
    let events = outbox_trace::read_trace(&out).unwrap().events;
    for kind in STEP_KINDS {
        let found = rows(&events, kind);
        assert!(!found.is_empty(), "no {kind:?} rows");
        assert!(
            found.iter().all(|e| source(e).as_deref() == Some("wire")),
            "{kind:?} rows not all from the wire"
        );
    }
    let effects = rows(&events, Kind::EffectCommitted);
    assert_eq!(effects.len(), 20, "{effects:?}");
    assert!(effects.iter().all(|e| e.store_rev.is_some()
        && e.amount.is_some()
        && e.counter.is_some()
        && e.counter_key.is_some()));
    let publishes = rows(&events, Kind::PublishAcked);
    assert!(publishes
        .iter()
        .all(|e| e.broker_seq.is_some() && e.attempt.is_some()));
    let intents = rows(&events, Kind::IntentRecorded);
    assert!(intents
        .iter()
        .all(|e| e.aggregate_id.is_some() && e.aggregate_seq.is_some()));
}

/// Runs the wire file's `calm` scenario with spans off, `BUG=bug` and `args` up to `tries`
/// times; the analyzer must fail `invariant` in one of them and never say unknown.
#[test]
fn a_database_reached_over_tls_gives_unknown_with_its_reason_never_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--scenario",
        "calm",
        "--env",
        SPANS_OFF,
        "--env",
        "PG_SSL=1",
        "--env",
        "PGSSLMODE=no-verify",
        "--tasks",
        "5",
    ];
    let (output, out) = run_wire(dir.path(), &args);
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(
        report.verdict,
        RunVerdict::Unknown,
        "{}",
        output_text(&output)
    );
    let outcomes: Vec<_> = report.scenarios.iter().flat_map(|s| &s.outcomes).collect();
    assert!(outcomes.iter().all(|o| o.verdict != Verdict::Fail));
    for id in [
        "single-effect",
        "intent-atomic",
        "counter-exact",
        "no-lost-task",
    ] {
        let o = outcomes.iter().find(|o| o.invariant.id() == id).unwrap();
        let said = o.reason.as_ref().map(outbox_analyzer::explain::reason);
        assert_eq!(o.verdict, Verdict::Unknown, "{id}: {said:?}");
        assert!(
            said.as_deref()
                .is_some_and(|r| r.contains("(the connection turned to TLS)")),
            "{id}: {said:?}"
        );
    }
    // NATS is still read: its steps are there, from the wire.
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let delivered = rows(&events, Kind::Delivered);
    assert_eq!(delivered.len(), 5);
    assert!(rows(&events, Kind::EffectCommitted).is_empty());
}

fn caught_on_the_wire(bug: &str, args: &[&str], invariant: &str, tries: u32) {
    let mut all = vec!["--env", SPANS_OFF];
    all.extend_from_slice(args);
    caught_in(&wire_file(), bug, &all, invariant, tries);
}

#[test]
fn from_the_wire_a_mark_before_the_publish_ack_is_caught_by_a_kill_after_the_mark() {
    let fault = ["--fault", "kill relay after outbox_marked"];
    caught_on_the_wire("mark-before-ack", &fault, "mark-after-puback", 1);
}

#[test]
fn from_the_wire_an_ack_before_the_commit_is_caught_by_a_kill_after_the_ack() {
    let fault = ["--fault", "kill worker after acked"];
    caught_on_the_wire("ack-before-commit", &fault, "ack-after-commit", 1);
}

#[test]
fn from_the_wire_a_dedup_check_outside_the_commit_is_caught_by_a_pause() {
    let args = [
        "--env",
        "WORK_MS=600",
        "--fault",
        "pause worker after delivered 3 +250ms for 5s",
    ];
    caught_on_the_wire("racy-dedup", &args, "single-effect", 3);
}

#[test]
fn from_the_wire_a_mark_on_a_publish_timeout_is_caught_by_a_lost_publish_request() {
    let args = [
        "--fault",
        "drop requests relay nats after publish_attempt 3 for 5s",
    ];
    caught_on_the_wire("mark-on-timeout", &args, "no-lost-task", 2);
}

#[test]
fn a_span_that_claims_a_rolled_back_commit_is_named_where_spans_and_wire_both_speak() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--scenario",
        "calm",
        "--env",
        "BUG=rolled-back-span",
        "--tasks",
        "12",
    ];
    let (output, out) = run_wire(dir.path(), &args);
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let effects = rows(&events, Kind::EffectCommitted);
    let by = |from: &str| {
        effects
            .iter()
            .filter(|e| source(e).as_deref() == Some(from))
            .count()
    };
    // Three workers each claimed one commit that was rolled back.
    assert_eq!(by("wire"), 12, "{effects:?}");
    assert_eq!(by("span"), 12 + 3, "{effects:?}");
    let report = analyse(&[out]).expect("the trace keeps the contract");
    assert_eq!(
        failed(&report),
        ["sources-agree"],
        "{}",
        output_text(&output)
    );
}

/// `recorder explore` on the wire's file with spans off: the calm run learns the shape from
/// the wire, and its kills follow the wire's steps.
fn explore_wire(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .arg("explore")
        .arg("--system")
        .arg(wire_file())
        .args(["--env", SPANS_OFF, "--tasks", "10", "--out"])
        .arg(dir.join("explore.parquet"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn explore_learns_the_shape_from_the_wire_and_its_kills_follow_the_wire_s_steps() {
    let dir = tempfile::tempdir().unwrap();
    let output = explore_wire(
        dir.path(),
        &["--only", "kill worker after effect_committed"],
    );
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.contains("kill worker after effect_committed: fired 1, valid"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--env",
        "BUG=ack-before-commit",
        "--only",
        "kill worker after acked",
    ];
    let output = explore_wire(dir.path(), &args);
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL ack-after-commit"), "{text}");
}
