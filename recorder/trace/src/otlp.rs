//! OpenTelemetry spans (OTLP JSON Lines: one `TracesData` object per line, as the Collector's
//! file exporter and the SDKs' file exporters write it) as `outbox-trace/1` events, both ways,
//! mapped as the contract's section "OpenTelemetry spans" says: reading any producer's spans
//! (`decode`, used by [`crate::input`]) and writing a trace's rows as spans ([`mod@write`], what
//! `recorder run --otlp` writes). The attribute names of the mapping are written once, in [`key`].
//!
//! The OTLP JSON is read with the few serde structs below rather than the `opentelemetry-proto`
//! crate: that crate's message types come only with its `gen-tonic-messages` feature (prost and
//! tonic) and it depends on `opentelemetry` and `opentelemetry_sdk`, far more than this contract
//! crate, which links no network client, should carry for six fields. The structs accept what the
//! file exporters write: ids in hex (not read), 64-bit integers as strings or numbers, enums as
//! numbers or names, unknown fields ignored. The writer's structs write the OTLP JSON mapping:
//! ids in hex, 64-bit integers as strings, enums as numbers.
//!
//! Unlike the other encodings, the whole file is read before any row is handed out: `ts_ns`
//! counts from the run's earliest event, incarnations rank instances by their earliest span, and
//! `seq` may come from the time order of the whole run.

use std::collections::HashMap;
use std::io::BufRead;

use serde::Deserialize;
use serde_json::Value;

use crate::input::{lines, Chunker, Decoded};
use crate::{Event, Kind, TraceError};

