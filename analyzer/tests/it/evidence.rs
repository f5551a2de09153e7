//! No verdict without evidence, and rows lost against the store: traces that lack a kind an
//! invariant needs, or whose `observed` row shows the store holding more than the trace, each
//! with the verdict and reason every invariant concerned must give. The same traces are in the
//! SQL agreement corpus (`sql.rs`), so the text, JSON and SQL outputs say the same.

use crate::common::*;
use outbox_analyzer::check::Verdict;
use outbox_trace::{Event, Kind, Kind::*};

/// The lab trace edited by `f`.
fn edit(f: impl FnOnce(&mut Vec<Event>)) -> Vec<Event> {
    let mut t = lab();
    f(&mut t);
    t
}

fn without(kinds: &[Kind]) -> impl FnOnce(&mut Vec<Event>) + '_ {
    move |t| t.retain(|e| !kinds.contains(&e.kind))
}

fn set_observed(t: &mut [Event], detail: &str) {
    let at = find(t, Observed, None);
    t[at].detail = Some(detail.into());
}

/// evt-3 is delivered, committed and ACKed in the store, but the trace lost those rows.
fn third_lost(t: &mut Vec<Event>) {
    t.retain(|e| {
        e.event_id.as_deref() != Some("evt-3")
            || !matches!(e.kind, Delivered | EffectCommitted | Acked)
    });
    set_observed(
        t,
        r#"{"stream_messages":3,"counter":10,"results":3,"dedup_keys":3,"tasks_done":3}"#,
    );
}

/// The worker's first life ends without its crash row, and a second begins.
fn lossy_worker(t: &mut Vec<Event>) {
    let at = find(t, Observed, None);
    t.insert(at, ev(Restart, "worker").inc(1));
}

