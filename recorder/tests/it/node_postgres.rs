//! `recorder run --system` on a production stack: the Node.js example (`examples/node-postgres`:
//! PostgreSQL, NATS JetStream, the OpenTelemetry JS SDK whose export is asynchronous, each step's
//! export awaited). The reference is valid while each role is killed right after a step and both
//! services are restarted, and while a commit's reply, a publish's ACK and a worker's ACK are lost
//! on the wire; each planted bug is caught, with its own invariant, by the fault the example
//! names for it.
//!
//! Node.js, npm, nats-server and PostgreSQL's server must be installed (`scripts/deps.sh`): a
//! missing one fails the test with one line saying which, never a silent skip. The example's npm
//! packages are installed (`npm ci`) once if missing, under a lock that the test processes share.

use crate::common::{self, output_text, rows};

use std::path::{Path, PathBuf};
use std::process::Command;

use outbox_analyzer::check::{analyse, Report, RunVerdict, Verdict};
use outbox_trace::{Kind, Step};

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/node-postgres")
}

/// Checks the tools the example needs and installs its npm packages once; returns its system file.
pub(crate) fn example() -> PathBuf {
    for (tool, install) in [
        ("node", "Node.js 20 or later"),
        ("npm", "npm"),
        ("nats-server", "nats-server"),
    ] {
        let found = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "`{tool}` is not installed: the node-postgres example needs {install} (scripts/deps.sh installs it)"
        );
    }
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
        "no PostgreSQL server in /usr/lib/postgresql/*/bin (or $PG_BIN): the node-postgres example \
         needs Debian's postgresql package (scripts/deps.sh installs it)"
    );
    let dir = example_dir();
    let _lock = NpmLock::take();
    if !dir.join("node_modules/.package-lock.json").exists() {
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .output()
            .expect("npm runs");
        assert!(
            output.status.success(),
            "npm ci in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    dir.join("outbox-system.toml")
}

/// Runs the example with `args`; returns the output and the trace path.
fn run_example(dir: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    common::record_system(dir, &example(), args)
}

/// The lock the test processes share around `npm ci`: a directory made atomically, removed when
/// dropped; one older than five minutes was left by a killed test and is taken over.
struct NpmLock(PathBuf);

impl NpmLock {
    fn take() -> NpmLock {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-postgres-npm.lock.d");
        loop {
            match std::fs::create_dir(&path) {
                Ok(()) => return NpmLock(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > std::time::Duration::from_secs(300));
                    if stale && std::fs::remove_dir(&path).is_err() {
                        let _ = std::fs::remove_file(&path);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                Err(e) => panic!("cannot make the npm lock {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for NpmLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The invariants that failed, in any scenario.
pub(crate) fn failed(report: &Report) -> Vec<&'static str> {
    report
        .scenarios
        .iter()
        .flat_map(|s| s.outcomes.iter())
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect()
}

#[test]
fn the_node_example_is_valid_when_each_role_is_killed_and_postgres_and_nats_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(dir.path(), &["--scenario", "every-role-killed"]);
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
    assert!(events.iter().all(|e| e.backend == "system:orders"));
    // Every kill landed on an awaited export: its crash row is announced and names the step.
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
    // Both services were restarted.
    let restarted: Vec<String> = rows(&events, Kind::Fault)
        .iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) if f.fault == "service-restart" => f.target.clone(),
            _ => None,
        })
        .collect();
    assert!(
        restarted.contains(&"postgres".to_string()) && restarted.contains(&"nats".to_string()),
        "{restarted:?}"
    );
    // One counter per aggregate: every effect names its counter.
    let effects = rows(&events, Kind::EffectCommitted);
    assert!(!effects.is_empty());
    assert!(
        effects.iter().all(|e| e.counter_key.is_some()),
        "{effects:?}"
    );
    let Some(end) = rows(&events, Kind::RunEnd).first().map(|e| common::step(e)) else {
        panic!("no run_end row")
    };
    let Step::RunEnd(end) = end else {
        unreachable!()
    };
    assert_eq!(end.recovered, Some(true), "{end:?}");
    assert_eq!(end.tasks_unanswered, Some(0), "{end:?}");
    assert_eq!(rows(&events, Kind::Observed).len(), 1);
}

/// The fault rows of `events`: kind, target, service, messages dropped, connections reset.
type WireRow = (
    String,
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<u64>,
);

fn fault_rows(events: &[outbox_trace::Event]) -> Vec<WireRow> {
    rows(events, Kind::Fault)
        .iter()
        .filter_map(|e| match common::step(e) {
            Step::Fault(f) => Some((
                f.fault.to_string(),
                f.target,
                f.service,
                f.dropped_messages,
                f.resets,
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn the_node_example_is_valid_when_a_commit_reply_a_publish_ack_or_a_consumer_ack_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(
        dir.path(),
        &[
            "--scenario",
            "commit-reply-lost",
            "--scenario",
            "puback-lost",
            "--scenario",
            "ack-lost",
        ],
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
    let of = |scenario: &str| -> Vec<outbox_trace::Event> {
        events
            .iter()
            .filter(|e| e.scenario == scenario)
            .cloned()
            .collect()
    };
    // The commit's reply was dropped whole (its CommandComplete and ReadyForQuery at least) and
    // the worker's connection reset; the worker found its own commit by its key.
    let commit = of("commit-reply-lost");
    let lost = fault_rows(&commit);
    assert!(
        matches!(&lost[..], [(k, Some(w), Some(s), Some(m), Some(1))]
            if k == "lose-commit-reply" && w.starts_with("worker") && s == "postgres" && *m >= 2),
        "{lost:?}"
    );
    // The publish was stored, its ACK dropped: the relay published again, a worker suppressed it.
    let puback = of("puback-lost");
    let lost = fault_rows(&puback);
    assert!(
        matches!(&lost[..], [(k, Some(r), Some(s), Some(1), _)]
            if k == "lose-puback" && r.starts_with("relay") && s == "nats"),
        "{lost:?}"
    );
    assert!(!rows(&puback, Kind::PublishUnacked).is_empty());
    assert!(!rows(&puback, Kind::DuplicateSuppressed).is_empty());
    // The worker's ACK never arrived: JetStream delivered the order again.
    let ack = of("ack-lost");
    assert!(!rows(&ack, Kind::Redelivered).is_empty());
    assert!(!rows(&ack, Kind::DuplicateSuppressed).is_empty());
}

/// Runs the example's `calm` scenario with `BUG=bug` and `args`, up to `tries` times (a timed
/// pause may land while the paused worker holds no order); the analyzer must fail `invariant` in
/// one of them, and never call the trace anything but valid or invalid.
fn caught(bug: &str, args: &[&str], invariant: &str, tries: u32) {
    caught_in(&example(), bug, args, invariant, tries);
}

/// As [`caught`], with the system file `system` (the example's, or another of its directory).
pub(crate) fn caught_in(system: &Path, bug: &str, args: &[&str], invariant: &str, tries: u32) {
    let mut seen = Vec::new();
    for _ in 0..tries {
        let dir = tempfile::tempdir().unwrap();
        let env = format!("BUG={bug}");
        let mut all = vec!["--scenario", "calm", "--env", &env];
        all.extend_from_slice(args);
        let (output, out) = common::record_system(dir.path(), system, &all);
        assert!(output.status.success(), "{bug}: {}", output_text(&output));
        let report = analyse(&[out]).expect("the trace keeps the contract");
        assert_ne!(
            report.verdict,
            RunVerdict::Unknown,
            "{bug}: {}",
            output_text(&output)
        );
        let failed = failed(&report);
        if report.verdict == RunVerdict::Invalid {
            assert!(
                failed.contains(&invariant),
                "{bug}: expected {invariant}, failed {failed:?}"
            );
            return;
        }
        seen.push(format!("{:?}", report.verdict));
    }
    panic!("{bug} was not caught in {tries} runs: {seen:?}");
}

#[test]
fn a_relay_that_marks_before_the_publish_ack_is_caught_by_a_kill_after_the_mark() {
    caught(
        "mark-before-ack",
        &["--fault", "kill relay after outbox_marked"],
        "mark-after-puback",
        1,
    );
}

#[test]
fn a_worker_that_acks_before_its_commit_is_caught_by_a_kill_after_the_ack() {
    caught(
        "ack-before-commit",
        &["--fault", "kill worker after acked"],
        "ack-after-commit",
        1,
    );
}

/// The pause follows a step: the worker is stopped 250 ms after its third `orders receive` span
/// was exported, past its dedup look-up (250 ms leave it room on a loaded machine) and inside the
/// 600 ms of work before its commit; after the ACK wait (2 s) another worker takes the order over
/// and commits it, then the first one wakes and commits it again.
#[test]
fn a_dedup_check_outside_the_commit_is_caught_by_a_pause() {
    caught(
        "racy-dedup",
        &[
            "--env",
            "WORK_MS=600",
            "--fault",
            "pause worker after delivered 3 +250ms for 5s",
        ],
        "single-effect",
        3,
    );
}

/// Only the wire shows this one: the publish request never reaches NATS, the relay's publish
/// times out, and the relay marks the row anyway.
#[test]
fn a_relay_that_marks_a_publish_that_timed_out_is_caught_by_a_lost_publish_request() {
    caught(
        "mark-on-timeout",
        &[
            "--fault",
            "drop requests relay nats after publish_attempt 3 for 5s",
        ],
        "no-lost-task",
        1,
    );
}

/// A lost commit reply finds the racy dedup too: the worker's commit is made, its reply lost;
/// the worker tries the commit again, and without a second look at the key it applies the effect
/// twice, the second time reported to no one: the store holds one result more than the trace.
#[test]
fn a_lost_commit_reply_catches_a_worker_whose_retry_skips_the_key() {
    caught(
        "racy-dedup",
        &[
            "--fault",
            "lose commit-reply worker postgres after delivered 3",
        ],
        "observed-agrees",
        1,
    );
}

/// A correct worker that does not report the commit its retry finds, after the scenario's own
/// fault lost that commit's reply: the store holds one effect more than the trace, which the
/// fault explains (the store agrees with itself), so nothing fails and the verdict names the
/// fault; the racy dedup under the same fault still fails (above).
#[test]
fn a_lost_commit_reply_the_worker_does_not_report_is_unknown_naming_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(
        dir.path(),
        &[
            "--scenario",
            "calm",
            "--env",
            "REPORT_FOUND=0",
            "--fault",
            "lose commit-reply worker postgres after delivered 3",
        ],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(&[out]).expect("the trace keeps the contract");
    assert!(failed(&report).is_empty(), "{:?}", failed(&report));
    let observed = report
        .scenarios
        .iter()
        .flat_map(|s| &s.outcomes)
        .find(|o| o.invariant.id() == "observed-agrees")
        .unwrap();
    assert_eq!(observed.verdict, Verdict::Unknown);
    let reason = outbox_analyzer::explain::reason(observed.reason.as_ref().unwrap());
    assert!(
        reason.contains("the lose-commit-reply fault dropped"),
        "{reason}"
    );
}

/// A `lose` fault counts when it lost a reply, not when its step came: the workers publish
/// nothing to JetStream (their ACKs go to `$JS.ACK.`), so `lose puback` aimed at one is armed and
/// never acts; it is reported as never fired, with why, and the scenario is not called valid.
#[test]
fn a_lose_fault_that_never_acted_is_not_counted_as_tried() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(
        dir.path(),
        &[
            "--scenario",
            "calm",
            "--fault",
            "lose puback worker nats after delivered 3",
        ],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("never fired: armed on the wire, but no JetStream publish from worker reached nats after it"),
        "{stderr}"
    );
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(report.verdict, RunVerdict::Unknown, "{:?}", failed(&report));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    assert!(
        fault_rows(&events).is_empty(),
        "no fault row for a fault that never acted"
    );
}