/// The attribute names of the mapping, written once: the reader looks them up, the writer sets them.
pub mod key {
    /// The event's kind (a kind of the contract).
    pub const KIND: &str = "outbox.kind";
    /// `seq`: the recording order within the run.
    pub const SEQ: &str = "outbox.seq";
    /// `run_id` (else the file's name without extensions).
    pub const RUN_ID: &str = "outbox.run_id";
    /// `scenario` (else `default`).
    pub const SCENARIO: &str = "outbox.scenario";
    /// `backend` (else `otel`).
    pub const BACKEND: &str = "outbox.backend";
    /// `actor` (else the resource's `service.name`).
    pub const ACTOR: &str = "outbox.actor";
    /// `incarnation` (else the rank of `service.instance.id`).
    pub const INCARNATION: &str = "outbox.incarnation";
    /// The column `task_id`.
    pub const TASK_ID: &str = "outbox.task_id";
    /// The column `event_id` (else `messaging.message.id`).
    pub const EVENT_ID: &str = "outbox.event_id";
    /// The column `aggregate_id`.
    pub const AGGREGATE_ID: &str = "outbox.aggregate_id";
    /// The column `aggregate_seq`.
    pub const AGGREGATE_SEQ: &str = "outbox.aggregate_seq";
    /// The column `attempt`.
    pub const ATTEMPT: &str = "outbox.attempt";
    /// The column `broker_seq` (else `messaging.kafka.offset`).
    pub const BROKER_SEQ: &str = "outbox.broker_seq";
    /// The column `store_rev`.
    pub const STORE_REV: &str = "outbox.store_rev";
    /// The column `amount`.
    pub const AMOUNT: &str = "outbox.amount";
    /// The column `counter`.
    pub const COUNTER: &str = "outbox.counter";
    /// The column `counter_key`.
    pub const COUNTER_KEY: &str = "outbox.counter_key";
    /// The column `detail`.
    pub const DETAIL: &str = "outbox.detail";
    /// The resource's service: the actor when `outbox.actor` is absent.
    pub const SERVICE_NAME: &str = "service.name";
    /// The resource's instance: ranks an actor's lives when `outbox.incarnation` is absent.
    pub const SERVICE_INSTANCE_ID: &str = "service.instance.id";
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TracesData {
    #[serde(default)]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(default)]
    scope_spans: Vec<ScopeSpans>,
}

#[derive(Deserialize, Default)]
struct Resource {
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct ScopeSpans {
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    #[serde(default)]
    start_time_unix_nano: Option<Value>,
    #[serde(default)]
    end_time_unix_nano: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    events: Vec<SpanEvent>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpanEvent {
    #[serde(default)]
    time_unix_nano: Option<Value>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<Value>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Option<Value>,
}

/// One attribute value as text (`stringValue`, `intValue`, `boolValue`, `doubleValue`).
fn text(v: &Value) -> Option<String> {
    let o = v.as_object()?;
    if let Some(s) = o.get("stringValue").and_then(Value::as_str) {
        return Some(s.to_string());
    }
    for key in ["intValue", "boolValue", "doubleValue"] {
        match o.get(key) {
            Some(Value::String(s)) => return Some(s.clone()),
            Some(Value::Null) | None => {}
            Some(other) => return Some(other.to_string()),
        }
    }
    None
}

/// A nanosecond time: a decimal string or a number.
fn nanos(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// Attributes of a span (or span event) in front of its resource's.
struct Attrs<'a> {
    own: &'a [KeyValue],
    resource: &'a [KeyValue],
}

impl Attrs<'_> {
    fn get(&self, key: &str) -> Option<String> {
        let find = |kvs: &[KeyValue]| {
            kvs.iter()
                .find(|kv| kv.key == key)
                .and_then(|kv| kv.value.as_ref())
                .and_then(text)
        };
        find(self.own).or_else(|| find(self.resource))
    }
}

/// An event before the run-wide numbers (`seq`, `ts_ns`, `incarnation`) are known.
struct Pending {
    event: Event,
    unknown_kind: Option<String>,
    /// Absolute time, nanoseconds since the epoch.
    at: u64,
    /// The start time of the event's span (ranks an actor's instances by their earliest span).
    span_at: u64,
    /// The span's position in the file, and the event's position inside the span.
    order: (u64, u32),
    seq: Option<u64>,
    incarnation: Option<u32>,
    instance: Option<String>,
    /// The kind came from the messaging conventions, not from `outbox.kind`.
    derived: bool,
}

/// Decodes OTLP JSON Lines into canonical batches. `stem` is the default `run_id`.
pub(crate) fn decode(text_in: impl BufRead, stem: &str) -> Result<Decoded, TraceError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut deliveries = Deliveries::default();
    let mut spans = 0u64;
    lines(text_in, |line, text| {
        let data: TracesData = serde_json::from_str(text).map_err(|e| TraceError::Line {
            line,
            reason: format!("not an OTLP TracesData object: {e}"),
        })?;
        for rs in &data.resource_spans {
            let empty = Resource::default();
            let resource = rs.resource.as_ref().unwrap_or(&empty);
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    spans += 1;
                    let mut these = Vec::new();
                    map_span(span, &resource.attributes, spans, stem, &mut these)
                        .map_err(|reason| TraceError::Line { line, reason })?;
                    these.retain(|p| !deliveries.repeated(p));
                    pending.extend(these);
                }
            }
        }
        Ok(())
    })?;
    if pending.is_empty() {
        return Err(TraceError::Empty);
    }
    let mut out = Decoded {
        version_declared: true,
        ..Decoded::default()
    };
    // Group by run.
    let mut runs: HashMap<String, Vec<Pending>> = HashMap::new();
    let mut run_order = Vec::new();
    for p in pending {
        let run = p.event.run_id.clone();
        if !runs.contains_key(&run) {
            run_order.push(run.clone());
        }
        runs.entry(run).or_default().push(p);
    }
    let mut chunker = Chunker::default();
    for run in run_order {
        let mut events = runs.remove(&run).unwrap_or_default();
        let start = events.iter().map(|p| p.at).min().unwrap_or(0);
        // Incarnations: the rank of each instance among its actor's, by earliest span.
        let mut first_seen: HashMap<(String, String), u64> = HashMap::new();
        for p in &events {
            if let Some(i) = &p.instance {
                let key = (p.event.actor.clone(), i.clone());
                let at = first_seen.entry(key).or_insert(p.span_at);
                *at = (*at).min(p.span_at);
            }
        }
        let mut ranks: HashMap<(String, String), u32> = HashMap::new();
        let mut by_actor: HashMap<&str, Vec<(u64, &str)>> = HashMap::new();
        for ((actor, instance), at) in &first_seen {
            by_actor
                .entry(actor.as_str())
                .or_default()
                .push((*at, instance.as_str()));
        }
        for (actor, mut instances) in by_actor {
            instances.sort_unstable();
            for (rank, (_, instance)) in instances.into_iter().enumerate() {
                let rank = u32::try_from(rank).unwrap_or(u32::MAX);
                ranks.insert((actor.to_string(), instance.to_string()), rank);
            }
        }
        let all_seq = events.iter().all(|p| p.seq.is_some());
        if all_seq {
            events.sort_by_key(|p| p.seq);
        } else {
            out.seq_from_clocks = true;
            events.sort_by_key(|p| (p.at, p.order));
        }
        for (i, mut p) in events.into_iter().enumerate() {
            p.event.seq = if all_seq {
                p.seq.unwrap_or(0)
            } else {
                i as u64 + 1
            };
            p.event.ts_ns = i64::try_from(p.at - start).unwrap_or(i64::MAX);
            p.event.incarnation = match (p.incarnation, &p.instance) {
                (Some(n), _) => n,
                (None, Some(instance)) => ranks
                    .get(&(p.event.actor.clone(), instance.clone()))
                    .copied()
                    .unwrap_or(0),
                (None, None) => 0,
            };
            chunker.push(p.event, p.unknown_kind)?;
        }
    }
    let (batches, rows) = chunker.finish()?;
    out.batches = batches;
    out.rows = rows;
    Ok(out)
}

