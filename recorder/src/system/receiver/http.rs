//! OTLP/HTTP: `POST /v1/traces` with a protobuf (`application/x-protobuf`) or OTLP JSON
//! (`application/json`) body, plain or `Content-Encoding: gzip`. The reply is in the request's
//! own encoding: 200 with an `ExportTraceServiceResponse` once the run answers, 400 with a
//! `google.rpc.Status` for a body that does not decode, 413 over the size cap, 415 for another
//! content type or encoding, 503 when the run does not take the request or when the bytes in
//! flight across all requests would pass their bound (with `Retry-After`: the exporter retries),
//! 408 for a body not all there within the body timeout.

use std::io::Read as _;
use std::time::Duration;

use axum::body::Body as HttpBody;
use axum::extract::State;
use axum::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use outbox_trace::otlp::{decode_request, Body};

use super::budget::{read_body, Budget, Buffer, Lease, Limits, ReadError, RETRY_AFTER_SECONDS};
use super::intake::{Handoff, TOKEN_HEADER};
use super::reply::{self, Code};

/// The path of the trace export.
pub(super) const PATH: &str = "/v1/traces";

/// The router of the HTTP port.
pub(super) fn router(handoff: Handoff, budget: Budget, limits: Limits) -> Router {
    Router::new().route(PATH, post(export)).with_state(Shared {
        handoff,
        budget,
        max_body: limits.max_body,
        body_timeout: limits.body_timeout,
    })
}

#[derive(Clone)]
struct Shared {
    handoff: Handoff,
    budget: Budget,
    max_body: usize,
    body_timeout: Duration,
}

/// Why a request got no 200.
enum Refusal {
    /// Not a content type or encoding of OTLP/HTTP (415).
    Unsupported(String),
    /// Over the size cap, compressed or not (413).
    TooLarge(usize),
    /// Does not decode (400).
    BadBody(String),
    /// The run did not take it (503).
    Unavailable,
    /// The bytes in flight would pass their bound (503 with `Retry-After`).
    Busy,
    /// The body was not all there in time (408).
    Stalled,
}

impl From<ReadError> for Refusal {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::Full => Refusal::Busy,
            ReadError::TooLarge => Refusal::TooLarge(0),
            ReadError::Stalled => Refusal::Stalled,
            ReadError::Broken(why) => Refusal::BadBody(format!("reading the body: {why}")),
        }
    }
}

async fn export(State(shared): State<Shared>, headers: HeaderMap, body: HttpBody) -> Response {
    shared.handoff.counters.request();
    let encoding = match body_encoding(&headers) {
        Ok(encoding) => encoding,
        // No OTLP encoding to answer in: JSON, which a person can read.
        Err(refusal) => return refuse(&shared, refusal, Body::Json),
    };
    match take(&shared, &headers, body, encoding).await {
        Ok(reply) => reply,
        Err(refusal) => refuse(&shared, refusal, encoding),
    }
}

/// Reads, decodes and hands off one request; the reply once the run answers.
async fn take(
    shared: &Shared,
    headers: &HeaderMap,
    body: HttpBody,
    encoding: Body,
) -> Result<Response, Refusal> {
    let gzip = match header(headers, CONTENT_ENCODING.as_str()).as_deref() {
        None | Some("identity") => false,
        Some("gzip") => true,
        Some(other) => {
            return Err(Refusal::Unsupported(format!(
                "content encoding `{other}` (gzip or none)"
            )))
        }
    };
    let declared = header(headers, CONTENT_LENGTH.as_str()).and_then(|n| n.parse::<u64>().ok());
    if declared.is_some_and(|n| n > shared.max_body as u64) {
        return Err(Refusal::TooLarge(shared.max_body));
    }
    // Every byte held for this request, until it is answered: the body, inflated or not.
    let mut lease = shared.budget.lease();
    let bytes = read_body(
        body,
        declared.map(|n| n as usize),
        shared.max_body,
        shared.body_timeout,
        &mut lease,
    )
    .await
    .map_err(|e| with_cap(e.into(), shared.max_body))?;
    let bytes = if gzip {
        gunzip(&bytes, shared.max_body, &mut lease).map_err(|e| with_cap(e, shared.max_body))?
    } else {
        bytes
    };
    let request = decode_request(&bytes, encoding).map_err(|e| Refusal::BadBody(e.to_string()))?;
    drop(bytes);
    let token = header(headers, TOKEN_HEADER);
    let answer = shared
        .handoff
        .offer(request, token)
        .await
        .ok_or(Refusal::Unavailable)?;
    Ok(reply_with(
        StatusCode::OK,
        reply::success(&answer, encoding),
        encoding,
    ))
}

