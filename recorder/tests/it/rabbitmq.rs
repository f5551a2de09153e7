//! `recorder run --system` and `recorder explore` on a service the project did not shape
//! (`examples/python-postgres-rabbitmq`: Python, PostgreSQL, RabbitMQ with publisher confirms and
//! manual ACKs). The reference is valid while each role is killed right after a step and both
//! services are restarted; each planted bug is caught, with its own invariant, with no fault
//! written by hand.
//!
//! Opt-in (ignored by default, so never counted as passing when not run): RabbitMQ is not among
//! the project's dependencies. `scripts/rabbitmq.sh` installs it with the example's Python
//! packages; then `cargo nextest run --workspace --run-ignored only -E 'test(/rabbitmq::/)'`.
//! Run without them, each test fails naming what is missing.

use crate::common::{self, output_text, rows};

use std::path::{Path, PathBuf};
use std::process::Command;

use outbox_analyzer::check::{analyse, Report, RunVerdict, Verdict};
use outbox_trace::{Kind, Step};

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-postgres-rabbitmq")
}

/// The example's system file; what it needs, or a failure naming what is missing.
fn example(test: &str) -> Option<PathBuf> {
    let rabbit = std::env::var_os("RABBITMQ_SCRIPTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/rabbitmq/bin"))
        .join("rabbitmq-server");
    let postgres = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").exists())
        || std::env::var_os("PG_BIN").is_some();
    let python = Command::new("python3")
        .args(["-c", "import pika, psycopg, opentelemetry.sdk"])
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = [
        (!rabbit.exists(), "rabbitmq-server"),
        (!postgres, "PostgreSQL's server"),
        (
            !python,
            "the Python packages pika, psycopg and opentelemetry-sdk",
        ),
    ];
    let missing: Vec<&str> = missing.iter().filter(|m| m.0).map(|m| m.1).collect();
    assert!(
        missing.is_empty(),
        "{test}: {} not installed (scripts/rabbitmq.sh installs it)",
        missing.join(", ")
    );
    Some(example_dir().join("outbox-system.toml"))
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

#[test]
#[ignore = "opt-in: needs RabbitMQ (scripts/rabbitmq.sh)"]
fn the_rabbitmq_example_is_valid_when_each_role_is_killed_and_both_services_restart() {
    let Some(system) = example("the_rabbitmq_example_is_valid_when_each_role_is_killed") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &system,
        &["--scenario", "every-role-killed", "--tasks", "20"],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "failed: {:?}\n{}",
        failed(&report),
        output_text(&output)
    );
    let events = outbox_trace::read_trace(&out).unwrap().events;
    assert!(events.iter().all(|e| e.backend == "system:orders-rabbitmq"));
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
        restarted.contains(&"postgres".to_string()) && restarted.contains(&"rabbitmq".to_string()),
        "{restarted:?}"
    );
    // The killed worker's message came back with RabbitMQ's flag, and was suppressed.
    assert!(!rows(&events, Kind::Redelivered).is_empty());
    assert!(!rows(&events, Kind::DuplicateSuppressed).is_empty());
}

/// Runs `recorder explore` on the example with `BUG=bug` and `args`, 6 tasks a scenario.
fn explore(dir: &Path, system: &Path, bug: &str, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .arg("explore")
        .arg("--system")
        .arg(system)
        .arg("--out")
        .arg(dir.join("explore.parquet"))
        .args(["--tasks", "6", "--env", &format!("BUG={bug}")])
        .args(args)
        .output()
        .unwrap()
}

/// Explores with `BUG=bug` (the schedules whose spec holds `only`); the search must end invalid
/// (exit 1) and name `invariant` on the line of a schedule (or of the calm run) holding `found`.
fn found_by_explore(test: &str, bug: &str, only: &str, found: &str, invariant: &str) {
    let Some(system) = example(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = explore(dir.path(), &system, bug, &["--only", only]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{bug}: {}",
        output_text(&output)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(found) && l.contains("FAIL") && l.contains(invariant)),
        "{bug}: no line with {found:?} and FAIL {invariant}:\n{stdout}"
    );
}

#[test]
#[ignore = "opt-in: needs RabbitMQ (scripts/rabbitmq.sh)"]
fn a_worker_without_dedup_is_found_by_a_kill_after_its_commit() {
    found_by_explore(
        "a_worker_without_dedup_is_found_by_a_kill_after_its_commit",
        "no-dedup",
        "kill worker",
        "kill worker after effect_committed",
        "single-effect",
    );
}

#[test]
#[ignore = "opt-in: needs RabbitMQ (scripts/rabbitmq.sh)"]
fn a_worker_that_acks_before_its_commit_is_found_by_the_calm_run() {
    found_by_explore(
        "a_worker_that_acks_before_its_commit_is_found_by_the_calm_run",
        "ack-before-commit",
        "kill worker after acked",
        "calm",
        "ack-after-commit",
    );
}

#[test]
#[ignore = "opt-in: needs RabbitMQ (scripts/rabbitmq.sh)"]
fn a_relay_that_marks_before_the_confirm_is_found_by_the_calm_run() {
    found_by_explore(
        "a_relay_that_marks_before_the_confirm_is_found_by_the_calm_run",
        "mark-before-confirm",
        "kill relay after outbox_marked",
        "calm",
        "mark-after-puback",
    );
}
