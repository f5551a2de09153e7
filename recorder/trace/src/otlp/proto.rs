//! The OTLP trace messages in protobuf, written by hand with `prost`'s derive: the fields the
//! mapping reads plus the ids, with the field numbers and types of
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto` and `trace/v1/trace.proto`.
//! Fields left out are skipped on decoding, as protobuf skips any unknown field. Public, so that
//! an OTLP/gRPC or OTLP/HTTP server decodes the request and encodes the response with them; the
//! `opentelemetry-proto` crate would bring `tonic` and the OpenTelemetry SDK into this crate.

use super::spans::{self, time};

/// `ExportTraceServiceRequest`: what an exporter sends to `/v1/traces` or the gRPC `Export` call.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceRequest {
    /// The spans, by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ExportTraceServiceResponse`: the answer; `partial_success` set when some spans were refused.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTraceServiceResponse {
    /// Set when part of the request was rejected.
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportTracePartialSuccess>,
}

/// `ExportTracePartialSuccess`: how many spans were rejected, and why.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportTracePartialSuccess {
    /// The number of spans rejected.
    #[prost(int64, tag = "1")]
    pub rejected_spans: i64,
    /// Why, in words.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `TracesData`: the same wire shape as the request, the message a file holds.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracesData {
    /// The spans, by resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `ResourceSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceSpans {
    /// The resource.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// The resource's attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeSpans`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSpans {
    /// The instrumentation scope.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// Its spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// The scope's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `Span`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Span {
    /// 16 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    /// 8 bytes, or empty for a root span.
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    /// The span's name.
    #[prost(string, tag = "5")]
    pub name: String,
    /// `SpanKind` (1 internal, 2 server, 3 client, 4 producer, 5 consumer).
    #[prost(int32, tag = "6")]
    pub kind: i32,
    /// Start, nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    /// End, nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    /// The span's attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Its span events.
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<span::Event>,
    /// Its status.
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
}

/// Messages nested in `Span`.
pub mod span {
    use super::KeyValue;

    /// `Span.Event`: a span event.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Event {
        /// Its time, nanoseconds since the Unix epoch.
        #[prost(fixed64, tag = "1")]
        pub time_unix_nano: u64,
        /// Its name.
        #[prost(string, tag = "2")]
        pub name: String,
        /// Its attributes.
        #[prost(message, repeated, tag = "3")]
        pub attributes: Vec<KeyValue>,
    }
}

/// `Status`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// A description, for ERROR.
    #[prost(string, tag = "2")]
    pub message: String,
    /// `StatusCode`: 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

/// `StatusCode` ERROR.
pub const STATUS_CODE_ERROR: i32 = 2;

/// `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The value, one of its kinds.
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4, 5, 6, 7")]
    pub value: Option<any_value::Value>,
}

/// The kinds of an `AnyValue`.
pub mod any_value {
    /// `AnyValue.value`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        /// `string_value`.
        #[prost(string, tag = "1")]
        StringValue(String),
        /// `bool_value`.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// `int_value`.
        #[prost(int64, tag = "3")]
        IntValue(i64),
        /// `double_value`.
        #[prost(double, tag = "4")]
        DoubleValue(f64),
        /// `array_value`.
        #[prost(message, tag = "5")]
        ArrayValue(super::ArrayValue),
        /// `kvlist_value`.
        #[prost(message, tag = "6")]
        KvlistValue(super::KeyValueList),
        /// `bytes_value`.
        #[prost(bytes = "vec", tag = "7")]
        BytesValue(Vec<u8>),
    }
}

/// `ArrayValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ArrayValue {
    /// The items.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// `KeyValueList`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValueList {
    /// The entries.
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<KeyValue>,
}

fn resource_spans(all: Vec<ResourceSpans>) -> spans::Request {
    spans::Request {
        resource_spans: all
            .into_iter()
            .map(|rs| spans::ResourceSpans {
                resource: rs
                    .resource
                    .map(|r| attributes(r.attributes))
                    .unwrap_or_default(),
                spans: rs
                    .scope_spans
                    .into_iter()
                    .flat_map(|ss| ss.spans)
                    .map(span)
                    .collect(),
            })
            .collect(),
    }
}

fn span(s: Span) -> spans::Span {
    spans::Span {
        key: spans::SpanKey::of(&s.trace_id, &s.span_id),
        name: s.name,
        start_unix_ns: time(s.start_time_unix_nano),
        end_unix_ns: time(s.end_time_unix_nano),
        error: s.status.is_some_and(|st| st.code == STATUS_CODE_ERROR),
        attributes: attributes(s.attributes),
        events: s
            .events
            .into_iter()
            .map(|e| spans::SpanEvent {
                name: e.name,
                time_unix_ns: time(e.time_unix_nano),
                attributes: attributes(e.attributes),
            })
            .collect(),
    }
}

fn attributes(kvs: Vec<KeyValue>) -> Vec<spans::Attribute> {
    kvs.into_iter()
        .map(|kv| spans::Attribute {
            key: kv.key,
            value: match kv.value.and_then(|v| v.value) {
                Some(any_value::Value::StringValue(s)) => spans::Value::String(s),
                Some(any_value::Value::BoolValue(b)) => spans::Value::Bool(b),
                Some(any_value::Value::IntValue(n)) => spans::Value::Int(n),
                Some(any_value::Value::DoubleValue(d)) => spans::Value::Double(d),
                _ => spans::Value::Other,
            },
        })
        .collect()
}

impl From<ExportTraceServiceRequest> for spans::Request {
    fn from(request: ExportTraceServiceRequest) -> Self {
        resource_spans(request.resource_spans)
    }
}

impl From<TracesData> for spans::Request {
    fn from(data: TracesData) -> Self {
        resource_spans(data.resource_spans)
    }
}
