//! `recorder run --system` on a service the project did not shape, on Kafka
//! (`examples/python-kafka`: Python, PostgreSQL, a tansu broker; `acks=all`, a consumer group
//! committing its offsets after the effect). The reference is valid while each role is killed
//! right after a step and both services are restarted; a worker whose dedup key is the record's
//! offset is caught by the fault that makes the relay produce an event twice.
//!
//! tansu, PostgreSQL's server and the Python packages must be installed (`scripts/deps.sh`): a
//! missing one fails the test with one line saying which, never a silent skip.

use crate::common::{self, output_text, rows};

use std::path::{Path, PathBuf};
use std::process::Command;

use outbox_analyzer::check::{analyse, Report, RunVerdict, Verdict};
use outbox_trace::{Kind, Step};

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-kafka")
}

/// Whether the tansu broker is installed: `$TANSU`, `tansu` on `PATH`, or `~/.cargo/bin/tansu`
/// (where `cargo install` puts it), as `tansu.sh` looks for it.
fn tansu_installed() -> bool {
    let runs = |program: &std::ffi::OsStr| {
        Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let cargo_bin =
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo/bin/tansu"));
    std::env::var_os("TANSU")
        .into_iter()
        .chain(Some("tansu".into()))
        .chain(cargo_bin.map(PathBuf::into_os_string))
        .any(|program| runs(&program))
}

/// Checks what the example needs; returns its system file.
fn example() -> PathBuf {
    assert!(
        tansu_installed(),
        "no tansu broker on PATH (nor ~/.cargo/bin/tansu, nor $TANSU): the python-kafka example \
         needs it (scripts/deps.sh installs it)"
    );
    let postgres = std::env::var_os("PG_BIN")
        .map(|bin| vec![PathBuf::from(bin).join("postgres")])
        .unwrap_or_else(|| {
            std::fs::read_dir("/usr/lib/postgresql")
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path().join("bin/postgres"))
                .collect()
        });
    assert!(
        postgres.iter().any(|p| p.exists()),
        "no PostgreSQL server in /usr/lib/postgresql/*/bin (or $PG_BIN): the python-kafka example \
         needs Debian's postgresql package (scripts/deps.sh installs it)"
    );
    let python = Command::new("python3")
        .args(["-c", "import confluent_kafka, psycopg, opentelemetry.sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        python,
        "the Python packages confluent-kafka, psycopg and opentelemetry-sdk are not installed: \
         the python-kafka example needs them (scripts/deps.sh installs them)"
    );
    example_dir().join("outbox-system.toml")
}

/// Runs the example with `args`; returns the output and the trace path.
fn run_example(dir: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    common::record_system(dir, &example(), args)
}

/// The invariants that failed, in any scenario.
fn failed(report: &Report) -> Vec<&'static str> {
    report
        .scenarios
        .iter()
        .flat_map(|s| s.outcomes.iter())
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect()
}

/// The events of the run that wrote `out`, asserting it succeeded and its trace is valid.
fn valid_events(output: &std::process::Output, out: &Path) -> Vec<outbox_trace::Event> {
    assert!(output.status.success(), "{}", output_text(output));
    let report = analyse(&[out.to_path_buf()]).expect("the trace keeps the contract");
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "failed: {:?}\n{}",
        failed(&report),
        output_text(output)
    );
    outbox_trace::read_trace(out).unwrap().events
}

