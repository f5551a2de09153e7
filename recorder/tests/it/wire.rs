//! Wire faults on a team's own service (the Python example: SQLite, a Redis Stream), carried out
//! by the recorder's proxy between each process and each service, at the step that calls for
//! them: a publish whose answer was lost is published again and suppressed (valid), and catches a
//! worker that dedups on the broker's entry id; an ACK that never arrives is delivered again and
//! suppressed, and catches a worker without dedup; a publish request that never arrives is
//! published again (valid), and catches a relay that marks a publish that raised; a partition of
//! one worker is survived. The fault rows name the fault, the process and the service, and say
//! what was dropped. A wire fault fires only when it acts on traffic: on a service a role reaches
//! through the proxy once and then at its own address (as a Kafka client does after its first
//! metadata request), its faults are not reached, and none is searched for a role that never
//! connected to it.

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
    // The fault acted on traffic: fired, so the verdict is the fault's.
    let end = rows(&events, Kind::RunEnd);
    let end = common::run_end(end.last().expect("run_end"));
    assert!(
        end.faults.iter().all(|f| f.fired > 0),
        "{fault}: {:?}",
        end.faults
    );
    (report.verdict, failed, events)
}

/// The example with a second service, `side` (a Redis on `wire = "tcp"`), which each worker
/// reaches through its proxy once as it starts (one PING) and from then on at the service's own
/// port, every 200 ms; the API and the relay never connect to it.
fn with_side(dir: &Path) -> PathBuf {
    let path = example(dir);
    let text = std::fs::read_to_string(&path).unwrap();
    let side = "[services.side]\n\
        command = [\"redis-server\", \"--port\", \"${port}\", \"--bind\", \"127.0.0.1\", \
        \"--dir\", \"${dir}\", \"--save\", \"\"]\n\
        ready = [\"redis-cli\", \"-p\", \"${port}\", \"ping\"]\n\
        wire = \"tcp\"\n\n[env]\n";
    let worker =
        "command = [\"sh\", \"-c\", \"redis-cli -p ${services.side.port} ping >/dev/null; \
        (while redis-cli -p ${services.side.real_port} ping >/dev/null; do sleep 0.2; done) & \
        exec python3 worker.py\"]\ninstances = 2";
    let text = text.replacen("[env]\n", side, 1).replacen(
        "command = [\"python3\", \"worker.py\"]\ninstances = 2",
        worker,
        1,
    );
    assert!(text.contains("services.side.real_port"), "{text}");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_named_wire_fault_over_a_connection_that_carries_nothing_did_not_fire_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let system = with_side(dir.path());
    let (output, out) = common::record_system(
        dir.path(),
        &system,
        &[
            "--tasks",
            "8",
            "--fault",
            "drop requests worker side after delivered 2 for 1s",
            "--fault",
            "drop replies api side after task_accepted 2 for 1s",
        ],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let end = rows(&events, Kind::RunEnd);
    let end = common::run_end(end.last().expect("run_end"));
    let why = |spec: &str| {
        let tried = end.faults.iter().find(|f| f.spec == spec).expect(spec);
        assert_eq!(tried.fired, 0, "{tried:?}");
        tried.why.clone().unwrap_or_default()
    };
    let worker = why("drop requests worker side after delivered 2 for 1s");
    assert!(
        worker.starts_with("no byte from worker to side crossed the proxy while it lasted"),
        "{worker}"
    );
    assert_eq!(
        why("drop replies api side after task_accepted 2 for 1s"),
        "no byte from api to side went through the proxy"
    );
    for tried in &end.faults {
        assert!(
            !tried.why.as_deref().unwrap_or("").contains("lost"),
            "{tried:?}"
        );
    }
    // What passed the proxies: the workers' one PING to `side`, the relay's and the workers' Redis traffic.
    let passed = |role: &str, service: &str| {
        end.wire
            .iter()
            .find(|w| w.role == role && w.service == service)
            .map(|w| (w.request_bytes, w.reply_bytes))
    };
    assert!(
        passed("worker", "side").is_some_and(|(to, back)| to > 0 && to < 200 && back > 0),
        "{:?}",
        end.wire
    );
    assert_eq!(passed("api", "side"), None, "{:?}", end.wire);
    assert!(passed("relay", "redis").is_some_and(|(to, back)| to > 0 && back > 0));
    // The scenario's named faults did not fire: it tested nothing, and says so.
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(report.verdict, RunVerdict::Unknown);
}

#[test]
fn a_search_tries_no_wire_fault_where_the_calm_run_passed_no_byte_and_reaches_none_idle() {
    let dir = tempfile::tempdir().unwrap();
    let system = with_side(dir.path());
    let json = dir.path().join("search.json");
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .arg("explore")
        .arg("--system")
        .arg(&system)
        .arg("--out")
        .arg(dir.path().join("explore.parquet"))
        .args(["--tasks", "6", "--jobs", "2", "--json"])
        .arg(&json)
        .args(["--only", "worker side after delivered"])
        .args(["--only", "api side", "--only", "relay side"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let search: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schedules = search["schedules"].as_array().unwrap();
    let faults: Vec<&str> = schedules
        .iter()
        .map(|s| s["fault"].as_str().unwrap())
        .collect();
    assert_eq!(faults.len(), 2, "{faults:?}");
    assert!(
        faults
            .iter()
            .all(|f| f.starts_with("drop ") && f.contains(" worker side ")),
        "no wire schedule for a role that never connected to side: {faults:?}"
    );
    for s in schedules {
        assert_eq!(s["fired"], 0, "{s}");
        assert_eq!(s["verdict"], "not reached", "{s}");
        let why = s["why"].as_str().unwrap_or_default();
        assert!(why.contains("crossed the proxy while it lasted"), "{s}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("0 valid, 0 invalid, 0 unknown, 2 not reached"),
        "{stdout}"
    );
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
