//! Wire faults on a team's own service (the Python example: SQLite, a Redis Stream), carried out
//! by the recorder's proxy between each process and each service, at the step that calls for
//! them: a publish whose answer was lost is published again and suppressed (valid), and catches a
//! worker that dedups on the broker's entry id; an ACK that never arrives is delivered again and
//! suppressed, and catches a worker without dedup; a publish request that never arrives is
//! published again (valid), and catches a relay that marks a publish that raised; a partition of
//! one worker is survived. The fault rows name the fault, the process and the service, and say
//! what was dropped.

use std::path::{Path, PathBuf};

use crate::common::{self, output_text, rows};
use outbox_analyzer::check::{analyse, RunVerdict, Verdict};
use outbox_trace::{FaultKind, Kind, Step};

/// The example copied into `dir` without its scenarios: one `default` scenario, no fault but
/// the one a test adds.
fn example(dir: &Path) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let path = dir.join("outbox-system.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let calm = text.split("[[scenarios]]").next().unwrap().to_string();
    std::fs::write(&path, calm).unwrap();
    path
}

/// Runs one scenario of the example with `fault` and `bug`; its verdict, the invariants it
/// failed, and its rows.
fn under(fault: &str, bug: &str) -> (RunVerdict, Vec<&'static str>, Vec<outbox_trace::Event>) {
    let dir = tempfile::tempdir().unwrap();
    let env = format!("BUG={bug}");
    let system = example(dir.path());
    let (output, out) = common::record_system(
        dir.path(),
        &system,
        &["--tasks", "12", "--env", &env, "--fault", fault],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    let failed = report.scenarios[0]
        .outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect();
    let events = outbox_trace::read_trace(&out).unwrap().events;
    (report.verdict, failed, events)
}

fn wire_rows(events: &[outbox_trace::Event]) -> Vec<(FaultKind, Option<String>, Option<String>)> {
    rows(events, Kind::Fault)
        .into_iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) => Some((f.fault, f.target, f.service)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_lost_publish_reply_is_published_again_and_suppressed_and_catches_entry_id_dedup() {
    let fault = "drop replies relay redis after publish_attempt 3 for 6s";
    let (verdict, failed, events) = under(fault, "");
    assert_eq!(verdict, RunVerdict::Valid, "{failed:?}");
    assert_eq!(
        wire_rows(&events),
        [(
            FaultKind::DropReplies,
            Some("relay".into()),
            Some("redis".into())
        )]
    );
    assert!(
        !rows(&events, Kind::PublishUnacked).is_empty(),
        "the relay heard nothing"
    );
    assert!(
        rows(&events, Kind::PublishAttempt).len() > 12,
        "a second copy"
    );
    assert!(!rows(&events, Kind::DuplicateSuppressed).is_empty());
    let dropped: Vec<_> = rows(&events, Kind::Fault)
        .into_iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) => Some((f.dropped_bytes, f.resets, f.duration_ms)),
            _ => None,
        })
        .collect();
    assert!(
        matches!(dropped[..], [(Some(b), Some(r), Some(ms))] if b > 0 && r >= 1 && ms >= 5_900),
        "the reply's bytes were dropped, the connection reset after 6 s: {dropped:?}"
    );
    let (verdict, failed, _) = under(fault, "dedup-on-entry-id");
    assert_eq!(verdict, RunVerdict::Invalid);
    assert!(failed.contains(&"single-effect"), "{failed:?}");
}

#[test]
fn a_lost_ack_is_delivered_again_and_suppressed_and_catches_a_worker_without_dedup() {
    let fault = "drop requests worker redis after effect_committed 3 for 6s";
    let (verdict, failed, events) = under(fault, "");
    assert_eq!(verdict, RunVerdict::Valid, "{failed:?}");
    assert!(wire_rows(&events)
        .iter()
        .any(|(k, _, s)| *k == FaultKind::DropRequests && s.as_deref() == Some("redis")));
    assert!(!rows(&events, Kind::Redelivered).is_empty());
    let (verdict, failed, _) = under(fault, "no-dedup");
    assert_eq!(verdict, RunVerdict::Invalid);
    assert!(failed.contains(&"single-effect"), "{failed:?}");
}

#[test]
fn a_lost_publish_request_is_published_again_and_catches_a_relay_that_marks_on_timeout() {
    let fault = "drop requests relay redis after publish_attempt 3 for 6s";
    let (verdict, failed, events) = under(fault, "");
    assert_eq!(verdict, RunVerdict::Valid, "{failed:?}");
    assert!(!rows(&events, Kind::PublishUnacked).is_empty());
    let (verdict, failed, _) = under(fault, "mark-on-timeout");
    assert_eq!(verdict, RunVerdict::Invalid);
    assert!(failed.contains(&"no-lost-task"), "{failed:?}");
}

#[test]
fn a_partition_of_one_worker_is_survived() {
    let (verdict, failed, events) = under("partition worker-2 redis at 1s for 4s", "");
    assert_eq!(verdict, RunVerdict::Valid, "{failed:?}");
    assert_eq!(
        wire_rows(&events),
        [(
            FaultKind::Partition,
            Some("worker-2".into()),
            Some("redis".into())
        )]
    );
}
