//! An external effect outside the worker's transaction: a small "payments" receiver over HTTP with
//! an idempotency API, and the worker's client for it.
//!
//! The receiver is its own process (`Role::Receiver`) with its own SQLite file. `POST /payments`
//! with `Idempotency-Key: K`: the first request with K performs the payment and stores the answer;
//! a repeat returns the stored answer (`Idempotent-Replayed: true`) and pays nothing; a repeat while
//! the first is still being performed gets `409` with "in progress". Without the header every request
//! pays. The receiver records `external_applied` and `external_replayed`; the worker records
//! `external_request`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use outbox_trace::detail::Note;
use outbox_trace::{About, Step};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::actor::ActorCtx;

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
    let db = open(&spec.db)?;
    let db = std::sync::Arc::new(std::sync::Mutex::new(db));
    let listener = TcpListener::bind(&spec.addr)
        .await
        .with_context(|| format!("binding {}", spec.addr))?;
    while !ctx.stopping() {
        let Ok(accepted) =
            tokio::time::timeout(Duration::from_millis(100), listener.accept()).await
        else {
            continue;
        };
        let (stream, _) = accepted?;
        // One request at a time per connection, each connection on its own task.
        let db = db.clone();
        let slow = Duration::from_millis(spec.slow_ms);
        let events = ctx.reporter();
        tokio::spawn(async move {
            if let Err(e) = handle(stream, &db, slow, &events).await {
                tracing::warn!("receiver: {e:#}");
            }
        });
    }
    Ok(())
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

type Db = std::sync::Arc<std::sync::Mutex<rusqlite::Connection>>;

enum Claim {
    New,
    Done(u16, String),
    InProgress,
}

async fn handle(
    stream: TcpStream,
    db: &Db,
    slow: Duration,
    events: &crate::actor::Reporter,
) -> anyhow::Result<()> {
    let mut reader = BufReader::new(stream);
    let (key, body) = read_request(&mut reader).await?;
    let payment: Payment = serde_json::from_str(&body).context("payment body")?;
    let mut stream = reader.into_inner();
    let about = || About::new(payment.event_id.clone(), Some(payment.task_id.clone()));
    let claim = match &key {
        None => Claim::New,
        Some(key) => {
            let mut db = db.lock().expect("db lock");
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let found: Option<(String, Option<u16>, Option<String>)> = tx
                .query_row(
                    "SELECT state, status, response FROM idempotency_keys WHERE key = ?1",
                    [key],
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
                        [key],
                    )?;
                    Claim::New
                }
            };
            tx.commit()?;
            claim
        }
    };
    let answer = match claim {
        Claim::Done(status, response) => {
            events.emit(Step::ExternalReplayed {
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
            tokio::time::sleep(slow).await;
            let response = {
                let mut db = db.lock().expect("db lock");
                let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
                tx.execute(
                    "INSERT INTO payments(event_id, task_id, amount) VALUES (?1, ?2, ?3)",
                    params![payment.event_id, payment.task_id, payment.amount],
                )?;
                let response =
                    json!({"payment_id": tx.last_insert_rowid(), "amount": payment.amount})
                        .to_string();
                if let Some(key) = &key {
                    tx.execute(
                        "UPDATE idempotency_keys SET state = 'done', status = 201, response = ?2 WHERE key = ?1",
                        params![key, response],
                    )?;
                }
                tx.commit()?;
                response
            };
            events.emit(Step::ExternalApplied {
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
    };
    let reason = match answer.status {
        201 => "Created",
        409 => "Conflict",
        _ => "OK",
    };
    let replayed = if answer.replayed {
        "Idempotent-Replayed: true\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{replayed}Connection: close\r\n\r\n",
        answer.status,
        answer.body.len()
    );
    // The client may be gone (it crashed after sending): the effect stands either way.
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(answer.body.as_bytes()).await;
    let _ = stream.shutdown().await;
    Ok(())
}

/// Reads one request: the `Idempotency-Key` header, if any, and the body.
async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> anyhow::Result<(Option<String>, String)> {
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    if !line.starts_with("POST /payments ") {
        anyhow::bail!("unexpected request line {line:?}");
    }
    let (mut length, mut key) = (0usize, None);
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().context("content-length")?,
                "idempotency-key" => key = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    reader.read_exact(&mut body).await?;
    Ok((key, String::from_utf8(body)?))
}

/// Sends a payment request; returns the open connection so the caller decides when to read.
pub async fn send(addr: &str, payment: &Payment, key: Option<&str>) -> anyhow::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to the receiver at {addr}"))?;
    let body = serde_json::to_string(payment)?;
    let key = key
        .map(|k| format!("Idempotency-Key: {k}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /payments HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{key}Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;
    Ok(stream)
}

/// Reads the answer to a request sent with [`send`].
pub async fn receive(stream: TcpStream) -> anyhow::Result<Answer> {
    let mut reader = BufReader::new(stream);
    let mut text = String::new();
    reader.read_to_string(&mut text).await?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("no end of headers in the answer")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status in the answer")?;
    let replayed = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("idempotent-replayed: true"));
    Ok(Answer {
        status,
        replayed,
        body: body.to_string(),
    })
}
