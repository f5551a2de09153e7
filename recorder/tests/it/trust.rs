//! What the OTLP receiver trusts during `recorder run --system`: an export is a process's only
//! when it carries the token the recorder gave that process life; a span of a kind only the
//! recorder writes (`observed`, `run_end`, `crash`, ...) is refused, and so is a span that claims
//! another actor than the process that sent it, and so is a span whose time no trace can hold.
//! Each refusal is counted in
//! `run_end.detail.refused` with its reason, and no row comes of it.

use std::path::Path;

use crate::common::{self, output_text, rows};
use outbox_trace::{Kind, Step};

/// A role ([`common::span_role`]) that sends four exports as OTLP JSON: a task it accepted
/// (taken), a forged `observed` and a span claiming to be the worker (both with its token, both
/// refused), and a task sent without the token (refused); then it waits to be stopped.
const FORGER: &str = r#"
if os.environ.get("FORGE_ONLY"):
    # Only what no process may report, each with the process's own token.
    send(10, {"outbox.kind": "observed", "outbox.detail": '{"counter": 99, "results": 1}'})
    send(11, {"outbox.kind": "run_end", "outbox.detail": '{"recovered": false}'})
    send(12, {"outbox.kind": "crash", "outbox.detail": '{"point": "exit"}'})
    send(13, {"outbox.kind": "run_start", "outbox.detail": '{"faults": ["kill api after acked"]}'})
    time.sleep(30)
accepted = {"outbox.kind": "task_accepted", "outbox.event_id": "e-1", "outbox.store_rev": 1}
send(0, {**accepted, "outbox.task_id": "t-1"})
send(1, {"outbox.kind": "observed", "outbox.detail": '{"counter": 99}'})
send(2, {**accepted, "outbox.task_id": "t-3", "outbox.actor": "worker"})
send(3, {**accepted, "outbox.task_id": "t-2"}, token=False)
send(4, {**accepted, "outbox.task_id": "t-4"}, now=2**64 - 1001)
time.sleep(30)
"#;

#[test]
fn the_receiver_takes_a_process_s_spans_by_its_token_and_refuses_forged_ones() {
    let dir = tempfile::tempdir().unwrap();
    let events = common::record_span_role(dir.path(), "forged", "api", FORGER);
    let accepted: Vec<(&str, Option<&str>)> = rows(&events, Kind::TaskAccepted)
        .iter()
        .map(|e| (e.actor.as_str(), e.task_id.as_deref()))
        .collect();
    assert_eq!(accepted, [("api", Some("t-1"))]);
    assert!(
        rows(&events, Kind::Observed).is_empty(),
        "no observed row: no observe command ran"
    );
    let Step::RunEnd(end) = common::step(rows(&events, Kind::RunEnd)[0]) else {
        unreachable!()
    };
    let observed = &end.refused["observed"];
    assert_eq!(observed.spans, 1);
    assert_eq!(observed.reasons, ["a kind only the recorder writes"]);
    let accepted = &end.refused["task_accepted"];
    assert_eq!(accepted.spans, 3);
    for reason in [
        "a time past any a trace holds (2^63 ns from the run's start)",
        "a span that claims another actor than the process that sent it",
        "an export without the token of a process the recorder started",
    ] {
        assert!(accepted.reasons.iter().any(|r| r == reason), "{accepted:?}");
    }
}

#[test]
fn forged_recorder_rows_leave_a_valid_run_valid() {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    std::fs::write(dir.path().join("forger.py"), common::span_role(FORGER)).unwrap();
    let system = dir.path().join("outbox-system.toml");
    let mut text = std::fs::read_to_string(&system).unwrap();
    text = text.replace(
        "[roles.relay]",
        "[roles.forger]\ncommand = [\"env\", \"FORGE_ONLY=1\", \"python3\", \"forger.py\"]\n\n[roles.relay]",
    );
    std::fs::write(&system, text).unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &system,
        &["--scenario", "worker-killed-before-ack", "--tasks", "8"],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let report = outbox_analyzer::check::analyse(std::slice::from_ref(&out))
        .expect("the trace keeps the contract");
    assert_eq!(report.verdict, outbox_analyzer::check::RunVerdict::Valid);
    let events = outbox_trace::read_trace(&out).unwrap().events;
    assert_eq!(rows(&events, Kind::RunEnd).len(), 1);
    assert!(rows(&events, Kind::Crash)
        .iter()
        .all(|e| e.actor != "forger"));
    let Step::RunEnd(end) = common::step(rows(&events, Kind::RunEnd)[0]) else {
        unreachable!()
    };
    for kind in ["observed", "run_end", "crash", "run_start"] {
        assert_eq!(end.refused[kind].spans, 1, "{kind}: {:?}", end.refused);
    }
}

/// A role whose first life leaves a process behind in a session of its own, with the life's
/// token, and exits; the process it left sends a task of its own two seconds later. Later lives
/// wait to be stopped.
const LEAVER: &str = r#"
import json, os, time, urllib.request

endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
headers = dict(h.split("=", 1) for h in os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split(","))
resource = [{"key": k, "value": {"stringValue": v}} for k, v in
            (kv.split("=", 1) for kv in os.environ["OTEL_RESOURCE_ATTRIBUTES"].split(","))]
resource.append({"key": "service.name", "value": {"stringValue": os.environ["OTEL_SERVICE_NAME"]}})

def send(n, task):
    now = time.time_ns()
    attributes = {"outbox.kind": "task_accepted", "outbox.event_id": "e-%d" % n,
                  "outbox.store_rev": n, "outbox.task_id": task}
    span = {"traceId": "%032x" % (n + 1), "spanId": "%016x" % (n + 1), "name": "step",
            "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000),
            "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else
                            {"intValue": str(v)}} for k, v in attributes.items()]}
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": resource},
                                          "scopeSpans": [{"spans": [span]}]}]}).encode()
    request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json",
                                                      **headers})
    try:
        urllib.request.urlopen(request).read()
    except Exception as e:
        print(e)

if os.path.exists("first-life"):
    time.sleep(60)
open("first-life", "w").close()
send(1, "t-1")
if os.fork() == 0:
    os.setsid()
    log = open("left.log", "w")
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    time.sleep(2)
    send(2, "t-late")
    open("late-sent", "w").close()
    os._exit(0)
"#;

#[test]
fn a_life_s_token_is_refused_once_the_life_has_ended() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("leaver.py"), LEAVER).unwrap();
    let system = dir.path().join("system.toml");
    std::fs::write(
        &system,
        r#"
name = "left-behind"
[roles.api]
command = ["python3", "leaver.py"]
[tasks]
command = ["true"]
count = 1
[quiet]
command = ["test", "-e", "late-sent"]
"#,
    )
    .unwrap();
    let (output, out) = common::record_system(dir.path(), Path::new(&system), &[]);
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(dir.path().join("late-sent").exists());
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let accepted: Vec<(&str, u32, Option<&str>)> = rows(&events, Kind::TaskAccepted)
        .iter()
        .map(|e| (e.actor.as_str(), e.incarnation, e.task_id.as_deref()))
        .collect();
    assert_eq!(
        accepted,
        [("api", 0, Some("t-1"))],
        "the late task is no row"
    );
    let Step::RunEnd(end) = common::step(rows(&events, Kind::RunEnd)[0]) else {
        unreachable!()
    };
    let refused = &end.refused["task_accepted"];
    assert_eq!(refused.spans, 1, "{refused:?}");
    assert_eq!(
        refused.reasons,
        ["an export with the token of a process life that has ended"]
    );
}
