//! Writing: the same mapping backwards. Every row becomes one span of zero length at the run's
//! start plus `ts_ns`, named after its kind and carrying `outbox.kind`, `outbox.seq` and every set
//! column as `outbox.<column>`; `run_id`, `scenario`, `backend`, `actor` and `incarnation` go on the
//! span too, so each span stands alone. The spans of one actor life share a resource
//! (`service.name` = actor, `service.instance.id` = `actor#incarnation`), and the spans of one
//! `event_id` (else one scenario) share a trace, so a viewer shows one event's story as one trace.
//! Ids are derived from the row (trace: a hash of run, scenario and event; span: `seq`), so the
//! same trace always gives the same file.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use super::key;
use crate::{Event, TraceError};

/// Spans per `TracesData` line.
const SPANS_PER_LINE: usize = 1024;

/// The instrumentation scope the recorder's spans name.
const SCOPE: &str = "outbox-trace";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TracesData<'a> {
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans<'a> {
    resource: Resource<'a>,
    scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Serialize)]
struct Resource<'a> {
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Serialize)]
struct ScopeSpans<'a> {
    scope: Scope,
    spans: Vec<Span<'a>>,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Span<'a> {
    trace_id: String,
    span_id: String,
    name: &'a str,
    /// `SPAN_KIND_INTERNAL`.
    kind: u8,
    start_time_unix_nano: String,
    end_time_unix_nano: String,
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Serialize)]
struct KeyValue<'a> {
    key: &'static str,
    value: AnyValue<'a>,
}

/// An attribute value as the OTLP JSON mapping writes it (64-bit integers as strings).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum AnyValue<'a> {
    StringValue(Cow<'a, str>),
    IntValue(String),
}

fn text<'a>(key: &'static str, value: impl Into<Cow<'a, str>>) -> KeyValue<'a> {
    KeyValue {
        key,
        value: AnyValue::StringValue(value.into()),
    }
}

/// An integer attribute: `intValue` (OTLP's int64) where it fits, else its decimal text
/// (a `UInt64` column above `i64::MAX`), which the reader parses the same way.
fn int<'a>(key: &'static str, value: impl Into<i128>) -> KeyValue<'a> {
    let value = value.into();
    let value = match i64::try_from(value) {
        Ok(v) => AnyValue::IntValue(v.to_string()),
        Err(_) => AnyValue::StringValue(value.to_string().into()),
    };
    KeyValue { key, value }
}

/// Every column of a row as its `outbox.*` attribute (unset optional columns left out).
fn attributes(e: &Event) -> Vec<KeyValue<'_>> {
    let mut out = vec![
        text(key::KIND, e.kind.as_str()),
        int(key::SEQ, e.seq),
        text(key::RUN_ID, e.run_id.as_str()),
        text(key::SCENARIO, e.scenario.as_str()),
        text(key::BACKEND, e.backend.as_str()),
        text(key::ACTOR, e.actor.as_str()),
        int(key::INCARNATION, e.incarnation),
    ];
    let strings = [
        (key::TASK_ID, &e.task_id),
        (key::EVENT_ID, &e.event_id),
        (key::AGGREGATE_ID, &e.aggregate_id),
        (key::COUNTER_KEY, &e.counter_key),
    ];
    out.extend(
        strings
            .into_iter()
            .filter_map(|(k, v)| v.as_deref().map(|v| text(k, v))),
    );
    let ints: [(&'static str, Option<i128>); 7] = [
        (key::AGGREGATE_SEQ, e.aggregate_seq.map(i128::from)),
        (key::ATTEMPT, e.attempt.map(i128::from)),
        (key::BROKER_SEQ, e.broker_seq.map(i128::from)),
        (key::PARTITION, e.partition.map(i128::from)),
        (key::STORE_REV, e.store_rev.map(i128::from)),
        (key::AMOUNT, e.amount.map(i128::from)),
        (key::COUNTER, e.counter.map(i128::from)),
    ];
    out.extend(ints.into_iter().filter_map(|(k, v)| v.map(|v| int(k, v))));
    if let Some(d) = &e.detail {
        out.push(text(key::DETAIL, d.as_str()));
    }
    out
}

/// FNV-1a over `parts`, from `seed`.
fn fnv(seed: u64, parts: &[&str]) -> u64 {
    let mut h = seed;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn trace_id(e: &Event) -> String {
    let parts = [
        e.run_id.as_str(),
        e.scenario.as_str(),
        e.event_id.as_deref().unwrap_or(""),
    ];
    let hi = fnv(0xcbf2_9ce4_8422_2325, &parts);
    let lo = fnv(0x6c62_272e_07bb_0142, &parts);
    format!("{hi:016x}{lo:016x}")
}

/// Creates (or truncates) `path` and writes `events` to it (see [`write_to`]).
pub fn create(path: &Path, events: &[Event], epoch_unix_nano: u64) -> Result<(), TraceError> {
    let file = std::fs::File::create(path).map_err(|e| TraceError::io(path, e))?;
    write_to(events, epoch_unix_nano, BufWriter::new(file)).map_err(|e| TraceError::io(path, e))
}

/// Writes `events` as OTLP JSON Lines: one `TracesData` object per line, rows in the order
/// given. `epoch_unix_nano` is the wall-clock time of `ts_ns = 0`.
pub fn write_to(
    events: &[Event],
    epoch_unix_nano: u64,
    mut sink: impl Write,
) -> std::io::Result<()> {
    for chunk in events.chunks(SPANS_PER_LINE) {
        // One resource per actor life, in order of first appearance within the line.
        let mut lives: BTreeMap<(&str, &str, &str, u32), usize> = BTreeMap::new();
        let mut resource_spans: Vec<ResourceSpans> = Vec::new();
        for e in chunk {
            let life = (
                e.run_id.as_str(),
                e.scenario.as_str(),
                e.actor.as_str(),
                e.incarnation,
            );
            let at = *lives.entry(life).or_insert_with(|| {
                resource_spans.push(ResourceSpans {
                    resource: Resource {
                        attributes: vec![
                            text(key::SERVICE_NAME, e.actor.as_str()),
                            text(
                                key::SERVICE_INSTANCE_ID,
                                format!("{}#{}", e.actor, e.incarnation),
                            ),
                        ],
                    },
                    scope_spans: [ScopeSpans {
                        scope: Scope {
                            name: SCOPE,
                            version: env!("CARGO_PKG_VERSION"),
                        },
                        spans: Vec::new(),
                    }],
                });
                resource_spans.len() - 1
            });
            let time = epoch_unix_nano.saturating_add_signed(e.ts_ns).to_string();
            resource_spans[at].scope_spans[0].spans.push(Span {
                trace_id: trace_id(e),
                span_id: format!("{:016x}", e.seq.wrapping_add(1).max(1)),
                name: e.kind.as_str(),
                kind: 1,
                start_time_unix_nano: time.clone(),
                end_time_unix_nano: time,
                attributes: attributes(e),
            });
        }
        let line = TracesData { resource_spans };
        serde_json::to_writer(&mut sink, &line)?;
        sink.write_all(b"\n")?;
    }
    sink.flush()
}
