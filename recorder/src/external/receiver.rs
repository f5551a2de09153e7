//! An external effect outside the worker's transaction: a small "payments" receiver over HTTP with
//! an idempotency API, and the worker's client for it.
//!
//! The receiver is its own process (`Role::Receiver`) with its own SQLite file, served by axum.
//! `POST /payments` with `Idempotency-Key: K`: the first request with K performs the payment and
//! stores the answer; a repeat returns the stored answer (`Idempotent-Replayed: true`) and pays
//! nothing; a repeat while the first is still being performed gets `409` with "in progress".
//! Without the header every request pays. The receiver records `external_applied` and
//! `external_replayed`; the worker records `external_request`. SQLite runs on tokio's blocking
//! threads.
//!
//! The worker calls through hyper's HTTP/1 client. [`send`] returns once the whole request has
//! been flushed to the socket and [`receive`] reads the answer, so a crash between the two is a
//! crash after the request left and before its answer was read.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use outbox_trace::detail::Note;
use outbox_trace::{About, Step};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::actor::{ActorCtx, Reporter};

/// Where the receiver listens and keeps its keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExternalSpec {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The receiver's own database file.
    pub db: PathBuf,
    /// How long the receiver takes to perform a payment (to make "in progress" observable).
    pub slow_ms: u64,
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Whether the receiver replayed a stored answer.
    pub replayed: bool,
    /// Body.
    pub body: String,
}

/// A payment request's body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payment {
    /// The event that asks for it.
    pub event_id: String,
    /// The task it completes.
    pub task_id: String,
    /// How much.
    pub amount: i64,
}

/// Serves payments until the recorder says stop.
pub async fn serve(ctx: &ActorCtx, spec: &ExternalSpec) -> anyhow::Result<()> {
    let receiver = Receiver {
        db: Arc::new(Mutex::new(open(&spec.db)?)),
        slow: Duration::from_millis(spec.slow_ms),
        events: ctx.reporter(),
    };
    let listener = TcpListener::bind(&spec.addr)
        .await
        .with_context(|| format!("binding {}", spec.addr))?;
    let app = axum::Router::new()
        .route("/payments", axum::routing::post(pay))
        .with_state(receiver);
    axum::serve(listener, app)
        .with_graceful_shutdown(ctx.stopped())
        .await
        .context("serving payments")
}

fn open(path: &std::path::Path) -> anyhow::Result<rusqlite::Connection> {
    let db =
        rusqlite::Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
    db.busy_timeout(Duration::from_secs(10))?;
    db.pragma_update(None, "journal_mode", "WAL")?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS idempotency_keys(
             key TEXT PRIMARY KEY, state TEXT NOT NULL, status INTEGER, response TEXT);
         CREATE TABLE IF NOT EXISTS payments(
             id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, task_id TEXT NOT NULL, amount INTEGER NOT NULL);",
    )?;
    Ok(db)
}

/// Counts what the receiver holds: `(payments, keys)`.
pub fn totals(path: &std::path::Path) -> anyhow::Result<(i64, i64)> {
    let db = open(path)?;
    let payments = db.query_row("SELECT COUNT(*) FROM payments", [], |r| r.get(0))?;
    let keys = db.query_row("SELECT COUNT(*) FROM idempotency_keys", [], |r| r.get(0))?;
    Ok((payments, keys))
}

/// The receiver's shared state.
#[derive(Clone)]
struct Receiver {
    /// Used on tokio's blocking threads only.
    db: Arc<Mutex<rusqlite::Connection>>,
    slow: Duration,
    events: Reporter,
}

impl Receiver {
    /// Runs `f` on the database on one of tokio's blocking threads.
    async fn with_db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> anyhow::Result<T> + Send + 'static,
    ) -> anyhow::Result<T> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let mut db = db.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut db)
        })
        .await
        .context("the SQLite thread failed")?
    }
}

enum Claim {
    New,
    Done(u16, String),
    InProgress,
}

