//! Helpers shared by the recorder's integration tests: run the real binary against services it
//! starts itself, and read the trace back through the contract crate.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use outbox_trace::detail::{self, Note, Observed};
use outbox_trace::{read_trace, Detail, Event, Kind, Step};

/// Runs `recorder run` with `args`, writing to `dir/run.parquet`; returns the command's output.
pub fn record(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = dir.join("run.parquet");
    Command::cargo_bin("recorder")
        .expect("recorder binary")
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .args(args)
        .output()
        .expect("recorder runs")
}

/// Runs and requires success; returns the events.
pub fn record_ok(dir: &Path, args: &[&str]) -> Vec<Event> {
    let output = record(dir, args);
    assert!(
        output.status.success(),
        "recorder failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    read_trace(&dir.join("run.parquet"))
        .expect("trace reads back")
        .events
}

/// Runs `recorder run --system FILE` with `args`, writing to `dir/run.parquet`; returns the
/// command's output and the trace path.
pub fn record_system(dir: &Path, system: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    let system = system.to_str().expect("a UTF-8 path");
    let mut all = vec!["--system", system];
    all.extend_from_slice(args);
    (record(dir, &all), trace_path(dir))
}

/// The start of a Python role that reports spans as OTLP JSON to the recorder, under the token
/// and resource the recorder gives its process: `send(n, attributes, token=True, now=None)` sends
/// one span (`n` numbers its ids; `token=False` leaves the token off; `now`: its time in ns).
const SPAN_SENDER: &str = r#"
import json, os, time, urllib.request

endpoint = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
headers = dict(h.split("=", 1) for h in os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split(","))
resource = [{"key": k, "value": {"stringValue": v}} for k, v in
            (kv.split("=", 1) for kv in os.environ["OTEL_RESOURCE_ATTRIBUTES"].split(","))]
resource.append({"key": "service.name", "value": {"stringValue": os.environ["OTEL_SERVICE_NAME"]}})

def send(n, attributes, token=True, now=None):
    now = now or time.time_ns()
    span = {"traceId": "%032x" % (n + 1), "spanId": "%016x" % (n + 1), "name": "step",
            "startTimeUnixNano": str(now), "endTimeUnixNano": str(now + 1000),
            "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else
                            {"intValue": str(v)}} for k, v in attributes.items()]}
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": resource},
                                          "scopeSpans": [{"spans": [span]}]}]}).encode()
    request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json",
                                                      **(headers if token else {})})
    urllib.request.urlopen(request).read()
"#;

/// A Python role: [`SPAN_SENDER`], then `body`.
pub fn span_role(body: &str) -> String {
    format!("{SPAN_SENDER}{body}")
}

/// The events of `recorder run --system` on a system `name` of one role `role`, the Python
/// [`span_role`] `body`, and one task; fails the test unless the run succeeds.
pub fn record_span_role(dir: &Path, name: &str, role: &str, body: &str) -> Vec<Event> {
    std::fs::write(dir.join(format!("{role}.py")), span_role(body)).unwrap();
    let system = dir.join("system.toml");
    let text = format!(
        "name = \"{name}\"\n[roles.{role}]\ncommand = [\"python3\", \"{role}.py\"]\n\
         [tasks]\ncommand = [\"true\"]\ncount = 1\n"
    );
    std::fs::write(&system, text).unwrap();
    let (output, out) = record_system(dir, &system, &[]);
    assert!(output.status.success(), "{}", output_text(&output));
    read_trace(&out).unwrap().events
}

/// A command's standard output and error, for a failure message.
pub fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The rows of one kind.
pub fn rows(events: &[Event], kind: Kind) -> Vec<&Event> {
    events.iter().filter(|e| e.kind == kind).collect()
}

/// The trace path in `dir`.
pub fn trace_path(dir: &Path) -> PathBuf {
    dir.join("run.parquet")
}

/// The events of one scenario, in `seq` order.
pub fn scenario<'a>(events: &'a [Event], name: &str) -> Vec<&'a Event> {
    let mut v: Vec<&Event> = events.iter().filter(|e| e.scenario == name).collect();
    v.sort_by_key(|e| e.seq);
    assert!(!v.is_empty(), "scenario {name} missing from the trace");
    v
}

/// Rows of one kind.
pub fn of<'a>(events: &[&'a Event], kind: Kind) -> Vec<&'a Event> {
    events.iter().copied().filter(|e| e.kind == kind).collect()
}

/// A row read back as its typed step.
pub fn step(e: &Event) -> Step {
    Step::try_from(e).unwrap_or_else(|err| panic!("{err}: {e:?}"))
}

/// The typed `detail` of a row (`NotAnObject` when it has none).
pub fn detail(e: &Event) -> Detail {
    Detail::parse(e.kind, e.detail.as_deref().unwrap_or("")).expect("a readable detail")
}

/// The crash point of a `crash` row.
pub fn crash_point(e: &Event) -> String {
    match step(e) {
        Step::Crash { crash, .. } => crash.point.into(),
        other => panic!("not a crash: {other:?}"),
    }
}

/// The note of a protocol step's row (empty when it has none).
pub fn note(e: &Event) -> Note {
    detail(e).note().cloned().unwrap_or_default()
}

/// The detail of a `run_start` row.
pub fn run_start(e: &Event) -> detail::RunStart {
    match step(e) {
        Step::RunStart(d) => d,
        other => panic!("not a run_start: {other:?}"),
    }
}

/// The detail of a `run_end` row.
pub fn run_end(e: &Event) -> detail::RunEnd {
    match step(e) {
        Step::RunEnd(d) => d,
        other => panic!("not a run_end: {other:?}"),
    }
}

/// The detail of a `fault` row.
pub fn fault(e: &Event) -> detail::Fault {
    match step(e) {
        Step::Fault(d) => d,
        other => panic!("not a fault: {other:?}"),
    }
}

/// The detail of an `observed` row.
pub fn observed_in(e: &Event) -> Observed {
    match step(e) {
        Step::Observed(d) => d,
        other => panic!("not an observed row: {other:?}"),
    }
}

/// The last `observed` detail of a scenario.
pub fn observed(events: &[&Event]) -> Observed {
    observed_in(of(events, Kind::Observed).last().expect("an observed row"))
}

/// The index of the first row matching `pred` at or after `from`.
pub fn position(events: &[&Event], from: usize, pred: impl Fn(&Event) -> bool) -> Option<usize> {
    events
        .iter()
        .skip(from)
        .position(|e| pred(e))
        .map(|i| i + from)
}
