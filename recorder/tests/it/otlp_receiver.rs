//! The recorder's OTLP receiver against the real OpenTelemetry Python SDK: the same spans sent
//! over OTLP/HTTP protobuf, over OTLP/gRPC (each by the SDK's own exporter and simple span
//! processor) and as one OTLP JSON request give the same rows; gzip works on all three; a body
//! that does not decode gets 400 and the next request is served; a dropped answer is 503; the
//! answer is held until the run gives it.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use outbox_recorder::system::receiver::{Answer, Intake, OtlpReceiver, ReceiverStats};
use outbox_trace::otlp::{LiveEvent, LiveMapper};
use outbox_trace::Kind;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Sends one fixed set of spans, with fixed times, through the SDK. Arguments: the OTLP/HTTP
/// base endpoint, the OTLP/gRPC endpoint, the base endpoint that gets the OTLP JSON request, and
/// `gzip` or `none`. Prints the JSON request's HTTP status.
const SDK_SCRIPT: &str = r#"
import base64, gzip, json, sys, urllib.request

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

http_base, grpc_endpoint, json_base, compression = sys.argv[1:5]
gz = compression == "gzip"
if gz:
    from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
    from grpc import Compression as GrpcCompression
    http = HttpExporter(endpoint=http_base + "/v1/traces", compression=HttpCompression.Gzip)
    grpc = GrpcExporter(endpoint=grpc_endpoint, insecure=True, compression=GrpcCompression.Gzip)
else:
    http = HttpExporter(endpoint=http_base + "/v1/traces")
    grpc = GrpcExporter(endpoint=grpc_endpoint, insecure=True)
memory = InMemorySpanExporter()

resource = Resource.create({
    "service.name": "worker",
    "service.instance.id": "worker-life-1",
    "outbox.run_id": "receiver-test",
    "outbox.scenario": "default",
    "outbox.incarnation": 1,
})
provider = TracerProvider(resource=resource)
for exporter in (http, grpc, memory):
    provider.add_span_processor(SimpleSpanProcessor(exporter))
tracer = provider.get_tracer("outbox-receiver-test")

T0 = 1_700_000_000_000_000_000
MS = 1_000_000

def span(name, start, end, attributes, kind=SpanKind.INTERNAL, events=(), error=False):
    s = tracer.start_span(name, kind=kind, start_time=T0 + start * MS, attributes=attributes)
    for event_name, at, event_attributes in events:
        s.add_event(event_name, event_attributes, timestamp=T0 + at * MS)
    if error:
        s.set_status(Status(StatusCode.ERROR, "no ACK"))
    s.end(end_time=T0 + end * MS)

