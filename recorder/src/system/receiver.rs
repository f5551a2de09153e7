//! The recorder's OTLP receiver: where the processes of a `--system` run send their spans.
//!
//! Two servers on loopback ports of their own (127.0.0.1 only: the fault machinery is never
//! reachable from another host): OTLP/HTTP `POST /v1/traces` ([`http`]) and OTLP/gRPC
//! `TraceService/Export` ([`grpc`]). Each decoded export request goes to the run as an
//! [`Intake`] ([`intake`]), and its sender gets its reply ([`reply`]) only when the run answers:
//! a process whose exporter is synchronous is then stopped right after the step its span
//! reports, which is what lets the run kill it there. A body that does not decode is answered
//! 400 (gRPC `INVALID_ARGUMENT`), counted, and the receiver keeps serving.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use outbox_recorder::system::receiver::{Answer, OtlpReceiver};
//! let (tx, mut rx) = tokio::sync::mpsc::channel(64);
//! let receiver = OtlpReceiver::start(tx)?;
//! println!("OTEL_EXPORTER_OTLP_ENDPOINT={}", receiver.http_endpoint());
//! while let Some(intake) = rx.recv().await {
//!     let spans = intake.request.span_count();
//!     intake.answer(Answer::accepted());
//!     println!("{spans} spans");
//! }
//! receiver.stop().await;
//! # Ok(()) }
//! ```

mod budget;
mod grpc;
mod http;
mod intake;
mod listen;
mod reply;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use axum::Router;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use budget::{BODY_TIMEOUT, MAX_IN_FLIGHT, RETRY_AFTER_SECONDS};
pub use intake::{Answer, Intake, ReceiverStats, TOKEN_HEADER};
pub use listen::{HEAD_TIMEOUT, MAX_CONNECTIONS};

/// The largest request body taken, compressed or not (larger: HTTP 413, gRPC
/// `RESOURCE_EXHAUSTED`).
pub const MAX_BODY: usize = 64 * 1024 * 1024;
/// How long [`OtlpReceiver::stop`] lets requests in flight finish.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The running receiver. Dropping it stops both servers gracefully (requests in flight are still
/// answered); [`OtlpReceiver::stop`] also waits for them.
pub struct OtlpReceiver {
    http: SocketAddr,
    grpc: SocketAddr,
    counters: std::sync::Arc<intake::Counters>,
    stop: watch::Sender<bool>,
    servers: Vec<JoinHandle<()>>,
}

impl OtlpReceiver {
    /// Binds both ports on 127.0.0.1 and starts serving; each decoded request is sent on `tx`.
    /// Must be called within a Tokio runtime.
    pub fn start(tx: mpsc::Sender<Intake>) -> std::io::Result<OtlpReceiver> {
        let handoff = intake::Handoff::new(tx);
        let counters = handoff.counters.clone();
        let (stop, stopped) = watch::channel(false);
        let budget = budget::Budget::new(MAX_IN_FLIGHT);
        let limits = budget::Limits {
            max_body: MAX_BODY,
            body_timeout: BODY_TIMEOUT,
        };
        let (http, http_server) = serve(
            http::router(handoff.clone(), budget.clone(), limits),
            stopped.clone(),
        )?;
        let (grpc, grpc_server) = serve(grpc::router(handoff, budget, limits), stopped)?;
        Ok(OtlpReceiver {
            http,
            grpc,
            counters,
            stop,
            servers: vec![http_server, grpc_server],
        })
    }

    /// The OTLP/HTTP base endpoint, `http://127.0.0.1:PORT` (an SDK appends `/v1/traces`): the
    /// value of `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn http_endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// The OTLP/gRPC endpoint, `http://127.0.0.1:PORT` (plain HTTP/2).
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.grpc)
    }

    /// The counts so far.
    pub fn stats(&self) -> ReceiverStats {
        self.counters.snapshot()
    }

    /// Stops taking connections and waits (at most 5 s) for the requests in flight to be
    /// answered; a request whose answer the run still holds then is cut off.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        let servers = std::mem::take(&mut self.servers);
        for mut server in servers {
            if tokio::time::timeout(STOP_GRACE, &mut server).await.is_err() {
                server.abort();
            }
        }
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Serves `router` on a fresh loopback port (HTTP/1.1 and HTTP/2 without TLS) until `stopped`,
/// within [`listen`]'s bounds.
fn serve(
    router: Router,
    mut stopped: watch::Receiver<bool>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let server =
        axum::serve(listen::Bounded::new(listener), router).with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
    let task = tokio::spawn(async move {
        if let Err(e) = server.await {
            tracing::warn!("the OTLP receiver stopped: {e}");
        }
    });
    Ok((address, task))
}
