//! The bodies an OTLP/HTTP reply carries, in the request's own encoding (protobuf or JSON), as
//! the OTLP specification says: an `ExportTraceServiceResponse` on success (with
//! `partial_success` when the run rejected spans), a `google.rpc.Status` on failure.

use outbox_trace::otlp::proto::{ExportTracePartialSuccess, ExportTraceServiceResponse};
use outbox_trace::otlp::Body;
use prost::Message as _;
use serde_json::json;

use super::intake::Answer;

/// `google.rpc.Status` without its `details`: the body of a failed OTLP/HTTP export.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    /// A `google.rpc.Code`.
    #[prost(int32, tag = "1")]
    code: i32,
    /// Why, in words.
    #[prost(string, tag = "2")]
    message: String,
}

/// The `google.rpc.Code`s the receiver answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Code {
    /// The body does not decode.
    InvalidArgument = 3,
    /// The body is over the size cap.
    ResourceExhausted = 8,
    /// The run is gone or dropped the request: retry.
    Unavailable = 14,
}

/// The media type of a body in `encoding`.
pub(super) fn content_type(encoding: Body) -> &'static str {
    match encoding {
        Body::Protobuf => "application/x-protobuf",
        Body::Json => "application/json",
    }
}

/// The OTLP response to an answered export.
pub(super) fn response(answer: &Answer) -> ExportTraceServiceResponse {
    ExportTraceServiceResponse {
        partial_success: answer.is_partial().then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(answer.rejected_spans).unwrap_or(i64::MAX),
            error_message: answer.error.clone().unwrap_or_default(),
        }),
    }
}

/// The success body for `answer`.
pub(super) fn success(answer: &Answer, encoding: Body) -> Vec<u8> {
    match encoding {
        Body::Protobuf => response(answer).encode_to_vec(),
        // OTLP JSON: camelCase names, 64-bit integers as strings, an empty object for no news.
        Body::Json => {
            let body = if answer.is_partial() {
                json!({"partialSuccess": {
                    "rejectedSpans": answer.rejected_spans.to_string(),
                    "errorMessage": answer.error.clone().unwrap_or_default(),
                }})
            } else {
                json!({})
            };
            body.to_string().into_bytes()
        }
    }
}

/// The failure body: a `google.rpc.Status` with `code` and `message`.
pub(super) fn failure(code: Code, message: &str, encoding: Body) -> Vec<u8> {
    match encoding {
        Body::Protobuf => RpcStatus {
            code: code as i32,
            message: message.to_string(),
        }
        .encode_to_vec(),
        Body::Json => json!({"code": code as i32, "message": message})
            .to_string()
            .into_bytes(),
    }
}
