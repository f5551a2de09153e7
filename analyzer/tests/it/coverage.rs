//! What a scenario tried (`run_end.detail.faults`): a named fault that never fired leaves a valid
//! scenario `unknown` (exit 3) with a line naming it and why; a violation found anyway is still
//! invalid (exit 1); searched and drawn faults that never fired are reported, not judged; a trace
//! without the list is judged as before. The streamed check and the whole-file model agree.

use assert_cmd::Command;
use outbox_analyzer::check::RunVerdict;
use outbox_trace::{Event, Kind};

use crate::common::{check, ev, lab, write, Set};

/// The valid lab trace with its `run_start` naming `named`, searching `searched`, and its
/// `run_end` listing `faults` as `(spec, fired, why)`.
fn with_faults(named: &[&str], searched: &[&str], faults: &[(&str, u64, &str)]) -> Vec<Event> {
    let mut events = lab();
    let start = serde_json::json!({"tasks": 3, "faults": named, "searched": searched});
    events[0] = ev(Kind::RunStart, "recorder").detail(&start.to_string());
    let faults: Vec<serde_json::Value> = faults
        .iter()
        .map(|(spec, fired, why)| {
            let mut f = serde_json::json!({"spec": spec, "fired": fired});
            if !why.is_empty() {
                f["why"] = (*why).into();
            }
            f
        })
        .collect();
    let end = serde_json::json!({"recovered": true, "faults": faults});
    let last = events.len() - 1;
    events[last] = ev(Kind::RunEnd, "recorder").detail(&end.to_string());
    events
}

fn analyzer_check(events: &[Event]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.parquet", events);
    let output = Command::cargo_bin("analyzer")
        .unwrap()
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

const NEVER: (&str, u64, &str) = (
    "kill worker after outbox_marked",
    0,
    "worker reported no outbox_marked",
);

#[test]
fn a_named_fault_that_never_fired_makes_a_valid_scenario_unknown_and_says_why() {
    let events = with_faults(&["kill worker after outbox_marked"], &[], &[NEVER]);
    assert_eq!(check(&events).verdict, RunVerdict::Unknown);
    let (code, out) = analyzer_check(&events);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains(
            "  fault kill worker after outbox_marked: never fired: worker reported no outbox_marked"
        ),
        "{out}"
    );
    assert!(
        out.contains("  single-effect pass"),
        "the invariant lines stay: {out}"
    );
}

#[test]
fn a_violation_found_anyway_is_still_invalid() {
    let mut events = with_faults(&["kill worker after outbox_marked"], &[], &[NEVER]);
    // A second effect of evt-1: a duplicate.
    let at = events.len() - 2;
    events.insert(
        at,
        ev(Kind::EffectCommitted, "worker")
            .task("t-1")
            .event("evt-1")
            .amount(2, 12)
            .rev(40),
    );
    assert_eq!(check(&events).verdict, RunVerdict::Invalid);
    assert_eq!(analyzer_check(&events).0, 1);
}

#[test]
fn searched_and_drawn_faults_that_never_fired_are_reported_not_judged() {
    let events = with_faults(
        &["kill relay after publish_acked"],
        &["pause worker after acked for 5s"],
        &[
            ("kill relay after publish_acked", 1, ""),
            ("pause worker after acked for 5s", 0, "only 1 acked span"),
            ("kill api after task_accepted 7", 0, ""),
        ],
    );
    assert_eq!(check(&events).verdict, RunVerdict::Valid);
    let (code, out) = analyzer_check(&events);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "  faults: 3 tried, 1 fired; not reached, not judged: pause worker after acked for 5s \
             (searched), kill api after task_accepted 7 (drawn)"
        ),
        "{out}"
    );
}

#[test]
fn a_trace_without_the_list_and_a_named_fault_that_fired_are_judged_as_before() {
    assert_eq!(check(&lab()).verdict, RunVerdict::Valid);
    let (code, out) = analyzer_check(&lab());
    assert_eq!(code, 0);
    assert!(!out.contains("faults:"), "{out}");
    let fired = with_faults(
        &["kill worker after outbox_marked"],
        &[],
        &[("kill worker after outbox_marked", 2, "")],
    );
    assert_eq!(check(&fired).verdict, RunVerdict::Valid);
}

/// A scenario `s` that could not run, then the valid lab scenario as `s-retry`, whose
/// `run_start` says it tries `s` again when `retry_of` is given.
fn could_not_run_then(retry_of: Option<&str>, reason: &str) -> Vec<Event> {
    let named = |kind, detail: &str| {
        let mut e = ev(kind, "recorder").detail(detail);
        e.scenario = "s".into();
        e
    };
    let end = serde_json::json!({"recovered": false, "reason": reason});
    let mut events = vec![
        named(Kind::RunStart, r#"{"tasks":3}"#),
        named(Kind::RunEnd, &end.to_string()),
    ];
    let mut again = lab();
    let start = match retry_of {
        Some(of) => serde_json::json!({"tasks": 3, "retry_of": of}),
        None => serde_json::json!({"tasks": 3}),
    };
    again[0] = ev(Kind::RunStart, "recorder").detail(&start.to_string());
    for e in &mut again {
        e.scenario = "s-retry".into();
    }
    events.extend(again);
    events
}

#[test]
fn a_scenario_that_could_not_run_and_was_tried_again_is_left_out_of_the_verdict() {
    let reason = "could not run: no task reached the service within 10s";
    let report = check(&could_not_run_then(Some("s"), reason));
    assert_eq!(report.verdict, RunVerdict::Valid);
    assert_eq!(report.scenarios[0].verdict, RunVerdict::Unknown);
    assert_eq!(report.scenarios[0].retried_as.as_deref(), Some("s-retry"));
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "t.parquet",
        &could_not_run_then(Some("s"), reason),
    );
    let out = Command::cargo_bin("analyzer")
        .unwrap()
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("note: could not run; tried again as s-retry")
            && text.contains("1 valid, 0 invalid, 0 unknown, 1 could not run and were tried again"),
        "{text}"
    );

    // Not tried again, or "tried again" after a scenario that did run: it counts.
    let report = check(&could_not_run_then(None, reason));
    assert_eq!(report.verdict, RunVerdict::Unknown);
    let report = check(&could_not_run_then(Some("s"), "deadline"));
    assert_eq!(report.verdict, RunVerdict::Unknown);
    assert!(report.scenarios[0].retried_as.is_none());
}
