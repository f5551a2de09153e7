//! The `intake` part (`outbox-bench --parts intake`): how many spans a second the OTLP receiver takes from the
//! socket into a Parquet trace: OTLP/HTTP protobuf requests from a few concurrent connections,
//! decoded by the receiver, mapped to rows by the contract's live mapping, and written by the
//! run's one trace writer, the file joined at the end. The clock runs from the first request
//! sent until the trace file is complete.
//!
//! The client sends prepared bodies (encoding them is the exporting process's cost, not the
//! recorder's), each a request of [`BATCH`] spans as an SDK's batch processor would send it;
//! every span carries `outbox.kind` and the columns its kind requires, so every span is one row.

use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::header;
use outbox_recorder::journal::author::{ActorId, Author, Role};
use outbox_recorder::journal::writer::{Entry, Journal, Recorder, Target};
use outbox_recorder::system::receiver::{Answer, Intake, OtlpReceiver};
use outbox_trace::detail::RunConfig;
use outbox_trace::otlp::proto::{
    any_value, AnyValue, ExportTraceServiceRequest, KeyValue, Resource, ResourceSpans, ScopeSpans,
    Span,
};
use outbox_trace::otlp::{key, LiveMapper};
use outbox_trace::{Kind, Step, TraceFile};
use prost::Message as _;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Spans per request.
pub const BATCH: usize = 512;
/// Requests sent.
const REQUESTS: usize = 512;
/// Connections sending at once.
const CONNECTIONS: usize = 4;
/// The figure the README promises on a 2-core machine.
const TARGET_SPANS_PER_S: f64 = 50_000.0;
/// The spans' clock: 2023-11-14, as an SDK would stamp them.
const T0_UNIX_NS: u64 = 1_700_000_000_000_000_000;

/// Runs the part; its figures, the trace written to `<out>/intake.parquet`.
pub async fn measure(out: &Path) -> anyhow::Result<Value> {
    let trace = out.join("intake.parquet");
    let _ = std::fs::remove_file(&trace);
    let bodies: Vec<Bytes> = (0..REQUESTS).map(body).collect();
    let body_bytes: usize = bodies.iter().map(Bytes::len).sum();

    let run_json = serde_json::to_string(&RunConfig::default())?;
    let (journal, recorder) = Journal::start(&trace, "bench-intake", "system:bench", run_json)?;
    let (tx, rx) = mpsc::channel(CONNECTIONS * 2);
    let receiver = OtlpReceiver::start(tx).context("starting the OTLP receiver")?;
    let consumer = tokio::spawn(consume(rx, recorder));

    let started = Instant::now();
    let endpoint = receiver.http_endpoint();
    let mut clients = Vec::new();
    for connection in 0..CONNECTIONS {
        let mine: Vec<Bytes> = bodies
            .iter()
            .skip(connection)
            .step_by(CONNECTIONS)
            .cloned()
            .collect();
        clients.push(tokio::spawn(send_all(endpoint.clone(), mine)));
    }
    for client in clients {
        client.await.context("a client task")??;
    }
    let answered = started.elapsed();
    let stats = receiver.stats();
    receiver.stop().await;
    let rows_sent = consumer.await.context("the consumer task")??;
    let (rows, _) = journal.finish(Target::Out).await?;
    let elapsed = started.elapsed();

    let spans = (REQUESTS * BATCH) as u64;
    let in_file = TraceFile::open(&trace)?.info().rows;
    anyhow::ensure!(
        stats.spans == spans && rows_sent == spans && rows == spans && in_file == spans,
        "{spans} spans sent, the receiver counted {}, {rows_sent} rows mapped, {rows} written, \
         {in_file} in {}",
        stats.spans,
        trace.display()
    );
    let rate = spans as f64 / elapsed.as_secs_f64();
    Ok(json!({
        "spans": spans,
        "spans_per_request": BATCH,
        "connections": CONNECTIONS,
        "request_bytes": body_bytes,
        "answered_s": round3(answered.as_secs_f64()),
        "in_trace_s": round3(elapsed.as_secs_f64()),
        "spans_per_s": rate.round(),
        "target_spans_per_s": TARGET_SPANS_PER_S,
        "meets_target": rate >= TARGET_SPANS_PER_S,
        "trace_bytes": std::fs::metadata(&trace)?.len(),
    }))
}

