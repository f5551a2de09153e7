//! `--fault` on the built-in lab: the same specs as a team's system takes, carried out on the
//! lab's actor processes (a kill on a held report, a pause of the only worker) and its services
//! (at a time, or while a step is held), against real etcd + JetStream and SQLite + Redis.

use crate::common;

use common::*;
use outbox_analyzer::check::{analyse, Verdict};
use outbox_trace::{Event, Kind};

/// The invariants that failed in a recorded trace.
fn failed(dir: &std::path::Path) -> Vec<&'static str> {
    let checked = analyse(&[trace_path(dir)]).unwrap();
    checked
        .scenarios
        .iter()
        .flat_map(|s| &s.outcomes)
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect()
}

fn crashes(events: &[Event]) -> Vec<&Event> {
    events.iter().filter(|e| e.kind == Kind::Crash).collect()
}

#[test]
fn a_kill_after_a_step_lands_right_after_that_step_and_the_reference_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &[
            "--backend",
            "etcd-jetstream",
            "--scenario",
            "place-order",
            "--fault",
            "kill worker after effect_committed",
        ],
    );
    let crashes = crashes(&events);
    assert_eq!(crashes.len(), 1, "{crashes:?}");
    let crash = crashes[0];
    assert_eq!(crash_point(crash), "worker:after-effect_committed");
    assert_eq!(crash.actor, "worker");
    // The life's last step is the commit: it died before its ACK.
    let last = events
        .iter()
        .filter(|e| e.actor == "worker" && e.incarnation == crash.incarnation && e.seq < crash.seq)
        .max_by_key(|e| e.seq)
        .unwrap();
    assert_eq!(last.kind, Kind::EffectCommitted);
    // The next life takes the redelivery and suppresses it.
    assert!(events
        .iter()
        .any(|e| e.kind == Kind::Restart && e.actor == "worker"));
    assert!(events.iter().any(|e| e.kind == Kind::DuplicateSuppressed));
    let start = run_start(events.iter().find(|e| e.kind == Kind::RunStart).unwrap());
    assert!(start
        .faults
        .contains(&"kill worker after effect_committed".to_string()));
    assert_eq!(failed(dir.path()), Vec::<&str>::new());
}

#[test]
fn a_kill_after_a_commit_finds_a_worker_without_dedup() {
    let dir = tempfile::tempdir().unwrap();
    record_ok(
        dir.path(),
        &[
            "--backend",
            "etcd-jetstream",
            "--scenario",
            "place-order",
            "--protocol",
            "no-dedup",
            "--fault",
            "kill worker after effect_committed 2",
        ],
    );
    assert!(failed(dir.path()).contains(&"single-effect"));
}

#[test]
fn a_pause_of_the_only_worker_after_a_delivery_fires_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &[
            "--backend",
            "sqlite-redis",
            "--scenario",
            "place-order",
            "--fault",
            "pause worker after delivered for 3s",
        ],
    );
    let pauses: Vec<_> = events.iter().filter(|e| e.kind == Kind::Fault).collect();
    assert_eq!(pauses.len(), 1, "{pauses:?}");
    let pause = fault(pauses[0]);
    assert_eq!(pause.fault, "pause");
    assert_eq!(pause.target.as_deref(), Some("worker"));
    assert_eq!(pause.duration_ms, Some(3000));
    // The pause came after the worker's first delivery, and the work waited for it.
    let delivered = events.iter().find(|e| e.kind == Kind::Delivered).unwrap();
    assert!(pauses[0].seq > delivered.seq);
    let last_effect = events
        .iter()
        .filter(|e| e.kind == Kind::EffectCommitted)
        .map(|e| e.ts_ns)
        .max()
        .unwrap();
    assert!(last_effect - delivered.ts_ns >= 3_000_000_000);
    assert_eq!(failed(dir.path()), Vec::<&str>::new());
}

#[test]
fn timed_faults_hit_the_lab_s_actors_and_services() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &[
            "--backend",
            "sqlite-redis",
            "--scenario",
            "place-order",
            "--fault",
            "kill relay at 10ms",
            "--fault",
            "restart redis at 20ms",
        ],
    );
    assert!(crashes(&events).iter().any(|e| e.actor == "relay"));
    let restarts: Vec<_> = events.iter().filter(|e| e.kind == Kind::Fault).collect();
    assert_eq!(restarts.len(), 1);
    assert_eq!(fault(restarts[0]).fault, "broker-restart");
    assert_eq!(failed(dir.path()), Vec::<&str>::new());
}

/// Runs place-order on `backend` with `spec`, a service's fault after a step: the run is valid,
/// the fault's one `fault` row (of `kind`) lands after the `nth` row of `step` and before the
/// next row of the actor that reported it, and `run_end` counts the fault as fired once.
fn a_service_fault_lands_while_its_step_is_held(
    backend: &str,
    spec: &str,
    step: Kind,
    nth: usize,
    kind: &str,
) -> outbox_trace::detail::Fault {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &[
            "--backend",
            backend,
            "--scenario",
            "place-order",
            "--fault",
            spec,
        ],
    );
    assert_eq!(failed(dir.path()), Vec::<&str>::new());
    let faults = rows(&events, Kind::Fault);
    assert_eq!(faults.len(), 1, "{faults:?}");
    let row = fault(faults[0]);
    assert_eq!(row.fault, kind);
    let held = rows(&events, step)[nth - 1];
    let next = events
        .iter()
        .filter(|e| e.actor == held.actor && e.seq > held.seq)
        .map(|e| e.seq)
        .min()
        .unwrap();
    assert!(
        held.seq < faults[0].seq && faults[0].seq < next,
        "{spec}: the fault row {} is not between {} and {next}",
        faults[0].seq,
        held.seq
    );
    let end = run_end(rows(&events, Kind::RunEnd)[0]);
    let tried: Vec<_> = end
        .faults
        .iter()
        .map(|f| (f.spec.as_str(), f.fired))
        .collect();
    assert_eq!(tried, [(spec, 1)]);
    row
}