/// Settlements that are no ACK (`messaging.operation.name` of a `settle` span).
const NEGATIVE_SETTLEMENTS: [&str; 5] = ["nack", "reject", "abandon", "dead_letter", "release"];

/// One `delivered` per message and actor life: a `receive` and a `process` span of the same
/// message (same id, same delivery count) in one life are one delivery. Both the file reader and
/// the live mapper keep one of these.
#[derive(Debug, Default)]
#[allow(clippy::type_complexity)]
struct Deliveries(
    std::collections::HashSet<(String, Option<String>, Option<String>, Option<u32>, Option<u64>)>,
);

impl Deliveries {
    /// Whether `p` is a messaging delivery already seen (then it is dropped). Rows named by
    /// `outbox.kind` are never merged: two copies of one event are two deliveries.
    fn repeated(&mut self, p: &Pending) -> bool {
        let (e, incarnation, instance) = (&p.event, p.incarnation, p.instance.as_ref());
        if !p.derived || !matches!(e.kind, Kind::Delivered | Kind::Redelivered) || e.event_id.is_none() {
            return false;
        }
        let life = incarnation
            .map(|n| n.to_string())
            .or_else(|| instance.cloned());
        !self
            .0
            .insert((e.actor.clone(), life, e.event_id.clone(), e.attempt, e.broker_seq))
    }
}

/// Whether a span's status is ERROR (code 2 or its name).
fn is_error(status: Option<&Status>) -> bool {
    match status.and_then(|s| s.code.as_ref()) {
        Some(Value::Number(n)) => n.as_u64() == Some(2),
        Some(Value::String(s)) => s == "STATUS_CODE_ERROR" || s == "2",
        _ => false,
    }
}

