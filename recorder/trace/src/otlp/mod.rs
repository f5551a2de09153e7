//! OpenTelemetry spans as `outbox-trace/1` events, both ways, mapped as the contract's section
//! "OpenTelemetry spans" says.
//!
//! Reading: OTLP JSON Lines (one `TracesData` object per line, as the Collector's file exporter
//! and the SDKs' file exporters write it), one OTLP JSON document, or one OTLP protobuf message
//! ([`file`], used by [`crate::input`]); and the requests an OTLP/HTTP or OTLP/gRPC receiver gets
//! ([`decode_request`], [`LiveMapper`]). Both go through one mapping ([`mapping`]) from one span
//! model ([`spans`]), which [`json`] and [`proto`] decode into. Writing: a trace's rows as spans
//! ([`mod@write`], what `recorder run --otlp` writes). The attribute names are written once, in
//! [`key`].

mod dropped;
mod file;
mod json;
pub mod key;
mod live;
mod mapping;
pub mod proto;
pub mod spans;
mod spill;
pub mod write;

pub use dropped::{Counts, Dropped, Tally, Why};
pub(crate) use file::{decode_json_document, decode_json_lines, decode_protobuf};
pub use live::{LiveEvent, LiveMapper, Mapped};
pub use spans::Request;

use prost::Message;

use crate::TraceError;

/// The content type of an OTLP/HTTP body (already un-gzipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`: the OTLP JSON encoding.
    Json,
}

/// Decodes one `ExportTraceServiceRequest` (protobuf or OTLP JSON). Bytes that are not one are
/// [`TraceError::Otlp`] (a receiver answers 400).
pub fn decode_request(body: &[u8], format: Body) -> Result<Request, TraceError> {
    match format {
        Body::Protobuf => proto::ExportTraceServiceRequest::decode(body)
            .map(Request::from)
            .map_err(|e| {
                TraceError::Otlp(format!(
                    "not an OTLP protobuf ExportTraceServiceRequest: {e}"
                ))
            }),
        Body::Json => json::decode(body).map_err(TraceError::Otlp),
    }
}

#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;