#[test]
fn a_broker_restart_after_a_step_lands_while_that_step_is_held() {
    let row = a_service_fault_lands_while_its_step_is_held(
        "etcd-jetstream",
        "restart nats after publish_attempt 2",
        Kind::PublishAttempt,
        2,
        "broker-restart",
    );
    assert_eq!(row.service.as_deref(), Some("nats-server"));
}

#[test]
fn a_service_pause_after_a_step_stops_redis_while_that_step_is_held() {
    let row = a_service_fault_lands_while_its_step_is_held(
        "sqlite-redis",
        "pause redis after delivered 3 for 2s",
        Kind::Delivered,
        3,
        "service-pause",
    );
    assert_eq!(row.service.as_deref(), Some("redis"));
    assert_eq!(row.duration_ms, Some(2000));
}

#[test]
fn a_fault_naming_what_the_lab_has_not_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            [
                "--backend",
                "sqlite-redis",
                "--fault",
                "restart sqlite at 1s",
            ],
            "nothing to restart",
        ),
        (
            ["--backend", "sqlite-redis", "--fault", "restart nats at 1s"],
            "no service `nats`",
        ),
        (
            [
                "--backend",
                "etcd-jetstream",
                "--fault",
                "kill wrker after acked",
            ],
            "no role or instance `wrker`",
        ),
        (
            [
                "--backend",
                "etcd-jetstream",
                "--fault",
                "restart nats after wrker acked",
            ],
            "no role or instance `wrker`",
        ),
        (
            [
                "--backend",
                "etcd-jetstream",
                "--fault",
                "kill worker after comitted",
            ],
            "is no kind",
        ),
    ] {
        let output = record(dir.path(), &args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let text = output_text(&output);
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

/// The lab's two lost ACKs, faked inside its actors by `lost-publish-ack` and
/// `lost-consumer-ack`, are also lost on the wire by the recorder's proxy between the actor and
/// NATS, with the same verdicts and the same figures, on the reference and without dedup.
#[test]
fn the_labs_lost_acks_on_the_wire_give_the_verdicts_of_its_failpoints() {
    for protocol in ["reference", "no-dedup"] {
        for (lab_scenario, wire_fault) in [
            (
                "lost-publish-ack",
                "lose puback relay nats after publish_attempt",
            ),
            (
                "lost-consumer-ack",
                "drop requests worker nats after effect_committed for 3s",
            ),
        ] {
            let (inside, on_wire) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            record_ok(
                inside.path(),
                &["--protocol", protocol, "--scenario", lab_scenario],
            );
            let events = record_ok(
                on_wire.path(),
                &[
                    "--protocol",
                    protocol,
                    "--scenario",
                    "place-order",
                    "--fault",
                    wire_fault,
                ],
            );
            let (a, b) = (failed(inside.path()), failed(on_wire.path()));
            assert_eq!(a, b, "{protocol} {wire_fault}: the same invariants fail");
            assert_eq!(
                protocol == "no-dedup",
                b.contains(&"single-effect"),
                "{protocol} {wire_fault}: {b:?}"
            );
            // The wire's fault row names the fault, the actor and the service.
            let rows: Vec<_> = events
                .iter()
                .filter(|e| e.kind == Kind::Fault)
                .map(|e| {
                    let f = fault(e);
                    (f.fault.to_string(), f.target, f.service)
                })
                .collect();
            let kind = if wire_fault.starts_with("lose") {
                "lose-puback"
            } else {
                "drop-requests"
            };
            assert!(
                matches!(&rows[..], [(k, Some(_), Some(s))] if k == kind && s == "nats"),
                "{rows:?}"
            );
            let copies = |e: &[Event], k: Kind| e.iter().filter(|x| x.kind == k).count();
            let inside_events = outbox_trace::read_trace(&trace_path(inside.path()))
                .unwrap()
                .events;
            for k in [
                Kind::PublishAttempt,
                Kind::DuplicateSuppressed,
                Kind::Redelivered,
            ] {
                assert_eq!(
                    copies(&inside_events, k),
                    copies(&events, k),
                    "{protocol} {wire_fault}: {k}"
                );
            }
        }
    }
}

#[test]
fn a_wire_fault_the_lab_cannot_carry_out_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (fault, says) in [
        (
            "lose commit-reply worker etcd after delivered",
            "no PostgreSQL",
        ),
        (
            "lose puback relay etcd after publish_attempt",
            "its service is `nats`",
        ),
    ] {
        let output = record(dir.path(), &["--scenario", "place-order", "--fault", fault]);
        assert_eq!(output.status.code(), Some(2), "{fault}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
    }
}