span("accept t-1", 1, 3, {
    "outbox.actor": "api", "outbox.kind": "task_accepted", "outbox.task_id": "t-1",
    "outbox.event_id": "e-1", "outbox.aggregate_id": "agg-1", "outbox.aggregate_seq": 1,
    "outbox.store_rev": 10, "outbox.amount": 3,
}, kind=SpanKind.SERVER, events=[("intent", 2, {
    "outbox.kind": "intent_recorded", "outbox.event_id": "e-1", "outbox.store_rev": 10,
    "outbox.aggregate_id": "agg-1", "outbox.aggregate_seq": 1,
})])
span("publish e-1", 4, 5, {
    "outbox.actor": "relay", "messaging.operation.type": "send", "messaging.system": "redis",
    "messaging.message.id": "e-1", "outbox.attempt": 1, "outbox.broker_seq": 7,
}, kind=SpanKind.PRODUCER)
span("mark e-1", 6, 7, {
    "outbox.actor": "relay", "outbox.kind": "outbox_marked", "outbox.event_id": "e-1",
    "outbox.store_rev": 11,
})
span("publish e-2", 8, 9, {
    "outbox.actor": "relay", "messaging.operation.type": "publish",
    "messaging.message.id": "e-2", "outbox.attempt": 1,
}, kind=SpanKind.PRODUCER, error=True)
span("receive e-1", 10, 11, {
    "messaging.operation.type": "receive", "messaging.message.id": "e-1",
    "outbox.attempt": 1, "outbox.broker_seq": 7, "messaging.destination.partition.id": "2",
}, kind=SpanKind.CONSUMER)
span("process e-1", 12, 15, {
    "messaging.operation.type": "process", "messaging.message.id": "e-1",
    "outbox.attempt": 1, "outbox.broker_seq": 7, "messaging.destination.partition.id": "2",
}, kind=SpanKind.CONSUMER)
span("commit e-1", 13, 14, {
    "outbox.kind": "effect_committed", "outbox.event_id": "e-1", "outbox.task_id": "t-1",
    "outbox.amount": 3, "outbox.counter": 3, "outbox.store_rev": 12,
    "outbox.detail": json.dumps({"note": "first"}),
})
span("ack e-1", 16, 17, {
    "messaging.operation.type": "settle", "messaging.operation.name": "ack",
    "messaging.message.id": "e-1", "outbox.broker_seq": 7, "outbox.partition": 2,
})
span("nack e-9", 18, 19, {
    "messaging.operation.type": "settle", "messaging.operation.name": "nack",
    "messaging.message.id": "e-9", "outbox.broker_seq": 8,
})
span("audit", 20, 21, {"outbox.kind": "audit_written", "outbox.event_id": "e-1"})
provider.shutdown()

# The same spans as one OTLP JSON request: the SDK's own protobuf encoding, in the OTLP JSON
# mapping (camelCase, enums as numbers, 64-bit integers as strings, ids in hex).
def hex_ids(value):
    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value

request = encode_spans(memory.get_finished_spans())
body = json.dumps(hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))).encode()
headers = {"Content-Type": "application/json"}
if gz:
    body = gzip.compress(body)
    headers["Content-Encoding"] = "gzip"
answer = urllib.request.urlopen(urllib.request.Request(json_base + "/v1/traces", data=body, headers=headers))
print(answer.status, answer.read().decode())
"#;

/// How long a Python script may take (an exporter's retries of a failed export would take longer).
const SCRIPT_TIME: Duration = Duration::from_secs(120);

/// The kinds the spans above give, in time order (the audit span is a kind the contract does not
/// know, kept as an unknown kind).
const KINDS: &[Kind] = &[
    Kind::IntentRecorded,
    Kind::TaskAccepted,
    Kind::PublishAttempt,
    Kind::PublishAcked,
    Kind::OutboxMarked,
    Kind::PublishAttempt,
    Kind::PublishUnacked,
    Kind::Delivered,
    Kind::EffectCommitted,
    Kind::Acked,
];

/// A receiver whose consumer maps every request with its own [`LiveMapper`] and answers it at
/// once; the rows come back when the receiver stops.
struct Mapping {
    receiver: OtlpReceiver,
    rows: JoinHandle<Vec<LiveEvent>>,
}

impl Mapping {
    fn start() -> Mapping {
        let (tx, mut rx) = mpsc::channel::<Intake>(16);
        let receiver = OtlpReceiver::start(tx).expect("the receiver binds loopback ports");
        let rows = tokio::spawn(async move {
            let mut mapper = LiveMapper::new();
            let mut rows = Vec::new();
            while let Some(intake) = rx.recv().await {
                let mapped = mapper.map(&intake.request);
                assert!(
                    mapped.rejected.is_empty(),
                    "rejected: {:?}",
                    mapped.rejected
                );
                rows.extend(mapped.events);
                intake.answer(Answer::accepted());
            }
            rows
        });
        Mapping { receiver, rows }
    }

    /// Stops the receiver; the rows in the order they were mapped, and the receiver's counts.
    async fn finish(self) -> (Vec<LiveEvent>, ReceiverStats) {
        let stats = self.receiver.stats();
        self.receiver.stop().await;
        (self.rows.await.expect("the consumer ran"), stats)
    }
}