/// The run's side: maps each request, queues its rows for the writer, then answers it. Returns
/// the rows queued.
async fn consume(mut rx: mpsc::Receiver<Intake>, recorder: Recorder) -> anyhow::Result<u64> {
    let mut mapper = LiveMapper::new();
    let mut rows = 0;
    while let Some(intake) = rx.recv().await {
        let mapped = mapper.map(&intake.request);
        anyhow::ensure!(
            mapped.rejected.is_empty(),
            "the mapping rejected spans: {}",
            mapped.rejected.join("; ")
        );
        for live in mapped.events {
            let step = Step::try_from(&live.event)
                .map_err(|e| anyhow::anyhow!("a {} row: {e}", live.event.kind))?;
            let entry = Entry {
                scenario: live.event.scenario.clone(),
                author: author(&live.event.actor)?,
                incarnation: live.event.incarnation,
                ts_ns: i64::try_from(live.at_unix_ns.saturating_sub(T0_UNIX_NS))?,
                step,
            };
            recorder.record(entry).await?;
            rows += 1;
        }
        intake.answer(Answer::accepted());
    }
    Ok(rows)
}

/// The lab role an actor's name spells: the bench's spans come from the lab's roles.
fn author(actor: &str) -> anyhow::Result<Author> {
    [Role::Api, Role::Relay, Role::Worker]
        .into_iter()
        .find(|role| role.name() == actor)
        .map(|role| Author::from(ActorId::only(role)))
        .ok_or_else(|| anyhow::anyhow!("the bench sent no span of actor `{actor}`"))
}

/// Sends every body in turn on one keep-alive connection; each must be answered 200.
async fn send_all(endpoint: String, bodies: Vec<Bytes>) -> anyhow::Result<()> {
    let address = endpoint.trim_start_matches("http://").to_string();
    let stream = tokio::net::TcpStream::connect(&address).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    let connection = tokio::spawn(connection);
    for body in bodies {
        let request = hyper::Request::post("/v1/traces")
            .header(header::HOST, &address)
            .header(header::CONTENT_TYPE, "application/x-protobuf")
            .body(Full::new(body))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let reply = response.into_body().collect().await?.to_bytes();
        anyhow::ensure!(
            status.is_success(),
            "the receiver answered {status}: {}",
            String::from_utf8_lossy(&reply)
        );
    }
    drop(sender);
    connection.await??;
    Ok(())
}

/// Request `n`: [`BATCH`] spans of one actor life, steps of tasks of their own.
fn body(n: usize) -> Bytes {
    let actor = ["api", "relay", "worker"][n % 3];
    let spans = (0..BATCH).map(|i| span(n, i, actor)).collect();
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    string(key::SERVICE_NAME, actor),
                    string(key::RUN_ID, "bench-intake"),
                    int(key::INCARNATION, 1),
                ],
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
        }],
    };
    Bytes::from(request.encode_to_vec())
}

/// Span `i` of request `n`: a step of `actor` that reports one row of the kind its role reports.
fn span(n: usize, i: usize, actor: &str) -> Span {
    let task = (n * BATCH + i) as i64;
    let end = T0_UNIX_NS + task as u64 * 1_000;
    let kind = match actor {
        "api" => Kind::TaskAccepted,
        "relay" => Kind::PublishAcked,
        _ => Kind::EffectCommitted,
    };
    let mut attributes = vec![
        string(key::KIND, kind.as_str()),
        string(key::TASK_ID, &format!("t-{task:07}")),
        string(key::EVENT_ID, &format!("e-{task:07}")),
        string(key::AGGREGATE_ID, &format!("agg-{:02}", task % 16)),
        int(key::STORE_REV, task + 1),
    ];
    match kind {
        Kind::PublishAcked => {
            attributes.push(int(key::ATTEMPT, 1));
            attributes.push(int(key::BROKER_SEQ, task + 1));
        }
        Kind::EffectCommitted => {
            attributes.push(int(key::AMOUNT, 1 + task % 5));
            attributes.push(int(key::COUNTER, task));
        }
        _ => {}
    }
    Span {
        trace_id: (task as u128 + 1).to_be_bytes().to_vec(),
        span_id: (task as u64 + 1).to_be_bytes().to_vec(),
        name: kind.as_str().to_string(),
        start_time_unix_nano: end - 500,
        end_time_unix_nano: end,
        attributes,
        ..Default::default()
    }
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
    }
}

fn int(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(value)),
        }),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
