//! OTLP JSON (a `TracesData` or `ExportTraceServiceRequest` object) into the span model.
//!
//! Read with the few serde structs below rather than the `opentelemetry-proto` crate, whose
//! message types come only with `prost` and `tonic` and the OpenTelemetry SDK. They accept what the
//! Collector's and the SDKs' exporters write: ids in hex (not read), 64-bit integers as strings
//! or numbers, enums as numbers or names, unknown fields ignored. A time that is present but not
//! a non-negative integer is an error, never a default.

use serde::Deserialize;
use serde_json::Value as Json;

use super::spans::{self, time, Attribute, Request, Value};

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
    trace_id: Option<String>,
    #[serde(default)]
    span_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    start_time_unix_nano: Option<Json>,
    #[serde(default)]
    end_time_unix_nano: Option<Json>,
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
    name: Option<String>,
    #[serde(default)]
    time_unix_nano: Option<Json>,
    #[serde(default)]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default)]
    code: Option<Json>,
}

#[derive(Deserialize)]
struct KeyValue {
    key: String,
    #[serde(default)]
    value: Option<Json>,
}

/// Decodes one OTLP JSON object (`{"resourceSpans": [...]}`).
pub(crate) fn decode(text: &[u8]) -> Result<Request, String> {
    let data: TracesData =
        serde_json::from_slice(text).map_err(|e| format!("not an OTLP TracesData object: {e}"))?;
    request(data)
}

/// Decodes one OTLP JSON object read from `reader` (a whole document, pretty-printed or not).
pub(crate) fn decode_reader(reader: impl std::io::Read) -> Result<Request, String> {
    let data: TracesData = serde_json::from_reader(reader)
        .map_err(|e| format!("not an OTLP TracesData object: {e}"))?;
    request(data)
}

fn request(data: TracesData) -> Result<Request, String> {
    let mut out = Request::default();
    for rs in data.resource_spans {
        let resource = rs.resource.unwrap_or_default();
        let mut spans = Vec::new();
        for ss in rs.scope_spans {
            for s in ss.spans {
                spans.push(span(s)?);
            }
        }
        out.resource_spans.push(spans::ResourceSpans {
            resource: attributes(resource.attributes),
            spans,
        });
    }
    Ok(out)
}

fn span(s: Span) -> Result<spans::Span, String> {
    let name = s.name.unwrap_or_default();
    let at = |field: &str, v: Option<Json>| {
        nanos(v).map_err(|found| format!("span `{name}`: `{field}` is not a time: {found}"))
    };
    let start_unix_ns = at("startTimeUnixNano", s.start_time_unix_nano)?;
    let end_unix_ns = at("endTimeUnixNano", s.end_time_unix_nano)?;
    let mut events = Vec::with_capacity(s.events.len());
    for e in s.events {
        let event_name = e.name.unwrap_or_default();
        let time_unix_ns = nanos(e.time_unix_nano).map_err(|found| {
            format!("span `{name}`, event `{event_name}`: `timeUnixNano` is not a time: {found}")
        })?;
        events.push(spans::SpanEvent {
            name: event_name,
            time_unix_ns,
            attributes: attributes(e.attributes),
        });
    }
    let key = match (&s.trace_id, &s.span_id) {
        (Some(t), Some(i)) => spans::SpanKey::of_hex(t, i),
        _ => None,
    };
    Ok(spans::Span {
        key,
        start_unix_ns,
        end_unix_ns,
        error: is_error(s.status.as_ref()),
        attributes: attributes(s.attributes),
        events,
        name,
    })
}

/// A nanosecond time: a decimal string or a number; absent (or `null`) is `None`, and so is 0.
/// `Err` holds the value that is not a time.
fn nanos(v: Option<Json>) -> Result<Option<u64>, String> {
    match v {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => s.trim().parse().map(time).map_err(|_| format!("\"{s}\"")),
        Some(Json::Number(n)) => n.as_u64().map(time).ok_or_else(|| n.to_string()),
        Some(other) => Err(other.to_string()),
    }
}

/// Whether a span's status is ERROR (code 2 or its name).
fn is_error(status: Option<&Status>) -> bool {
    match status.and_then(|s| s.code.as_ref()) {
        Some(Json::Number(n)) => n.as_u64() == Some(2),
        Some(Json::String(s)) => s == "STATUS_CODE_ERROR" || s == "2",
        _ => false,
    }
}

fn attributes(kvs: Vec<KeyValue>) -> Vec<Attribute> {
    kvs.into_iter()
        .map(|kv| Attribute {
            value: kv.value.as_ref().map_or(Value::Other, value),
            key: kv.key,
        })
        .collect()
}

/// One `AnyValue` object. An `intValue` string that does not fit 64 signed bits stays text (the
/// mapping parses it as the column's type); other kinds are [`Value::Other`].
fn value(v: &Json) -> Value {
    let Some(o) = v.as_object() else {
        return Value::Other;
    };
    if let Some(Json::String(s)) = o.get("stringValue") {
        return Value::String(s.clone());
    }
    match o.get("intValue") {
        Some(Json::String(s)) => {
            return s
                .trim()
                .parse()
                .map_or_else(|_| Value::String(s.clone()), Value::Int)
        }
        Some(Json::Number(n)) => {
            return n
                .as_i64()
                .map_or_else(|| Value::String(n.to_string()), Value::Int)
        }
        _ => {}
    }
    match o.get("boolValue") {
        Some(Json::Bool(b)) => return Value::Bool(*b),
        Some(Json::String(s)) if s == "true" || s == "false" => return Value::Bool(s == "true"),
        _ => {}
    }
    match o.get("doubleValue") {
        Some(Json::Number(n)) => n.as_f64().map_or(Value::Other, Value::Double),
        Some(Json::String(s)) => Value::String(s.clone()),
        _ => Value::Other,
    }
}