/// A stock per item: evt-1 (2) and evt-3 (5) move `apple` from 10, evt-2 (3) moves `pear` from
/// 5; the observer reads both.
#[allow(clippy::ptr_arg)] // the signature of every edit, some of which push rows
fn per_key(t: &mut Vec<Event>) {
    t[0].detail = Some(r#"{"tasks":3,"counter_start":{"apple":10,"pear":5}}"#.into());
    for (e, key, counter) in [
        ("evt-1", "apple", 12),
        ("evt-2", "pear", 8),
        ("evt-3", "apple", 17),
    ] {
        let at = find(t, EffectCommitted, Some(e));
        t[at].counter_key = Some(key.into());
        t[at].counter = Some(counter);
    }
    set_observed(
        t,
        r#"{"stream_messages":3,"counter":{"apple":17,"pear":8},"results":3,"dedup_keys":3}"#,
    );
}

fn set_run_end(t: &mut [Event], detail: &str) {
    let at = find(t, RunEnd, None);
    t[at].detail = Some(detail.into());
}

/// The worker's reply to evt-3's commit was lost by the scenario's own fault: its retry found
/// the dedup key and suppressed, without reporting the commit it found.
fn reply_lost(t: &mut Vec<Event>) {
    let at = find(t, EffectCommitted, Some("evt-3"));
    t[at] = ev(DuplicateSuppressed, "worker").task("t-3").event("evt-3");
    t.insert(
        at,
        ev(Fault, "faults")
            .detail(r#"{"fault":"lose-commit-reply","target":"postgres","dropped_messages":1}"#),
    );
    set_observed(
        t,
        r#"{"stream_messages":3,"counter":10,"results":3,"dedup_keys":3,"tasks_done":3}"#,
    );
}

/// The traces, by name.
pub fn corpus() -> Vec<(&'static str, Vec<Event>)> {
    vec![
        (
            "kindless-refused",
            edit(|t| {
                third_lost(t);
                set_run_end(
                    t,
                    r#"{"recovered":true,"refused":{"(none)":{"spans":2,"missing":["kind"]}}}"#,
                );
            }),
        ),
        (
            "wire-unread",
            edit(|t| {
                set_run_end(
                    t,
                    r#"{"recovered":true,"refused":{"effect_committed":{"spans":1,"missing":[],"reasons":["a fault dropped some of its bytes and the reader lost its place"]}}}"#,
                );
            }),
        ),
        (
            "interrupted",
            edit(|t| {
                set_observed(t, r#"{"stream_messages":3,"counter":12,"results":4}"#);
                set_run_end(t, r#"{"recovered":false,"reason":"interrupted"}"#);
            }),
        ),
        (
            "interrupted-step",
            edit(|t| {
                set_run_end(t, r#"{"recovered":false,"reason":"interrupted"}"#);
                let at = find(t, EffectCommitted, Some("evt-2"));
                t[at].counter = Some(6);
            }),
        ),
        (
            "no-run-end",
            edit(|t| {
                without(&[RunEnd])(t);
                set_observed(t, r#"{"stream_messages":3,"counter":12,"results":4}"#);
            }),
        ),
        ("reply-lost", edit(reply_lost)),
        (
            "reply-lost-applied-again",
            edit(|t| {
                reply_lost(t);
                set_observed(
                    t,
                    r#"{"stream_messages":3,"counter":15,"results":4,"dedup_keys":3,"tasks_done":3}"#,
                );
            }),
        ),
        ("counter-per-key", edit(per_key)),
        (
            "counter-per-key-step",
            edit(|t| {
                per_key(t);
                let at = find(t, EffectCommitted, Some("evt-2"));
                t[at].counter = Some(9);
            }),
        ),
        (
            "counter-per-key-final",
            edit(|t| {
                per_key(t);
                set_observed(
                    t,
                    r#"{"stream_messages":3,"counter":{"apple":18,"pear":8},"results":3,"dedup_keys":3}"#,
                );
            }),
        ),
        (
            "counter-per-key-unread",
            edit(|t| {
                per_key(t);
                set_observed(
                    t,
                    r#"{"stream_messages":3,"counter":{"apple":17},"results":3}"#,
                );
            }),
        ),
        (
            "counter-number-for-keys",
            edit(|t| {
                per_key(t);
                t[0].detail = Some(r#"{"tasks":3,"counter_start":10}"#.into());
            }),
        ),
        (
            "no-commit-rows",
            edit(|t| {
                without(&[EffectCommitted, DuplicateSuppressed])(t);
                set_observed(t, r#"{"stream_messages":3}"#);
            }),
        ),
        ("no-ack-rows", edit(without(&[Acked]))),
        (
            "declared-no-ack-rows",
            edit(|t| {
                without(&[Acked])(t);
                let kinds: Vec<String> = Kind::ALL.iter().map(|k| format!("\"{k}\"")).collect();
                t[0].detail = Some(format!(r#"{{"tasks":3,"records":[{}]}}"#, kinds.join(",")));
            }),
        ),
        ("no-mark-rows", edit(without(&[OutboxMarked]))),
        ("no-puback-rows", edit(without(&[PublishAcked]))),
        ("no-intent-rows", edit(without(&[IntentRecorded]))),
        ("no-acceptance-rows", edit(without(&[TaskAccepted]))),
        ("store-holds-more", edit(third_lost)),
        (
            "store-holds-more-early-ack",
            edit(|t| {
                third_lost(t);
                let commit = find(t, EffectCommitted, Some("evt-2"));
                let ack = t.remove(find(t, Acked, Some("evt-2")));
                t.insert(commit, ack);
            }),
        ),
        (
            "store-holds-more-lossy",
            edit(|t| {
                third_lost(t);
                lossy_worker(t);
            }),
        ),
        (
            "store-holds-fewer-lossy",
            edit(|t| {
                lossy_worker(t);
                set_observed(t, r#"{"counter":10,"results":2,"dedup_keys":4}"#);
            }),
        ),
        (
            "store-holds-more-intents",
            edit(|t| {
                t.remove(find(t, IntentRecorded, Some("evt-1")));
                set_observed(
                    t,
                    r#"{"stream_messages":3,"counter":10,"results":3,"outbox_published":3,"outbox_pending":0}"#,
                );
            }),
        ),
        (
            "more-lost-tasks-than-missing",
            edit(|t| {
                t.retain(|e| {
                    !matches!(e.event_id.as_deref(), Some("evt-2" | "evt-3"))
                        || !matches!(
                            e.kind,
                            Delivered | Redelivered | EffectCommitted | DuplicateSuppressed | Acked
                        )
                });
                set_observed(
                    t,
                    r#"{"stream_messages":3,"counter":2,"results":1,"tasks_done":2}"#,
                );
            }),
        ),
    ]
}

/// `(trace, invariant, verdict, reason)` for every invariant these traces are about.
const EXPECTED: &[(&str, &str, Verdict, &str)] = &[
    (
        "kindless-refused",
        "observed-agrees",
        Verdict::Unknown,
        "2 kind-less span(s) were refused for want of kind",
    ),
    (
        "kindless-refused",
        "single-effect",
        Verdict::Unknown,
        "refused for want of kind",
    ),
    (
        "wire-unread",
        "single-effect",
        Verdict::Unknown,
        "1 effect_committed span(s) were refused (a fault dropped some of its bytes and the reader lost its place)",
    ),
    ("wire-unread", "mark-after-puback", Verdict::Pass, ""),
    (
        "interrupted",
        "observed-agrees",
        Verdict::Unknown,
        "the scenario was interrupted: the store was read while",
    ),
    (
        "interrupted",
        "counter-exact",
        Verdict::Unknown,
        "the scenario was interrupted",
    ),
    ("interrupted", "single-effect", Verdict::Pass, ""),
    ("interrupted-step", "counter-exact", Verdict::Fail, ""),
    (
        "no-run-end",
        "observed-agrees",
        Verdict::Unknown,
        "the scenario has no run_end row",
    ),
    (
        "no-run-end",
        "counter-exact",
        Verdict::Unknown,
        "the scenario has no run_end row",
    ),
    (
        "reply-lost",
        "observed-agrees",
        Verdict::Unknown,
        "the lose-commit-reply fault dropped 1 reply(ies), whose commits the trace may not show",
    ),
    ("reply-lost", "single-effect", Verdict::Pass, ""),
    (
        "reply-lost-applied-again",
        "observed-agrees",
        Verdict::Fail,
        "",
    ),
    ("counter-per-key", "counter-exact", Verdict::Pass, ""),
    ("counter-per-key-step", "counter-exact", Verdict::Fail, ""),
    ("counter-per-key-final", "counter-exact", Verdict::Fail, ""),
    (
        "counter-per-key-unread",
        "counter-exact",
        Verdict::Unknown,
        "no observed row with a counter",
    ),
    (
        "counter-number-for-keys",
        "counter-exact",
        Verdict::Fail,
        "",
    ),
    (
        "no-commit-rows",
        "single-effect",
        Verdict::Unknown,
        "the trace records no effect_committed rows",
    ),
    (
        "no-commit-rows",
        "ack-after-commit",
        Verdict::Unknown,
        "the trace records no effect_committed or duplicate_suppressed rows",
    ),
    (
        "no-commit-rows",
        "no-lost-task",
        Verdict::Unknown,
        "the trace records no effect_committed rows",
    ),
    (
        "no-ack-rows",
        "ack-after-commit",
        Verdict::Unknown,
        "the trace records no acked rows",
    ),
    (
        "declared-no-ack-rows",
        "ack-after-commit",
        Verdict::Pass,
        "",
    ),
    (
        "no-mark-rows",
        "mark-after-puback",
        Verdict::Unknown,
        "the trace records no outbox_marked rows",
    ),
    (
        "no-puback-rows",
        "mark-after-puback",
        Verdict::Unknown,
        "the trace records no publish_acked rows",
    ),
    (
        "no-intent-rows",
        "intent-atomic",
        Verdict::Unknown,
        "the trace records no intent_recorded rows",
    ),
    (
        "no-acceptance-rows",
        "intent-atomic",
        Verdict::Unknown,
        "the trace records no task_accepted rows",
    ),
    (
        "no-acceptance-rows",
        "no-lost-task",
        Verdict::Unknown,
        "the trace records no task_accepted rows",
    ),
    (
        "store-holds-more",
        "no-lost-task",
        Verdict::Unknown,
        "the store holds 3 completed tasks, the trace 2 tasks with an effect: the trace lacks rows \
         (a step never reported, or a span never exported); see what to turn off",
    ),
    (
        "store-holds-more",
        "counter-exact",
        Verdict::Unknown,
        "the store holds 3 completed tasks, the trace 2 tasks with an effect",
    ),
    ("store-holds-more", "observed-agrees", Verdict::Fail, ""),
    ("store-holds-more", "single-effect", Verdict::Pass, ""),
    (
        "store-holds-more-early-ack",
        "ack-after-commit",
        Verdict::Unknown,
        "the store holds 3 completed tasks",
    ),
    (
        "store-holds-more-lossy",
        "observed-agrees",
        Verdict::Unknown,
        "the observer read results = 3, the trace counts 2: worker#0 may not have exported its \
         last spans, which would explain it",
    ),
    (
        "store-holds-fewer-lossy",
        "observed-agrees",
        Verdict::Fail,
        "",
    ),
    (
        "store-holds-more-intents",
        "intent-atomic",
        Verdict::Unknown,
        "the store holds 3 outbox rows, the trace 2 intents: the trace lacks rows",
    ),
    (
        "more-lost-tasks-than-missing",
        "no-lost-task",
        Verdict::Fail,
        "",
    ),
];

#[test]
fn each_trace_gets_its_verdict_and_reason() {
    let corpus = corpus();
    for &(name, id, verdict, reason) in EXPECTED {
        let (_, events) = corpus.iter().find(|(n, _)| *n == name).expect("named");
        let report = check(events);
        let o = outcome(&report, id);
        let said = o
            .reason
            .as_ref()
            .map(outbox_analyzer::explain::reason)
            .unwrap_or_default();
        assert_eq!(o.verdict, verdict, "{name}: {id}: {said}");
        assert!(said.contains(reason), "{name}: {id}: {said}");
    }
}

#[test]
fn a_disagreement_the_store_holds_more_of_says_rows_were_lost() {
    let report = check(&edit(third_lost));
    let text = explanation(&report, "observed-agrees");
    assert!(
        text.contains("the store holds more than the trace: the trace lacks rows"),
        "{text}"
    );
    // The kept examples are at most three, with the rest counted.
    let o = outcome(&report, "observed-agrees");
    assert_eq!((o.violations.len(), o.more), (2, 0));
}

#[test]
fn a_counter_per_key_is_stepped_and_totalled_on_its_own() {
    let corpus = corpus();
    let trace = |name: &str| corpus.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let report = check(&trace("counter-per-key-step"));
    let o = outcome(&report, "counter-exact");
    assert_eq!(o.violations.len(), 1, "{o:?}");
    let text = explanation(&report, "counter-exact");
    assert!(text.contains("set counter pear to 9"), "{text}");
    let report = check(&trace("counter-per-key-final"));
    let text = explanation(&report, "counter-exact");
    assert!(
        text.contains("the observer read counter apple = 18"),
        "{text}"
    );
}

#[test]
fn the_lab_recording_is_judged_as_before() {
    only_fails(&check(&lab()), "");
}

#[test]
fn a_skipped_invariant_leaves_the_verdict_and_the_exit_code() {
    use assert_cmd::Command;
    let dir = tempfile::tempdir().unwrap();
    // Every ACK of the no-commit trace is unknown-making; counter-exact without an observed
    // counter too: skipping what cannot be decided leaves what can.
    let mut t = lab();
    let ack = t.remove(find(&t, Acked, Some("evt-3")));
    t.insert(find(&t, EffectCommitted, Some("evt-3")), ack);
    let path = write(dir.path(), "t.parquet", &t);
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("analyzer")
            .unwrap()
            .arg("check")
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, text, _) = run(&[]);
    assert_eq!(code, Some(1), "{text}");
    let (code, text, _) = run(&["--skip", "ack-after-commit"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("\n  ack-after-commit skipped\n"), "{text}");
    assert!(!text.contains("FAIL ack-after-commit"), "{text}");
    assert!(text.contains("verdict: valid"), "{text}");
    let (code, json, _) = run(&[
        "--skip",
        "ack-after-commit",
        "--skip",
        "no-lost-task",
        "--json",
    ]);
    assert_eq!(code, Some(0));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let skipped: Vec<&str> = doc["scenarios"][0]["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["verdict"] == "skipped")
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["ack-after-commit", "no-lost-task"]);
    let (code, _, err) = run(&["--skip", "no-such-invariant"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no invariant `no-such-invariant`"), "{err}");
}

#[test]
fn a_detail_field_of_the_wrong_type_is_bad_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = lab();
    t[0].detail = Some(r#"{"tasks":3,"counter_start":[1,2]}"#.into());
    let path = write(dir.path(), "bad-detail.parquet", &t);
    for command in ["check", "report"] {
        assert_cmd::Command::cargo_bin("analyzer")
            .unwrap()
            .arg(command)
            .arg(&path)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(
                "the row with seq 1: run_start: detail field `counter_start` holds a list",
            ));
    }
}
