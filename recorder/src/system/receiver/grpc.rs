//! OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export`, served by tonic's
//! own unary handling (framing, `grpc-encoding: gzip`, size cap, status trailers) on an HTTP/2
//! port, with no generated code: the message is taken as raw bytes and decoded by the same
//! [`decode_request`] as the HTTP bodies, and the reply is the prost `ExportTraceServiceResponse`.
//! A body that does not decode is `INVALID_ARGUMENT`; the run not taking it is `UNAVAILABLE`
//! (the exporter retries); another method is `UNIMPLEMENTED`. The message is read whole first,
//! its bytes (and, with gzip, its inflated bytes) counted in the bound on bytes in flight: past
//! it `UNAVAILABLE`, which the exporter retries; a message not all there within the body timeout
//! is `DEADLINE_EXCEEDED`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use bytes::{Buf as _, Bytes};
use outbox_trace::otlp::proto::ExportTraceServiceResponse;
use outbox_trace::otlp::{decode_request, Body};
use prost::Message as _;
use tonic::codec::{Codec, CompressionEncoding, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{Grpc, UnaryService};
use tonic::Status;

use super::budget::{read_body, Budget, Lease, Limits, ReadError};
use super::intake::{Handoff, TOKEN_HEADER};
use super::reply;

/// The method's path.
pub(super) const PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// The router of the gRPC port.
pub(super) fn router(handoff: Handoff, budget: Budget, limits: Limits) -> Router {
    Router::new()
        .route(PATH, post(export))
        .fallback(unimplemented)
        .with_state(Shared {
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

/// The bytes of a gRPC message's frame header (compressed flag, length).
const FRAME_HEADER: usize = 5;

async fn export(State(shared): State<Shared>, request: Request) -> Response {
    shared.handoff.counters.request();
    let counters = &shared.handoff.counters;
    let (parts, body) = request.into_parts();
    let mut lease = shared.budget.lease();
    let read = read_body(
        body,
        None,
        shared.max_body + FRAME_HEADER,
        shared.body_timeout,
        &mut lease,
    )
    .await;
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) => {
            let status = match e {
                ReadError::Full => {
                    counters.refused();
                    Status::unavailable(
                        "the receiver holds as many bytes as it takes at once; retry",
                    )
                }
                ReadError::TooLarge => {
                    counters.refused();
                    Status::resource_exhausted(format!(
                        "the message is over {} bytes",
                        shared.max_body
                    ))
                }
                ReadError::Stalled => {
                    counters.refused();
                    Status::deadline_exceeded(format!(
                        "the message did not arrive within {} s",
                        shared.body_timeout.as_secs()
                    ))
                }
                ReadError::Broken(why) => {
                    counters.bad_body();
                    Status::invalid_argument(format!("reading the message: {why}"))
                }
            };
            return status.into_http::<axum::body::Body>();
        }
    };
    let inflated = parts.headers.contains_key("grpc-encoding")
        && bytes.first().is_some_and(|compressed| *compressed == 1);
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let reached = Arc::new(AtomicBool::new(false));
    let lease = Arc::new(Mutex::new(lease));
    let service = Export {
        handoff: shared.handoff.clone(),
        reached: reached.clone(),
        lease: inflated.then(|| lease.clone()),
    };
    let mut grpc = Grpc::new(RawCodec)
        .accept_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Gzip)
        .max_decoding_message_size(shared.max_body);
    let response = grpc.unary(service, request).await;
    if !reached.load(Ordering::Relaxed) {
        // tonic refused the message before it was read: over the cap or in a compression it
        // does not take (refused), or bad framing or compression (a bad body).
        match grpc_status(&response) {
            Some(code)
                if code == tonic::Code::ResourceExhausted as i32
                    || code == tonic::Code::Unimplemented as i32 =>
            {
                shared.handoff.counters.refused()
            }
            _ => shared.handoff.counters.bad_body(),
        }
    }
    response.map(axum::body::Body::new)
}

/// The `grpc-status` of a trailers-only reply (an error found before the service ran).
fn grpc_status<B>(response: &Response<B>) -> Option<i32> {
    response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

async fn unimplemented(request: Request) -> Response {
    Status::unimplemented(format!("{} is not served here", request.uri().path()))
        .into_http::<axum::body::Body>()
}

/// The call of one export: decodes, hands off, answers.
struct Export {
    handoff: Handoff,
    reached: Arc<AtomicBool>,
    /// The request's lease, when its message was inflated: the inflated bytes are counted too.
    lease: Option<Arc<Mutex<Lease>>>,
}

type Reply = Result<tonic::Response<ExportTraceServiceResponse>, Status>;

impl UnaryService<Bytes> for Export {
    type Response = ExportTraceServiceResponse;
    type Future = Pin<Box<dyn Future<Output = Reply> + Send>>;

    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        self.reached.store(true, Ordering::Relaxed);
        let handoff = self.handoff.clone();
        let token = request
            .metadata()
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let inflated = match &self.lease {
            Some(lease) => lease
                .lock()
                .map_err(|_| ())
                .and_then(|mut l| l.grow(request.get_ref().len()).map_err(|_| ())),
            None => Ok(()),
        };
        Box::pin(async move {
            inflated.map_err(|()| {
                handoff.counters.refused();
                Status::unavailable("the receiver holds as many bytes as it takes at once; retry")
            })?;
            let decoded = decode_request(request.get_ref(), Body::Protobuf).map_err(|e| {
                handoff.counters.bad_body();
                Status::invalid_argument(format!("the message is not an OTLP trace export: {e}"))
            })?;
            let answer = handoff
                .offer(decoded, token)
                .await
                .ok_or_else(|| Status::unavailable("the recorder did not take the spans; retry"))?;
            Ok(tonic::Response::new(reply::response(&answer)))
        })
    }
}

/// Takes the request message as its bytes and writes the prost response.
struct RawCodec;

impl Codec for RawCodec {
    type Encode = ExportTraceServiceResponse;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = ExportTraceServiceResponse;
    type Error = Status;

    fn encode(&mut self, item: Self::Item, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(format!("encoding the response: {e}")))
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
