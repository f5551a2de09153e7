//! The payments receiver: its own process (`Role::Receiver`) with its own SQLite file, served by
//! axum. `POST /payments` with `Idempotency-Key: K`: the first request with K performs the payment
//! and stores the answer; a repeat returns the stored answer (`Idempotent-Replayed: true`) and pays
//! nothing; a repeat while the first is still being performed gets `409` with "in progress".
//! Without the header every request pays. The receiver records `external_applied` and
//! `external_replayed`. SQLite runs on tokio's blocking threads.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use outbox_trace::detail::Note;
use outbox_trace::{About, Step};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde_json::json;
use tokio::net::TcpListener;

use super::spec::{Answer, ExternalSpec, Payment};

/// Where the receiver's steps go: the actor process writes each as a line for the recorder.
pub type Report = Arc<dyn Fn(Step) + Send + Sync>;

/// Serves payments until `stop` resolves, handing each step it takes to `report`.
pub async fn serve(
    spec: &ExternalSpec,
    report: Report,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let receiver = Receiver {
        db: Arc::new(Mutex::new(open(&spec.db)?)),
        slow: Duration::from_millis(spec.slow_ms),
        events: report,
    };
    let listener = TcpListener::bind(&spec.addr)
        .await
        .with_context(|| format!("binding {}", spec.addr))?;
    let app = axum::Router::new()
        .route("/payments", axum::routing::post(pay))
        .with_state(receiver);
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
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
    events: Report,
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
            (receiver.events)(Step::ExternalReplayed {
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
            (receiver.events)(Step::ExternalApplied {
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
