//! The spans of one OTLP message, whatever its encoding: the neutral model the mapping reads.
//! [`super::json`] and [`super::proto`] decode into it; only what the mapping needs is kept
//! (its trace and span id, to know a span received twice; links, scopes and dropped counts are
//! not).

use std::borrow::Cow;

/// One `ExportTraceServiceRequest` (or `TracesData`): spans grouped by the resource that
/// produced them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// The resources and their spans, in message order.
    pub resource_spans: Vec<ResourceSpans>,
}

impl Request {
    /// The number of spans in the message.
    pub fn span_count(&self) -> usize {
        self.resource_spans.iter().map(|r| r.spans.len()).sum()
    }
}

/// The spans of one resource (one process, as a rule), every scope's spans together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceSpans {
    /// The resource's attributes (`service.name`, `service.instance.id`, ...).
    pub resource: Vec<Attribute>,
    /// Its spans, in message order.
    pub spans: Vec<Span>,
}

/// One span.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Span {
    /// Its trace id and span id, folded into one key ([`SpanKey::of`]); `None` when either is
    /// absent or malformed (such a span is never taken for a copy of another).
    pub key: Option<SpanKey>,
    /// The span's name (for messages only: the mapping never reads it).
    pub name: String,
    /// Start, nanoseconds since the Unix epoch; `None` when absent (or 0, protobuf's default).
    pub start_unix_ns: Option<u64>,
    /// End, nanoseconds since the Unix epoch; `None` when absent (or 0).
    pub end_unix_ns: Option<u64>,
    /// Whether the span's status is ERROR.
    pub error: bool,
    /// The span's attributes.
    pub attributes: Vec<Attribute>,
    /// Its span events, in message order.
    pub events: Vec<SpanEvent>,
}

/// A span's identity: its trace id folded to 64 bits, then its span id. Two spans share a key
/// when their ids are equal (an exporter's retry, a collector's redelivery), or with a chance
/// of about n^2 / 2^129 otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanKey(u128);

impl SpanKey {
    /// The key of a span with these ids: 16 bytes of trace id, 8 of span id; `None` for ids of
    /// other lengths or all zeros (OTLP's "invalid").
    pub fn of(trace_id: &[u8], span_id: &[u8]) -> Option<SpanKey> {
        let trace: [u8; 16] = trace_id.try_into().ok()?;
        let span: [u8; 8] = span_id.try_into().ok()?;
        if trace == [0; 16] || span == [0; 8] {
            return None;
        }
        let half = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
        let fold = half(&trace[..8]) ^ half(&trace[8..]).rotate_left(17);
        Some(SpanKey((u128::from(fold) << 64) | u128::from(half(&span))))
    }

    /// The key of a span whose ids are hex text (OTLP JSON).
    pub fn of_hex(trace_id: &str, span_id: &str) -> Option<SpanKey> {
        SpanKey::of(&hex(trace_id)?, &hex(span_id)?)
    }
}

/// The bytes of a hex string, or `None` if it is not one.
fn hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One span event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpanEvent {
    /// The event's name (for messages only).
    pub name: String,
    /// Its time, nanoseconds since the Unix epoch; `None` when absent (or 0).
    pub time_unix_ns: Option<u64>,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

/// One attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// The attribute's name.
    pub key: String,
    /// Its value.
    pub value: Value,
}

impl Attribute {
    /// A string attribute.
    pub fn string(key: impl Into<String>, value: impl Into<String>) -> Self {
        Attribute {
            key: key.into(),
            value: Value::String(value.into()),
        }
    }

    /// An integer attribute.
    pub fn int(key: impl Into<String>, value: i64) -> Self {
        Attribute {
            key: key.into(),
            value: Value::Int(value),
        }
    }
}

/// An attribute value, as far as the mapping reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `stringValue` (also an OTLP JSON `intValue` string that does not fit 64 signed bits).
    String(String),
    /// `boolValue`.
    Bool(bool),
    /// `intValue`.
    Int(i64),
    /// `doubleValue`.
    Double(f64),
    /// An array, a key-value list, bytes, or no value: the mapping reads none of them.
    Other,
}

impl Value {
    /// The value as text: a string as it is, a number or boolean as it prints; `None` for
    /// [`Value::Other`].
    pub fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Bool(b) => Some(Cow::Owned(b.to_string())),
            Value::Int(n) => Some(Cow::Owned(n.to_string())),
            Value::Double(d) => Some(Cow::Owned(d.to_string())),
            Value::Other => None,
        }
    }
}

/// A time of the wire (0 is protobuf's "not set").
pub(crate) fn time(unix_ns: u64) -> Option<u64> {
    (unix_ns != 0).then_some(unix_ns)
}
