//! What passes between the receiver and the run: one decoded export request ([`Intake`]), the
//! run's [`Answer`] to it, and the hand-off that waits for that answer. The receiver's counts
//! ([`ReceiverStats`]) are kept here too, where every request passes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use outbox_trace::otlp::Request;
use tokio::sync::{mpsc, oneshot};

/// The header (HTTP) or metadata key (gRPC) that carries a process's token: the recorder gives
/// each process life its own in `OTEL_EXPORTER_OTLP_HEADERS`, and takes its spans as that
/// process's, whatever their attributes claim.
pub const TOKEN_HEADER: &str = "x-outbox-token";

/// One decoded export request, waiting for the run's answer. The sender of the request (an SDK's
/// exporter) gets its reply only when `reply` is used: holding it holds the export, which is what
/// lets the run kill a process after a step and before the process hears back. Dropping `reply`
/// answers "unavailable" (HTTP 503, gRPC `UNAVAILABLE`), so the exporter retries.
#[derive(Debug)]
pub struct Intake {
    /// The spans, decoded.
    pub request: Request,
    /// The token the export carried ([`TOKEN_HEADER`]), if any: it names the process the
    /// recorder gave it to.
    pub token: Option<String>,
    /// Where the run sends its answer.
    pub reply: oneshot::Sender<Answer>,
}

impl Intake {
    /// Answers the export. Returns false when its sender is gone (the process died or gave up).
    pub fn answer(self, answer: Answer) -> bool {
        self.reply.send(answer).is_ok()
    }
}

/// The run's answer to one export request: how many of its spans it could not take, and why.
/// Both empty is full success; otherwise the reply carries OTLP's `partial_success`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Spans that were not taken (the OTLP `rejected_spans`).
    pub rejected_spans: u64,
    /// Why, for the sender's log (the OTLP `error_message`).
    pub error: Option<String>,
}

impl Answer {
    /// Every span taken.
    pub fn accepted() -> Self {
        Answer::default()
    }

    /// `rejected_spans` spans not taken, for the reason `error`.
    pub fn partial(rejected_spans: u64, error: impl Into<String>) -> Self {
        Answer {
            rejected_spans,
            error: Some(error.into()),
        }
    }

    /// Whether the reply carries a `partial_success` (some span rejected, or a message).
    pub fn is_partial(&self) -> bool {
        self.rejected_spans > 0 || self.error.is_some()
    }
}

/// What the receiver has seen since it started, over both transports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Export requests received (`POST /v1/traces` and gRPC `Export`), answered or not.
    pub requests: u64,
    /// Spans in the requests that decoded.
    pub spans: u64,
    /// Requests whose body could not be decoded (answered HTTP 400, or a gRPC error before the
    /// message was read: bad framing, bad compression).
    pub bad_bodies: u64,
    /// Requests refused before decoding: an unsupported content type or compression (HTTP 415,
    /// gRPC `UNIMPLEMENTED`), a body over the size cap (HTTP 413, gRPC `RESOURCE_EXHAUSTED`), past
    /// the bytes in flight (HTTP 503, gRPC `UNAVAILABLE`) or not all there in time (HTTP 408,
    /// gRPC `DEADLINE_EXCEEDED`).
    pub refused: u64,
}

/// The counters behind [`ReceiverStats`], shared by the servers.
#[derive(Debug, Default)]
pub(super) struct Counters {
    requests: AtomicU64,
    spans: AtomicU64,
    bad_bodies: AtomicU64,
    refused: AtomicU64,
}

impl Counters {
    pub(super) fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn bad_body(&self) {
        self.bad_bodies.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> ReceiverStats {
        ReceiverStats {
            requests: self.requests.load(Ordering::Relaxed),
            spans: self.spans.load(Ordering::Relaxed),
            bad_bodies: self.bad_bodies.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// What both servers share: the run's queue and the counters.
#[derive(Debug, Clone)]
pub(super) struct Handoff {
    tx: mpsc::Sender<Intake>,
    pub(super) counters: Arc<Counters>,
}

impl Handoff {
    pub(super) fn new(tx: mpsc::Sender<Intake>) -> Self {
        Handoff {
            tx,
            counters: Arc::default(),
        }
    }

    /// Hands a decoded request to the run and waits for its answer. `None`: the run is gone or
    /// dropped the reply; the sender is told to retry.
    pub(super) async fn offer(&self, request: Request, token: Option<String>) -> Option<Answer> {
        self.counters
            .spans
            .fetch_add(request.span_count() as u64, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Intake {
                request,
                token,
                reply,
            })
            .await
            .ok()?;
        answer.await.ok()
    }
}