/// Runs the SDK script: HTTP protobuf to `http`, gRPC to `grpc`, OTLP JSON to `json`.
async fn send_with_sdk(dir: &Path, http: &Mapping, grpc: &Mapping, json: &Mapping, gzip: bool) {
    let script = dir.join("send_spans.py");
    std::fs::write(&script, SDK_SCRIPT).unwrap();
    let output = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(http.receiver.http_endpoint())
        .arg(grpc.receiver.grpc_endpoint())
        .arg(json.receiver.http_endpoint())
        .arg(if gzip { "gzip" } else { "none" })
        // Nothing of the script's exporters may come from the environment.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_COMPRESSION")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(SCRIPT_TIME, output)
        .await
        .expect("the SDK script ends")
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK script failed: {stderr}");
    // The SDK logs a failed or retried export instead of failing.
    assert!(
        !stderr.to_lowercase().contains("export"),
        "the SDK reported an export error: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.trim(), "200 {}", "the JSON request's answer");
}

/// The rows in a comparable order: by time, then kind (a request's spans may map in any order
/// within one instant).
fn sorted(mut rows: Vec<LiveEvent>) -> Vec<LiveEvent> {
    rows.sort_by_key(|r| (r.at_unix_ns, r.event.kind, r.unknown_kind.clone()));
    rows
}

fn same_rows(http: &[LiveEvent], other: &[LiveEvent], name: &str) {
    assert_eq!(http.len(), other.len(), "{name}: as many rows as over HTTP");
    for (a, b) in http.iter().zip(other) {
        assert_eq!(a.event, b.event, "{name}: the same row");
        assert_eq!(a.at_unix_ns, b.at_unix_ns, "{name}: the same time");
        assert_eq!(
            a.unknown_kind, b.unknown_kind,
            "{name}: the same unknown kind"
        );
    }
}

async fn three_ways_give_the_same_rows(gzip: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (http, grpc, json) = (Mapping::start(), Mapping::start(), Mapping::start());
    send_with_sdk(dir.path(), &http, &grpc, &json, gzip).await;
    let (http, http_stats) = http.finish().await;
    let (grpc, grpc_stats) = grpc.finish().await;
    let (json, json_stats) = json.finish().await;

    // The simple span processor exports each span on its own; the JSON is one request.
    assert_eq!(
        http_stats,
        ReceiverStats {
            requests: 10,
            spans: 10,
            bad_bodies: 0,
            refused: 0
        }
    );
    assert_eq!(grpc_stats, http_stats);
    assert_eq!((json_stats.requests, json_stats.spans), (1, 10));

    let (http, grpc, json) = (sorted(http), sorted(grpc), sorted(json));
    let known: Vec<Kind> = http
        .iter()
        .filter(|r| r.unknown_kind.is_none())
        .map(|r| r.event.kind)
        .collect();
    assert_eq!(known, KINDS, "the rows the spans give");
    let unknown: Vec<&str> = http
        .iter()
        .filter_map(|r| r.unknown_kind.as_deref())
        .collect();
    assert_eq!(unknown, ["audit_written"]);
    let committed = http
        .iter()
        .find(|r| r.event.kind == Kind::EffectCommitted)
        .unwrap();
    let e = &committed.event;
    assert_eq!(
        (
            e.actor.as_str(),
            e.incarnation,
            e.task_id.as_deref(),
            e.event_id.as_deref()
        ),
        ("worker", 1, Some("t-1"), Some("e-1"))
    );
    assert_eq!(
        (e.amount, e.counter, e.store_rev),
        (Some(3), Some(3), Some(12))
    );
    let detail: serde_json::Value =
        serde_json::from_str(e.detail.as_deref().expect("a detail")).expect("JSON text");
    assert_eq!(detail, serde_json::json!({"note": "first"}));
    // The copy's partition: the messaging partition id on the delivery, `outbox.partition` on
    // the ACK; none on the relay's spans, which name no partition.
    let positions: Vec<(Kind, Option<u64>, Option<i32>)> = http
        .iter()
        .filter(|r| {
            matches!(
                r.event.kind,
                Kind::PublishAcked | Kind::Delivered | Kind::Acked
            )
        })
        .map(|r| (r.event.kind, r.event.broker_seq, r.event.partition))
        .collect();
    assert_eq!(
        positions,
        [
            (Kind::PublishAcked, Some(7), None),
            (Kind::Delivered, Some(7), Some(2)),
            (Kind::Acked, Some(7), Some(2)),
        ]
    );
    same_rows(&http, &grpc, "gRPC");
    same_rows(&http, &json, "OTLP JSON");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_spans_over_http_protobuf_grpc_and_json_give_the_same_rows() {
    three_ways_give_the_same_rows(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bodies_give_the_same_rows() {
    three_ways_give_the_same_rows(true).await;
}

/// One HTTP/1.1 request on a fresh connection; the status and the body.
fn post(endpoint: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, Vec<u8>) {
    let address = endpoint.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head += &format!("{name}: {value}\r\n");
    }
    head += "\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a reply head");
    let status_line = String::from_utf8_lossy(&reply[..split]).to_string();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {status_line}"));
    // The receiver's replies are never chunked: Content-Length bodies.
    (status, reply[split + 4..].to_vec())
}

/// An empty `ExportTraceServiceRequest` as protobuf (no spans): valid, zero bytes.
const EMPTY: &[u8] = b"";

async fn post_async(
    endpoint: String,
    headers: &'static [(&'static str, &'static str)],
    body: Vec<u8>,
) -> (u16, Vec<u8>) {
    tokio::task::spawn_blocking(move || post(&endpoint, "/v1/traces", headers, &body))
        .await
        .unwrap()
}

const PROTOBUF: &[(&str, &str)] = &[("Content-Type", "application/x-protobuf")];
const JSON: &[(&str, &str)] = &[("Content-Type", "application/json")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_body_gets_400_and_the_next_request_is_served() {
    let (tx, mut rx) = mpsc::channel::<Intake>(4);
    let receiver = OtlpReceiver::start(tx).unwrap();
    let endpoint = receiver.http_endpoint();
    assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint}");
    assert!(receiver.grpc_endpoint().starts_with("http://127.0.0.1:"));
    let consumer = tokio::spawn(async move {
        let mut spans = Vec::new();
        while let Some(intake) = rx.recv().await {
            spans.push(intake.request.span_count());
            intake.answer(Answer::partial(2, "two spans were not taken"));
        }
        spans
    });

    // Garbage as protobuf (a field of wire type 7, which does not exist) and as JSON.
    let (status, body) = post_async(endpoint.clone(), PROTOBUF, vec![0x0f, 0xff, 0xff]).await;
    assert_eq!(status, 400);
    assert!(!body.is_empty(), "a google.rpc.Status body");
    let (status, body) =
        post_async(endpoint.clone(), JSON, b"{\"resourceSpans\": 7".to_vec()).await;
    assert_eq!(status, 400);
    let status_body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status_body["code"], 3, "INVALID_ARGUMENT: {status_body}");
    assert!(status_body["message"].as_str().unwrap().contains("OTLP"));
    // A gzip header over bytes that are not gzip.
    let (status, _) = post_async(
        endpoint.clone(),
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "gzip"),
        ],
        b"not gzip".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    // Not an OTLP content type, not a supported encoding.
    let (status, _) = post_async(
        endpoint.clone(),
        &[("Content-Type", "text/plain")],
        b"x".to_vec(),
    )
    .await;
    assert_eq!(status, 415);
    let (status, _) = post_async(
        endpoint.clone(),
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "br"),
        ],
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(status, 415);

    // The next requests are served, and the run's partial answer reaches the sender.
    let (status, body) = post_async(endpoint.clone(), PROTOBUF, EMPTY.to_vec()).await;
    assert_eq!(status, 200);
    // ExportTraceServiceResponse { partial_success { rejected_spans: 2, error_message } }.
    let response =
        <outbox_trace::otlp::proto::ExportTraceServiceResponse as prost::Message>::decode(
            body.as_slice(),
        )
        .unwrap();
    let partial = response.partial_success.expect("a partial success");
    assert_eq!(partial.rejected_spans, 2);
    assert_eq!(partial.error_message, "two spans were not taken");
    let (status, body) = post_async(endpoint.clone(), JSON, b"{}".to_vec()).await;
    assert_eq!(status, 200);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["partialSuccess"]["rejectedSpans"], "2", "{answer}");

    let stats = receiver.stats();
    assert_eq!(
        stats,
        ReceiverStats {
            requests: 7,
            spans: 0,
            bad_bodies: 3,
            refused: 2
        }
    );
    receiver.stop().await;
    assert_eq!(
        consumer.await.unwrap(),
        [0, 0],
        "two requests reached the run"
    );
}