fn map_span(
    span: &Span,
    resource: &[KeyValue],
    index: u64,
    stem: &str,
    out: &mut Vec<Pending>,
) -> Result<(), String> {
    let attrs = Attrs {
        own: &span.attributes,
        resource,
    };
    let start = nanos(span.start_time_unix_nano.as_ref()).unwrap_or(0);
    let end = nanos(span.end_time_unix_nano.as_ref()).unwrap_or(start);
    let mut inside = 0u32;
    let mut next = || {
        inside += 1;
        (index, inside)
    };
    // A publish span's attempt comes at its start, before any of its span events.
    let operation = attrs
        .get("messaging.operation.type")
        .or_else(|| attrs.get("messaging.operation"));
    let own_kind = attrs.get(key::KIND);
    if own_kind.is_none() && matches!(operation.as_deref(), Some("send" | "publish")) {
        out.push(pending(
            &attrs,
            Kind::PublishAttempt.as_str(),
            start,
            next(),
            stem,
            true,
        )?);
    }
    let mut events: Vec<&SpanEvent> = span.events.iter().collect();
    events.sort_by_key(|e| nanos(e.time_unix_nano.as_ref()).unwrap_or(0));
    for ev in events {
        let ev_attrs = Attrs {
            own: &ev.attributes,
            resource,
        };
        // A span event sees its span's attributes too, after its own.
        let merged: Vec<KeyValue> = ev
            .attributes
            .iter()
            .chain(span.attributes.iter())
            .map(|kv| KeyValue {
                key: kv.key.clone(),
                value: kv.value.clone(),
            })
            .collect();
        if let Some(kind) = ev_attrs
            .get(key::KIND)
            .filter(|_| ev.attributes.iter().any(|kv| kv.key == key::KIND))
        {
            let at = nanos(ev.time_unix_nano.as_ref()).unwrap_or(end);
            let merged = Attrs {
                own: &merged,
                resource,
            };
            out.push(pending(&merged, &kind, at, next(), stem, false)?);
        }
    }
    match (own_kind, operation.as_deref()) {
        (Some(kind), _) => out.push(pending(&attrs, &kind, end, next(), stem, false)?),
        (None, Some("send" | "publish")) => {
            let kind = if is_error(span.status.as_ref()) {
                Kind::PublishUnacked
            } else {
                Kind::PublishAcked
            };
            out.push(pending(&attrs, kind.as_str(), end, next(), stem, true)?);
        }
        (None, Some("process" | "receive")) => {
            let again = attrs
                .get(key::ATTEMPT)
                .and_then(|a| a.parse::<u32>().ok())
                .is_some_and(|a| a > 1);
            let kind = if again {
                Kind::Redelivered
            } else {
                Kind::Delivered
            };
            out.push(pending(&attrs, kind.as_str(), end, next(), stem, true)?);
        }
        (None, Some("settle"))
            if !is_error(span.status.as_ref())
                && !attrs
                    .get("messaging.operation.name")
                    .is_some_and(|n| NEGATIVE_SETTLEMENTS.contains(&n.to_ascii_lowercase().as_str())) =>
        {
            out.push(pending(
                &attrs,
                Kind::Acked.as_str(),
                end,
                next(),
                stem,
                true,
            )?);
        }
        _ => {}
    }
    Ok(())
}

/// One event from attributes. `derived`: the kind came from the messaging conventions, so the
/// span's `outbox.seq` (if any) does not name this event.
fn pending(
    attrs: &Attrs,
    kind_name: &str,
    at: u64,
    order: (u64, u32),
    stem: &str,
    derived: bool,
) -> Result<Pending, String> {
    let (kind, unknown_kind) = match kind_name.parse::<Kind>() {
        Ok(k) => (k, None),
        Err(_) => (Kind::RunStart, Some(kind_name.to_string())),
    };
    let number = |key: &str| -> Result<Option<i128>, String> {
        match attrs.get(key) {
            None => Ok(None),
            Some(s) => s
                .trim()
                .parse::<i128>()
                .map(Some)
                .map_err(|_| format!("attribute `{key}` must be an integer, found `{s}`")),
        }
    };
    fn fit<T: TryFrom<i128>>(key: &str, v: Option<i128>) -> Result<Option<T>, String> {
        v.map(|v| T::try_from(v).map_err(|_| format!("attribute `{key}` is out of range: {v}")))
            .transpose()
    }
    let mut e = Event::new(kind);
    e.run_id = attrs.get(key::RUN_ID).unwrap_or_else(|| stem.to_string());
    e.scenario = attrs.get(key::SCENARIO).unwrap_or_else(|| "default".into());
    e.backend = attrs.get(key::BACKEND).unwrap_or_else(|| "otel".into());
    e.actor = attrs
        .get(key::ACTOR)
        .or_else(|| attrs.get(key::SERVICE_NAME))
        .unwrap_or_else(|| "unknown_service".into());
    e.task_id = attrs.get(key::TASK_ID);
    e.event_id = attrs
        .get(key::EVENT_ID)
        .or_else(|| attrs.get("messaging.message.id"));
    e.aggregate_id = attrs.get(key::AGGREGATE_ID);
    e.aggregate_seq = fit(key::AGGREGATE_SEQ, number(key::AGGREGATE_SEQ)?)?;
    e.attempt = fit(key::ATTEMPT, number(key::ATTEMPT)?)?;
    let broker = match number(key::BROKER_SEQ)? {
        Some(v) => Some(v),
        None => number("messaging.kafka.offset")?.or(number("messaging.kafka.message.offset")?),
    };
    e.broker_seq = fit(key::BROKER_SEQ, broker)?;
    e.store_rev = fit(key::STORE_REV, number(key::STORE_REV)?)?;
    e.amount = fit(key::AMOUNT, number(key::AMOUNT)?)?;
    e.counter = fit(key::COUNTER, number(key::COUNTER)?)?;
    e.counter_key = attrs.get(key::COUNTER_KEY);
    e.detail = attrs.get(key::DETAIL);
    let seq = if derived {
        None
    } else {
        fit(key::SEQ, number(key::SEQ)?)?
    };
    Ok(Pending {
        event: e,
        unknown_kind,
        at,
        span_at: at,
        order,
        seq,
        incarnation: fit(key::INCARNATION, number(key::INCARNATION)?)?,
        instance: attrs.get(key::SERVICE_INSTANCE_ID),
        derived,
    })
}