#[test]
fn the_kafka_example_is_valid_when_each_role_is_killed_and_both_services_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(
        dir.path(),
        &["--scenario", "every-role-killed", "--tasks", "20"],
    );
    let events = valid_events(&output, &out);
    assert!(events.iter().all(|e| e.backend == "system:orders-kafka"));
    // Every kill landed on a synchronous export: its crash row is announced and names the step.
    let points: Vec<(String, Option<bool>)> = rows(&events, Kind::Crash)
        .iter()
        .map(|e| match common::step(e) {
            Step::Crash { crash, .. } => (crash.point.into(), crash.announced),
            _ => unreachable!(),
        })
        .collect();
    for point in [
        "api:after-intent_recorded",
        "relay:after-publish_acked",
        "worker:after-effect_committed",
    ] {
        assert!(
            points.contains(&(point.to_string(), Some(true))),
            "{point} in {points:?}"
        );
    }
    let restarted: Vec<String> = rows(&events, Kind::Fault)
        .iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) if f.fault == "service-restart" => f.target.clone(),
            _ => None,
        })
        .collect();
    assert!(
        restarted.contains(&"postgres".to_string()) && restarted.contains(&"kafka".to_string()),
        "{restarted:?}"
    );
    // The killed worker's record was read again from the group's committed offset, and
    // suppressed; every publish and delivery carries its offset.
    assert!(!rows(&events, Kind::DuplicateSuppressed).is_empty());
    for kind in [Kind::PublishAcked, Kind::Delivered, Kind::Acked] {
        assert!(
            rows(&events, kind).iter().all(|e| e.broker_seq.is_some()),
            "{kind:?} without an offset"
        );
    }
}

/// A second produce of one event, two ways: the relay killed after its third produce was
/// acknowledged and before its mark (its next life produces the event again), or that produce's
/// acknowledgement lost with the connection (librdkafka sends it again). Either way the event is
/// at a new offset, and a worker whose dedup key is the offset applies it twice.
#[test]
fn a_worker_whose_dedup_key_is_the_offset_is_caught_by_a_second_produce() {
    for fault in [
        "kill relay after publish_acked 3",
        "lose produce-ack relay kafka after publish_attempt 3",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (output, out) = run_example(
            dir.path(),
            &[
                "--scenario",
                "calm",
                "--tasks",
                "12",
                "--env",
                "BUG=dedup-on-offset",
                "--fault",
                fault,
            ],
        );
        assert!(output.status.success(), "{}", output_text(&output));
        let report = analyse(&[out]).expect("the trace keeps the contract");
        assert_eq!(
            report.verdict,
            RunVerdict::Invalid,
            "{fault}: {}",
            output_text(&output)
        );
        let failed = failed(&report);
        assert!(
            failed.contains(&"single-effect"),
            "{fault}: failed {failed:?}"
        );
    }
}

/// The broker appends the relay's third produce and its acknowledgement is lost with the
/// connection: librdkafka sends the record again, a second copy at a second offset, which the
/// worker suppresses by its event id. The trace stays valid.
#[test]
fn the_kafka_example_is_valid_when_a_produce_acknowledgement_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(
        dir.path(),
        &[
            "--scenario",
            "calm",
            "--tasks",
            "12",
            "--fault",
            "lose produce-ack relay kafka after publish_attempt 3",
        ],
    );
    let events = valid_events(&output, &out);
    let lost: Vec<(String, Option<String>, Option<u64>)> = rows(&events, Kind::Fault)
        .iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) => Some((f.fault.to_string(), f.target, f.dropped_messages)),
            _ => None,
        })
        .collect();
    assert!(
        matches!(&lost[..], [(k, Some(r), Some(m))]
            if k == "lose-produce-ack" && r.starts_with("relay") && *m >= 1),
        "{lost:?}"
    );
    // The suppressed copy's event was delivered from two offsets: two records in the topic.
    let suppressed = rows(&events, Kind::DuplicateSuppressed);
    assert!(!suppressed.is_empty(), "no copy suppressed");
    let twice = suppressed.iter().any(|s| {
        let offsets: std::collections::BTreeSet<u64> = rows(&events, Kind::Delivered)
            .iter()
            .filter(|d| d.event_id == s.event_id)
            .filter_map(|d| d.broker_seq)
            .collect();
        offsets.len() >= 2
    });
    assert!(twice, "no event delivered from two offsets");
}