/// The next request the run gets; a test fails rather than hangs when none comes.
async fn next(rx: &mut mpsc::Receiver<Intake>) -> Intake {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("a request reaches the run within 30 s")
        .expect("the receiver is running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_waits_for_the_run_and_a_dropped_one_is_503() {
    let (tx, mut rx) = mpsc::channel::<Intake>(4);
    let receiver = OtlpReceiver::start(tx).unwrap();
    let endpoint = receiver.http_endpoint();

    // The run holds the first request's answer: its sender hears nothing until it is given.
    let first = tokio::spawn(post_async(endpoint.clone(), PROTOBUF, EMPTY.to_vec()));
    let held = next(&mut rx).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!first.is_finished(), "answered before the run answered");
    assert!(held.answer(Answer::accepted()));
    let (status, body) = first.await.unwrap();
    assert_eq!(
        (status, body.len()),
        (200, 0),
        "an empty ExportTraceServiceResponse"
    );

    // The run drops the reply: 503 with UNAVAILABLE, so an exporter retries.
    let second = tokio::spawn(post_async(endpoint.clone(), JSON, b"{}".to_vec()));
    drop(next(&mut rx).await);
    let (status, body) = second.await.unwrap();
    assert_eq!(status, 503);
    let status_body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status_body["code"], 14, "UNAVAILABLE: {status_body}");

    // The run is gone altogether: 503 too, and the receiver still stops cleanly.
    drop(rx);
    let (status, _) = post_async(endpoint.clone(), PROTOBUF, EMPTY.to_vec()).await;
    assert_eq!(status, 503);
    receiver.stop().await;
    assert!(
        TcpStream::connect(endpoint.strip_prefix("http://").unwrap()).is_err(),
        "the port is closed after stop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_cap_is_413_compressed_or_not() {
    use outbox_recorder::system::receiver::MAX_BODY;
    let (tx, mut rx) = mpsc::channel::<Intake>(4);
    let receiver = OtlpReceiver::start(tx).unwrap();
    let endpoint = receiver.http_endpoint();
    tokio::spawn(async move {
        while let Some(intake) = rx.recv().await {
            intake.answer(Answer::accepted());
        }
    });

    // Declared too large: refused before the body is read.
    let address = endpoint.strip_prefix("http://").unwrap().to_string();
    let status = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "POST /v1/traces HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\n\
             Content-Length: {}\r\n\r\n",
            MAX_BODY + 1
        )
        .unwrap();
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).unwrap();
        String::from_utf8_lossy(&head).to_string()
    })
    .await
    .unwrap();
    assert_eq!(status, "HTTP/1.1 413");

    // A small gzip body that inflates past the cap.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1024 * 1024];
    for _ in 0..=MAX_BODY / zeros.len() {
        encoder.write_all(&zeros).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < MAX_BODY / 100);
    let (status, _) = post_async(
        endpoint.clone(),
        &[
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "gzip"),
        ],
        bomb,
    )
    .await;
    assert_eq!(status, 413);

    // And the receiver goes on.
    let (status, _) = post_async(endpoint, PROTOBUF, EMPTY.to_vec()).await;
    assert_eq!(status, 200);
    let stats = receiver.stats();
    assert_eq!((stats.requests, stats.refused, stats.bad_bodies), (3, 2, 0));
    receiver.stop().await;
}