/// Writing: the same mapping backwards. Every row becomes one span of zero length at the run's
/// start plus `ts_ns`, named after its kind and carrying `outbox.kind`, `outbox.seq` and every set
/// column as `outbox.<column>`; `run_id`, `scenario`, `backend`, `actor` and `incarnation` go on the
/// span too, so each span stands alone. The spans of one actor life share a resource
/// (`service.name` = actor, `service.instance.id` = `actor#incarnation`), and the spans of one
/// `event_id` (else one scenario) share a trace, so a viewer shows one event's story as one trace.
/// Ids are derived from the row (trace: a hash of run, scenario and event; span: `seq`), so the
/// same trace always gives the same file.
pub mod write {
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
        let ints: [(&'static str, Option<i128>); 6] = [
            (key::AGGREGATE_SEQ, e.aggregate_seq.map(i128::from)),
            (key::ATTEMPT, e.attempt.map(i128::from)),
            (key::BROKER_SEQ, e.broker_seq.map(i128::from)),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::batch_events;
    use std::collections::BTreeMap;

    fn events(text: &str) -> (Vec<Event>, bool) {
        let decoded = decode(text.as_bytes(), "spans").unwrap();
        let mut unknown = BTreeMap::new();
        let events = decoded
            .batches
            .iter()
            .flat_map(|b| batch_events(b, &mut unknown))
            .collect();
        (events, decoded.seq_from_clocks)
    }

    #[test]
    fn messaging_spans_and_span_events_map_as_the_contract_says() {
        let line = r#"{"resourceSpans":[{"resource":{"attributes":[
            {"key":"service.name","value":{"stringValue":"relay"}},
            {"key":"service.instance.id","value":{"stringValue":"r-b"}}]},
          "scopeSpans":[{"spans":[
            {"name":"publish","startTimeUnixNano":"1000","endTimeUnixNano":"1500","status":{"code":2},
             "attributes":[{"key":"messaging.operation.type","value":{"stringValue":"send"}},
                           {"key":"messaging.message.id","value":{"stringValue":"evt-1"}},
                           {"key":"outbox.attempt","value":{"intValue":"1"}}]},
            {"name":"work","startTimeUnixNano":"2000","endTimeUnixNano":"2600",
             "attributes":[{"key":"outbox.event_id","value":{"stringValue":"evt-1"}}],
             "events":[{"timeUnixNano":"2100","name":"mark","attributes":[
                {"key":"outbox.kind","value":{"stringValue":"outbox_marked"}},
                {"key":"outbox.store_rev","value":{"intValue":7}}]}]}
          ]}]},
          {"resource":{"attributes":[
            {"key":"service.name","value":{"stringValue":"relay"}},
            {"key":"service.instance.id","value":{"stringValue":"r-a"}}]},
          "scopeSpans":[{"spans":[
            {"name":"consume","startTimeUnixNano":"500","endTimeUnixNano":"700","status":{},
             "attributes":[{"key":"messaging.operation.type","value":{"stringValue":"process"}},
                           {"key":"messaging.message.id","value":{"stringValue":"evt-0"}},
                           {"key":"messaging.kafka.offset","value":{"intValue":"42"}},
                           {"key":"outbox.attempt","value":{"intValue":"2"}}]},
            {"name":"other","startTimeUnixNano":"100","endTimeUnixNano":"200","attributes":[]}
          ]}]}]}"#
            .replace('\n', " ");
        let (events, clocks) = events(&line);
        assert!(clocks);
        let got: Vec<(u64, i64, &str, u32, Option<&str>)> = events
            .iter()
            .map(|e| {
                (
                    e.seq,
                    e.ts_ns,
                    e.kind.as_str(),
                    e.incarnation,
                    e.event_id.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 0, "redelivered", 0, Some("evt-0")),
                (2, 300, "publish_attempt", 1, Some("evt-1")),
                (3, 800, "publish_unacked", 1, Some("evt-1")),
                (4, 1400, "outbox_marked", 1, Some("evt-1")),
            ]
        );
        assert_eq!(events[0].broker_seq, Some(42));
        assert_eq!(events[3].store_rev, Some(7));
        assert!(events.iter().all(|e| e.run_id == "spans"
            && e.scenario == "default"
            && e.backend == "otel"
            && e.actor == "relay"));
    }
    #[test]
    fn written_spans_read_back_as_the_same_rows() {
        let mut rows = Vec::new();
        let mut push = |kind: Kind, actor: &str, incarnation: u32, ts_ns: i64| {
            let mut e = Event::new(kind);
            e.run_id = "r1".into();
            e.scenario = "s1".into();
            e.backend = "sqlite-redis".into();
            e.actor = actor.into();
            e.incarnation = incarnation;
            e.seq = rows.len() as u64 + 1;
            e.ts_ns = ts_ns;
            rows.push(e);
            rows.len() - 1
        };
        push(Kind::RunStart, "recorder", 0, 0);
        let t = push(Kind::TaskAccepted, "api", 0, 10);
        // Two rows at one time: `outbox.seq` keeps their order.
        let i = push(Kind::IntentRecorded, "api", 0, 10);
        let c = push(Kind::Crash, "worker", 0, 30);
        push(Kind::Restart, "worker", 1, 40);
        rows[t].task_id = Some("t-1".into());
        rows[t].event_id = Some("evt-1".into());
        rows[t].store_rev = Some(-3);
        rows[i].event_id = Some("evt-1".into());
        rows[i].store_rev = Some(-3);
        rows[i].aggregate_id = Some("a".into());
        rows[i].aggregate_seq = Some(u64::MAX);
        rows[i].counter_key = Some("apple".into());
        rows[c].detail = Some(r#"{"point":"after-commit-before-ack"}"#.into());
        let mut text = Vec::new();
        write::write_to(&rows, 1_700_000_000_000_000_000, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains(r#""stringValue":"18446744073709551615""#),
            "{text}"
        );
        assert!(text.contains(r#""intValue":"-3""#), "{text}");
        let (back, clocks) = events(&text);
        assert!(!clocks, "outbox.seq on every span");
        assert_eq!(back, rows);
    }
}
/// Spans as they arrive at a live receiver (`recorder run --system`): one OTLP export request at a
/// time, in protobuf or JSON, mapped by the same [`map_span`] as a file, so a span gives the same
/// rows whichever way it came. The run-wide numbers (`seq`, `ts_ns`) are the receiver's to give.
pub mod live {
    use prost::Message as _;
    use serde_json::{json, Value};

    use super::{
        map_span, Deliveries, KeyValue, Resource, ResourceSpans, ScopeSpans, Span, SpanEvent,
        Status, TracesData,
    };
    use crate::{Event, TraceError};

    /// The OTLP protobuf messages a receiver decodes and answers with (the fields the mapping
    /// reads; others are skipped by the decoder).
    #[allow(missing_docs)]
    pub mod proto {
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ExportTraceServiceRequest {
            #[prost(message, repeated, tag = "1")]
            pub resource_spans: Vec<ResourceSpans>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ResourceSpans {
            #[prost(message, optional, tag = "1")]
            pub resource: Option<Resource>,
            #[prost(message, repeated, tag = "2")]
            pub scope_spans: Vec<ScopeSpans>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Resource {
            #[prost(message, repeated, tag = "1")]
            pub attributes: Vec<KeyValue>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ScopeSpans {
            #[prost(message, repeated, tag = "2")]
            pub spans: Vec<Span>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Span {
            #[prost(bytes = "vec", tag = "1")]
            pub trace_id: Vec<u8>,
            #[prost(bytes = "vec", tag = "2")]
            pub span_id: Vec<u8>,
            #[prost(string, tag = "5")]
            pub name: String,
            #[prost(fixed64, tag = "7")]
            pub start_time_unix_nano: u64,
            #[prost(fixed64, tag = "8")]
            pub end_time_unix_nano: u64,
            #[prost(message, repeated, tag = "9")]
            pub attributes: Vec<KeyValue>,
            #[prost(message, repeated, tag = "11")]
            pub events: Vec<Event>,
            #[prost(message, optional, tag = "15")]
            pub status: Option<Status>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Event {
            #[prost(fixed64, tag = "1")]
            pub time_unix_nano: u64,
            #[prost(string, tag = "2")]
            pub name: String,
            #[prost(message, repeated, tag = "3")]
            pub attributes: Vec<KeyValue>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Status {
            #[prost(string, tag = "2")]
            pub message: String,
            #[prost(int32, tag = "3")]
            pub code: i32,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct KeyValue {
            #[prost(string, tag = "1")]
            pub key: String,
            #[prost(message, optional, tag = "2")]
            pub value: Option<AnyValue>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct AnyValue {
            #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4")]
            pub value: Option<any_value::Value>,
        }
        pub mod any_value {
            #[derive(Clone, PartialEq, prost::Oneof)]
            pub enum Value {
                #[prost(string, tag = "1")]
                StringValue(String),
                #[prost(bool, tag = "2")]
                BoolValue(bool),
                #[prost(int64, tag = "3")]
                IntValue(i64),
                #[prost(double, tag = "4")]
                DoubleValue(f64),
            }
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ExportTraceServiceResponse {
            #[prost(message, optional, tag = "1")]
            pub partial_success: Option<ExportTracePartialSuccess>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ExportTracePartialSuccess {
            #[prost(int64, tag = "1")]
            pub rejected_spans: i64,
            #[prost(string, tag = "2")]
            pub error_message: String,
        }
    }

    /// The encoding of an OTLP/HTTP body (already un-gzipped).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Body {
        /// `application/x-protobuf`.
        Protobuf,
        /// `application/json`.
        Json,
    }

    /// One export request, in the model the file reader maps.
    pub struct Request(TracesData);

    impl std::fmt::Debug for Request {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Request({} spans)", self.span_count())
        }
    }

    impl Request {
        /// Spans the request carries.
        pub fn span_count(&self) -> usize {
            self.0
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .map(|s| s.spans.len())
                .sum()
        }
    }

    /// Decodes one `ExportTraceServiceRequest`. Bytes that are no such message are an error (a
    /// receiver answers 400).
    pub fn decode_request(body: &[u8], format: Body) -> Result<Request, TraceError> {
        match format {
            Body::Protobuf => proto::ExportTraceServiceRequest::decode(body)
                .map(Request::from)
                .map_err(|e| TraceError::NotATrace(format!("not an OTLP protobuf request: {e}"))),
            Body::Json => serde_json::from_slice::<TracesData>(body)
                .map(Request)
                .map_err(|e| TraceError::NotATrace(format!("not an OTLP JSON request: {e}"))),
        }
    }

    fn attrs(kvs: Vec<proto::KeyValue>) -> Vec<KeyValue> {
        use proto::any_value::Value as V;
        kvs.into_iter()
            .map(|kv| KeyValue {
                key: kv.key,
                value: kv.value.and_then(|v| v.value).map(|v| match v {
                    V::StringValue(s) => json!({ "stringValue": s }),
                    V::BoolValue(b) => json!({ "boolValue": b }),
                    V::IntValue(i) => json!({ "intValue": i.to_string() }),
                    V::DoubleValue(d) => json!({ "doubleValue": d }),
                }),
            })
            .collect()
    }

    impl From<proto::ExportTraceServiceRequest> for Request {
        fn from(r: proto::ExportTraceServiceRequest) -> Self {
            let time = |n: u64| (n != 0).then(|| Value::String(n.to_string()));
            Request(TracesData {
                resource_spans: r
                    .resource_spans
                    .into_iter()
                    .map(|rs| ResourceSpans {
                        resource: rs.resource.map(|res| Resource {
                            attributes: attrs(res.attributes),
                        }),
                        scope_spans: rs
                            .scope_spans
                            .into_iter()
                            .map(|ss| ScopeSpans {
                                spans: ss
                                    .spans
                                    .into_iter()
                                    .map(|s| Span {
                                        start_time_unix_nano: time(s.start_time_unix_nano),
                                        end_time_unix_nano: time(s.end_time_unix_nano),
                                        attributes: attrs(s.attributes),
                                        events: s
                                            .events
                                            .into_iter()
                                            .map(|e| SpanEvent {
                                                time_unix_nano: time(e.time_unix_nano),
                                                attributes: attrs(e.attributes),
                                            })
                                            .collect(),
                                        status: s.status.map(|st| Status {
                                            code: Some(Value::from(st.code)),
                                        }),
                                    })
                                    .collect(),
                            })
                            .collect(),
                    })
                    .collect(),
            })
        }
    }

    /// One row from a live span, before the receiver numbers it.
    #[derive(Debug, Clone)]
    pub struct LiveEvent {
        /// The row: columns from the attributes; `seq` and `ts_ns` are 0.
        pub event: Event,
        /// The event's own time, nanoseconds since the epoch.
        pub at_unix_ns: u64,
        /// The kind named, when the contract does not know it (the row is then no step).
        pub unknown_kind: Option<String>,
    }

    /// What one request gave.
    #[derive(Debug, Default)]
    pub struct Mapped {
        /// Its rows, span by span.
        pub events: Vec<LiveEvent>,
        /// One reason per span that gave no row for a value it could not read.
        pub rejected: Vec<String>,
    }

    /// Maps requests as they arrive.
    #[derive(Debug, Default)]
    pub struct LiveMapper {
        spans: u64,
        deliveries: Deliveries,
    }

    impl LiveMapper {
        /// A mapper for one run.
        pub fn new() -> Self {
            LiveMapper::default()
        }

        /// Maps every span of `request`, in order.
        pub fn map(&mut self, request: &Request) -> Mapped {
            let mut out = Mapped::default();
            for rs in &request.0.resource_spans {
                let empty = Resource::default();
                let resource = rs.resource.as_ref().unwrap_or(&empty);
                for ss in &rs.scope_spans {
                    for span in &ss.spans {
                        self.spans += 1;
                        let mut pending = Vec::new();
                        match map_span(span, &resource.attributes, self.spans, "", &mut pending) {
                            Ok(()) => out.events.extend(pending.into_iter().filter(|p| {
                                !self.deliveries.repeated(p)
                            }).map(|p| {
                                let mut event = p.event;
                                event.incarnation = p.incarnation.unwrap_or(0);
                                LiveEvent {
                                    event,
                                    at_unix_ns: p.at,
                                    unknown_kind: p.unknown_kind,
                                }
                            })),
                            Err(reason) => out.rejected.push(reason),
                        }
                    }
                }
            }
            out
        }
    }
}

pub use live::{decode_request, proto, Body, LiveEvent, LiveMapper, Mapped, Request};
