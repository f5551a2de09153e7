//! What a run tried, on a team's own service (the Python example): every named fault is counted
//! in `run_end.detail.faults`, one that never fired is said on one line with the reason the shape
//! gives; a service's restart and pause follow a step of the role they name; `--chaos` arms only
//! what the roles reported; the shape of what each role reported is in `run_end.detail.shape`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{self, output_text, rows};
use outbox_analyzer::check::{analyse, RunVerdict};
use outbox_trace::detail::RunEnd;
use outbox_trace::{Event, FaultKind, Kind, Step};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system.toml")
}

fn run_end(events: &[Event]) -> RunEnd {
    let ends = rows(events, Kind::RunEnd);
    assert_eq!(ends.len(), 1, "one scenario");
    match common::step(ends[0]) {
        Step::RunEnd(end) => end,
        _ => unreachable!(),
    }
}

#[test]
fn a_named_fault_that_never_fired_is_counted_and_said_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &example(),
        &[
            "--scenario",
            "worker-killed-before-ack",
            "--tasks",
            "8",
            "--fault",
            "kill worker after outbox_marked",
            "--fault",
            "kill worker after effect_committed 99",
        ],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in [
        "fault `kill worker after outbox_marked` never fired: worker reported no outbox_marked",
        "fault `kill worker after effect_committed 99` never fired: only 8 effect_committed spans \
         from worker",
    ] {
        assert!(stderr.contains(line), "{line}\n{stderr}");
    }
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let end = run_end(&events);
    let fired: Vec<(&str, u64)> = end
        .faults
        .iter()
        .map(|f| (f.spec.as_str(), f.fired))
        .collect();
    assert_eq!(
        fired,
        [
            ("kill worker after effect_committed", 1),
            ("kill worker after outbox_marked", 0),
            ("kill worker after effect_committed 99", 0),
        ]
    );
    assert!(end.faults[0].first_ms.is_some() && end.faults[0].why.is_none());
    // The shape: what each role reported, with its gaps.
    let worker = &end.shape["worker"];
    assert!(worker.kinds["delivered"].count >= 8, "{worker:?}");
    assert!(worker.kinds["delivered"].gap_median_ms.is_some());
    assert!(!worker.kinds.contains_key("outbox_marked"));
    assert!(end.shape["relay"].kinds.contains_key("outbox_marked"));
}

#[test]
fn a_service_restart_and_pause_follow_the_step_they_name_and_the_example_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &example(),
        &[
            "--scenario",
            "worker-killed-before-ack",
            "--tasks",
            "12",
            "--fault",
            "restart redis after relay publish_acked 3",
            "--fault",
            "pause redis after worker-2 delivered 2 for 1500ms",
        ],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let faults: Vec<(FaultKind, Option<String>, u64)> = rows(&events, Kind::Fault)
        .into_iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) => Some((f.fault, f.service, f.duration_ms.unwrap_or(0))),
            _ => None,
        })
        .collect();
    assert!(
        faults.contains(&(FaultKind::ServiceRestart, Some("redis".into()), 0)),
        "{faults:?}"
    );
    assert!(
        faults.contains(&(FaultKind::ServicePause, Some("redis".into()), 1500)),
        "{faults:?}"
    );
    // The restart came right after the relay's third publish_acked: no span of the relay
    // between that step and the fault row.
    let third = events
        .iter()
        .filter(|e| e.kind == Kind::PublishAcked && e.actor == "relay")
        .nth(2)
        .expect("three publish ACKs");
    let restart = rows(&events, Kind::Fault)
        .into_iter()
        .find(|e| matches!(common::step(e), Step::Fault(f) if f.fault == FaultKind::ServiceRestart))
        .unwrap();
    assert!(restart.seq > third.seq);
    assert!(
        !events
            .iter()
            .any(|e| e.actor == "relay" && e.seq > third.seq && e.seq < restart.seq),
        "the relay took no step between its third publish ACK and the restart"
    );
    let end = run_end(&events);
    assert!(end.faults.iter().all(|f| f.fired == 1), "{:?}", end.faults);
    let report = analyse(&[out]).expect("the trace keeps the contract");
    assert_eq!(report.verdict, RunVerdict::Valid);
}

#[test]
fn chaos_arms_only_the_kinds_each_role_reported_and_says_what_fired() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &example(),
        &["--chaos", "5", "--tasks", "16", "--env", "BUG=no-dedup"],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let reported: BTreeSet<(String, String)> = events
        .iter()
        .filter(|e| !["recorder", "faults", "observer"].contains(&e.actor.as_str()))
        .map(|e| {
            let role = e.actor.split('-').next().unwrap().to_string();
            (role, e.kind.as_str().to_string())
        })
        .collect();
    let end = run_end(&events);
    let armed = end.chaos.expect("the chaos report").armed;
    assert!(!armed.is_empty());
    for a in &armed {
        assert!(
            reported.contains(&(a.role.clone(), a.kind.clone())),
            "{} armed on {} {}, which it never reported",
            a.fault,
            a.role,
            a.kind
        );
    }
    assert!(armed.iter().any(|a| a.fired > 0), "{armed:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("chaos armed"), "{stderr}");
}

#[test]
fn a_wire_fault_on_a_service_of_another_protocol_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let (output, _) = common::record_system(
        dir.path(),
        &example(),
        &["--fault", "lose puback relay redis after publish_attempt 3"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r#"give [services.redis] wire = "nats" (it says "redis")"#),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