/// The encoding of the body, from `Content-Type` (parameters such as `charset` ignored).
fn body_encoding(headers: &HeaderMap) -> Result<Body, Refusal> {
    let value = header(headers, CONTENT_TYPE.as_str()).unwrap_or_default();
    let essence = value.split(';').next().unwrap_or_default().trim();
    match essence {
        "application/x-protobuf" | "application/protobuf" => Ok(Body::Protobuf),
        "application/json" => Ok(Body::Json),
        _ => Err(Refusal::Unsupported(format!(
            "content type `{value}` (application/x-protobuf or application/json)"
        ))),
    }
}

/// A header's value, lower-cased and trimmed.
fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
}

/// The cap in a [`Refusal::TooLarge`] that came without it.
fn with_cap(refusal: Refusal, max: usize) -> Refusal {
    match refusal {
        Refusal::TooLarge(_) => Refusal::TooLarge(max),
        other => other,
    }
}

/// Un-gzips at most `max` bytes, counted in `lease` as they come (a small body that inflates
/// past the cap is refused, and so is one that inflates past the bytes in flight).
fn gunzip(bytes: &[u8], max: usize, lease: &mut Lease) -> Result<Vec<u8>, Refusal> {
    let mut out = Buffer::new(lease, max, 0)?;
    let mut decoder = flate2::read::MultiGzDecoder::new(bytes);
    let mut chunk = vec![0u8; 256 * 1024];
    loop {
        let n = decoder
            .read(&mut chunk)
            .map_err(|e| Refusal::BadBody(format!("gzip: {e}")))?;
        if n == 0 {
            return Ok(out.into_bytes());
        }
        out.push(&chunk[..n])?;
    }
}

fn refuse(shared: &Shared, refusal: Refusal, encoding: Body) -> Response {
    let counters = &shared.handoff.counters;
    let (status, code, message) = match refusal {
        Refusal::Unsupported(what) => {
            counters.refused();
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::InvalidArgument,
                format!("unsupported {what}"),
            )
        }
        Refusal::TooLarge(max) => {
            counters.refused();
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                Code::ResourceExhausted,
                format!("the body is over {max} bytes"),
            )
        }
        Refusal::BadBody(why) => {
            counters.bad_body();
            (
                StatusCode::BAD_REQUEST,
                Code::InvalidArgument,
                format!("the body is not an OTLP trace export: {why}"),
            )
        }
        Refusal::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Unavailable,
            "the recorder did not take the spans; retry".to_string(),
        ),
        Refusal::Busy => {
            counters.refused();
            let mut reply = reply_with(
                StatusCode::SERVICE_UNAVAILABLE,
                reply::failure(
                    Code::Unavailable,
                    "the receiver holds as many bytes as it takes at once; retry",
                    encoding,
                ),
                encoding,
            );
            reply
                .headers_mut()
                .insert(RETRY_AFTER, RETRY_AFTER_SECONDS.into());
            return reply;
        }
        Refusal::Stalled => {
            counters.refused();
            (
                StatusCode::REQUEST_TIMEOUT,
                Code::Unavailable,
                format!(
                    "the body did not arrive within {} s",
                    shared.body_timeout.as_secs()
                ),
            )
        }
    };
    reply_with(status, reply::failure(code, &message, encoding), encoding)
}

fn reply_with(status: StatusCode, body: Vec<u8>, encoding: Body) -> Response {
    (
        status,
        [(CONTENT_TYPE, reply::content_type(encoding))],
        body,
    )
        .into_response()
}