/// `POST /payments`.
async fn pay(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // A payment, once claimed, is carried through on a task of its own: a client that goes away
    // mid-request (a worker killed after sending) drops this handler, not the payment, as a real
    // provider's would not.
    let answer = match serde_json::from_slice::<Payment>(&body) {
        Ok(payment) => tokio::spawn(async move { perform(&receiver, key, payment).await })
            .await
            .unwrap_or_else(|e| Err(anyhow::anyhow!("the payment task failed: {e}"))),
        Err(e) => Err(anyhow::anyhow!("payment body: {e}")),
    };
    let answer = answer.unwrap_or_else(|e| {
        tracing::warn!("receiver: {e:#}");
        Answer {
            status: 500,
            replayed: false,
            body: json!({"error": format!("{e:#}")}).to_string(),
        }
    });
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, answer.body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if answer.replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Claims the key, performs the payment or replays the stored answer.
async fn perform(
    receiver: &Receiver,
    key: Option<String>,
    payment: Payment,
) -> anyhow::Result<Answer> {
    let about = || About::new(payment.event_id.clone(), Some(payment.task_id.clone()));
    let claim = match key.clone() {
        None => Claim::New,
        Some(key) => {
            receiver
                .with_db(move |db| {
                    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    let found: Option<(String, Option<u16>, Option<String>)> = tx
                        .query_row(
                            "SELECT state, status, response FROM idempotency_keys WHERE key = ?1",
                            [&key],
                            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                        )
                        .optional()?;
                    let claim = match found {
                        Some((state, Some(status), Some(response))) if state == "done" => {
                            Claim::Done(status, response)
                        }
                        Some(_) => Claim::InProgress,
                        None => {
                            tx.execute(
                            "INSERT INTO idempotency_keys(key, state) VALUES (?1, 'in-progress')",
                            [&key],
                        )?;
                            Claim::New
                        }
                    };
                    tx.commit()?;
                    Ok(claim)
                })
                .await?
        }
    };
    Ok(match claim {
        Claim::Done(status, response) => {
            receiver.events.emit(Step::ExternalReplayed {
                about: about(),
                amount: Some(payment.amount),
                note: Note::default(),
            });
            Answer {
                status,
                replayed: true,
                body: response,
            }
        }
        Claim::InProgress => Answer {
            status: 409,
            replayed: false,
            body: json!({"error": "a request with this Idempotency-Key is in progress"})
                .to_string(),
        },
        Claim::New => {
            tokio::time::sleep(receiver.slow).await;
            let (event_id, task_id, amount) = (
                payment.event_id.clone(),
                payment.task_id.clone(),
                payment.amount,
            );
            let response = receiver
                .with_db(move |db| {
                    let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    tx.execute(
                        "INSERT INTO payments(event_id, task_id, amount) VALUES (?1, ?2, ?3)",
                        params![event_id, task_id, amount],
                    )?;
                    let response =
                        json!({"payment_id": tx.last_insert_rowid(), "amount": amount}).to_string();
                    if let Some(key) = &key {
                        tx.execute(
                            "UPDATE idempotency_keys SET state = 'done', status = 201, response = ?2 WHERE key = ?1",
                            params![key, response],
                        )?;
                    }
                    tx.commit()?;
                    Ok(response)
                })
                .await?;
            receiver.events.emit(Step::ExternalApplied {
                about: about(),
                amount: Some(payment.amount),
                note: Note::default(),
            });
            Answer {
                status: 201,
                replayed: false,
                body: response,
            }
        }
    })
}

/// A request on its way: its answer, once read.
pub struct Sent {
    answer: tokio::task::JoinHandle<anyhow::Result<Answer>>,
}

/// Sends a payment request through hyper's HTTP/1 client and returns once the whole request has
/// been flushed to the socket; [`receive`] reads the answer.
pub async fn send(addr: &str, payment: &Payment, key: Option<&str>) -> anyhow::Result<Sent> {
    let stream = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to the receiver at {addr}"))?;
    let (flushed, on_flush) = tokio::sync::oneshot::channel();
    let handed = Arc::new(AtomicBool::new(false));
    let io = hyper_util::rt::TokioIo::new(Flushed {
        io: stream,
        body_handed: handed.clone(),
        flushed: Some(flushed),
    });
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .context("HTTP handshake with the receiver")?;
    let mut request = hyper::Request::post("/payments")
        .header(header::HOST, addr)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let body = Full::new(Bytes::from(serde_json::to_vec(payment)?));
    let request = request.body(Handed { body, handed })?;
    let answer = tokio::spawn(async move {
        let connection = tokio::spawn(connection);
        let response = sender
            .send_request(request)
            .await
            .context("the receiver's answer")?;
        let status = response.status().as_u16();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        let body = response.into_body().collect().await?.to_bytes();
        connection.abort();
        Ok(Answer {
            status,
            replayed,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    });
    if on_flush.await.is_err() {
        // The connection ended before the request went out: the answer says why.
        answer.await.context("the HTTP client task")??;
        anyhow::bail!("the request to {addr} was never sent");
    }
    Ok(Sent { answer })
}

/// Reads the answer to a request sent with [`send`].
pub async fn receive(sent: Sent) -> anyhow::Result<Answer> {
    sent.answer.await.context("the HTTP client task")?
}

/// A request body that notes when hyper has taken its (only) frame to write.
struct Handed {
    body: Full<Bytes>,
    handed: Arc<AtomicBool>,
}

impl hyper::body::Body for Handed {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(Some(_))) && self.body.is_end_stream() {
            self.handed.store(true, Ordering::Release);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A socket that says once the request's body has been handed to it and flushed: the whole
/// request has left.
struct Flushed {
    io: TcpStream,
    body_handed: Arc<AtomicBool>,
    flushed: Option<tokio::sync::oneshot::Sender<()>>,
}

impl AsyncRead for Flushed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Flushed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) && self.body_handed.load(Ordering::Acquire) {
            if let Some(tx) = self.flushed.take() {
                let _ = tx.send(());
            }
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