/// Calls the gRPC method with raw messages through grpcio, as an exporter would; prints each
/// call's status code name.
const GRPC_SCRIPT: &str = r#"
import sys, grpc
channel = grpc.insecure_channel(sys.argv[1].removeprefix("http://"))
export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
metrics = channel.unary_unary("/opentelemetry.proto.collector.metrics.v1.MetricsService/Export")
def call(method, body, compression=None):
    try:
        method(body, timeout=30, compression=compression)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name
print(call(export, b"\x0f\xff\xff"))
print(call(export, b""))
print(call(export, b"", grpc.Compression.Gzip))
print(call(export, b""))
print(call(metrics, b""))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_answers_a_bad_message_a_dropped_answer_and_another_method_with_their_codes() {
    let (tx, mut rx) = mpsc::channel::<Intake>(4);
    let receiver = OtlpReceiver::start(tx).unwrap();
    // The run answers two requests and drops the third.
    let consumer = tokio::spawn(async move {
        for answered in [true, true, false] {
            let intake = next(&mut rx).await;
            if answered {
                intake.answer(Answer::accepted());
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("grpc_calls.py");
    std::fs::write(&script, GRPC_SCRIPT).unwrap();
    let output = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(receiver.grpc_endpoint())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(SCRIPT_TIME, output)
        .await
        .expect("the gRPC script ends")
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let codes = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(
        codes.lines().collect::<Vec<_>>(),
        [
            "INVALID_ARGUMENT",
            "OK",
            "OK",
            "UNAVAILABLE",
            "UNIMPLEMENTED"
        ]
    );
    consumer.await.unwrap();
    let stats = receiver.stats();
    assert_eq!((stats.requests, stats.bad_bodies), (4, 1));
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_received_twice_gives_its_row_once_and_the_copy_is_counted() {
    // An exporter that did not get its answer in time sends the same spans again.
    let (tx, mut rx) = mpsc::channel::<Intake>(4);
    let receiver = OtlpReceiver::start(tx).unwrap();
    let body = serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "worker"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "name": "commit", "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
            "attributes": [
                {"key": "outbox.kind", "value": {"stringValue": "effect_committed"}},
                {"key": "outbox.event_id", "value": {"stringValue": "e-1"}},
                {"key": "outbox.task_id", "value": {"stringValue": "t-1"}}]}]}]}]})
    .to_string()
    .into_bytes();
    let consumer = tokio::spawn(async move {
        let mut mapper = LiveMapper::new();
        let (mut rows, mut counts) = (0, outbox_trace::otlp::Counts::default());
        for _ in 0..2 {
            let intake = next(&mut rx).await;
            let mapped = mapper.map(&intake.request);
            rows += mapped.events.len();
            for d in &mapped.dropped {
                counts.add(&d.why);
            }
            intake.answer(Answer::accepted());
        }
        (rows, counts)
    });
    for _ in 0..2 {
        let (status, _) = post_async(receiver.http_endpoint(), JSON, body.clone()).await;
        assert_eq!(status, 200);
    }
    let (rows, counts) = consumer.await.unwrap();
    assert_eq!(rows, 1, "the copy gives no second commit");
    let mut end = outbox_trace::detail::RunEnd::default();
    counts.fill(&mut end);
    assert_eq!(end.duplicate_spans, Some(1));
    receiver.stop().await;
}
