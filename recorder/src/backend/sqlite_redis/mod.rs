//! The outbox in a SQLite file, the broker in a Redis list, the effect in Redis (the dual-write lab).
//!
//! SQLite: `orders(id, sku, qty, rev)`, `outbox(event_id, aggregate_id, seq, event_type, payload,
//! status DEFAULT 'PENDING', rev)` with a partial index on pending rows, `idempotency(key,
//! order_id)` and `store_rev(rev)`, a per-commit number bumped inside every transaction the trace
//! reports; an order and an outbox row keep the number of the commit that wrote them.
//!
//! Redis, under the scenario's prefix: the list `outbox.events` is the queue; every push also goes to
//! `outbox.log` (append-only, the ground truth of what was enqueued) and gets a number from `seq`,
//! the copy's `broker_seq`. A publish is one Lua script (INCR + RPUSH + RPUSH); its reply is the
//! publish ACK. The consumer moves an item to its own `processing:<member>` list (LMOVE), counts the
//! delivery in `deliveries` and notes the server time in `delivered_at`; its ACK is the LREM from
//! that list after the commit. Items of its list older than AckWait go back to the queue's head (a
//! visibility timeout, as JetStream's AckWait), so a crash between effect and ACK is a real
//! redelivery, after AckWait, to the consumer's next life. The effect (dedup key + `processed` result + `counter`) is one Lua
//! script. Redis' commit numbers start at 2^40 so they never equal a SQLite `store_rev`.
//!
//! Nothing blocks the async threads: SQLite runs on tokio's blocking threads, Redis goes through
//! the `redis` crate's async connections, and key listings use `SCAN`, never `KEYS`.
//!
//! One file per side: `store` (the protocol's store port: SQLite for tasks and the outbox, Redis
//! for the effect), `broker` (its broker port on the Redis list), `control` (the recorder's
//! setup, progress and ground truth over both), `scripts` (the Lua scripts Redis runs) and
//! `records` (what the effect's keys hold).

mod broker;
mod control;
mod records;
mod scripts;
mod store;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::connection::{Connection, Endpoints};
use super::control::Backend;
use super::endpoints::Endpoint;
use crate::protocol::model::Timing;
use crate::protocol::ports::BackendError;

/// Redis commit numbers start here, above any SQLite `store_rev`.
pub const REDIS_REV_BASE: i64 = 1 << 40;

/// A connection to one scenario's database file and Redis keys.
pub struct SqliteRedis {
    /// Used on tokio's blocking threads only.
    db: Arc<Mutex<rusqlite::Connection>>,
    db_path: PathBuf,
    redis: Endpoint,
    client: redis::Client,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    prefix: String,
    member: String,
    ack_wait: Duration,
    timing: Timing,
}

impl Backend for SqliteRedis {
    async fn connect(conn: &Connection, timing: Timing) -> Result<Self, BackendError> {
        let Endpoints::SqliteRedis { db_dir, redis } = &conn.endpoints else {
            return Err(BackendError::Store(
                "not a SQLite + Redis connection".into(),
            ));
        };
        let db_path = db_dir.join(format!(
            "{}.db",
            outbox_trace::output::path_component(&conn.namespace.scenario)
        ));
        let db = open_db(&db_path)?;
        let client =
            redis::Client::open(redis.secret_url()).map_err(|e| BackendError::Unreachable {
                service: "redis",
                endpoint: redis.redacted(),
                reason: one_line(&e),
            })?;
        Ok(SqliteRedis {
            db: Arc::new(Mutex::new(db)),
            db_path,
            redis: redis.clone(),
            client,
            conn: tokio::sync::OnceCell::new(),
            prefix: format!("{}:", conn.namespace.stream),
            member: conn.member.clone(),
            ack_wait: conn.ack_wait,
            timing,
        })
    }
}

fn open_db(path: &std::path::Path) -> Result<rusqlite::Connection, BackendError> {
    let db = rusqlite::Connection::open(path)
        .map_err(|e| BackendError::Store(format!("{}: {e}", path.display())))?;
    db.busy_timeout(Duration::from_secs(10)).map_err(sql)?;
    db.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
    Ok(db)
}

impl SqliteRedis {
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The Redis connection, made on first use (so a create that never publishes never needs Redis).
    /// It reconnects by itself after Redis restarts: the request that finds it broken fails, the
    /// next ones go through once Redis is back.
    async fn redis(&self) -> Result<ConnectionManager, BackendError> {
        self.conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(3)))
                    .set_response_timeout(Some(Duration::from_secs(10)))
                    .set_number_of_retries(1)
                    .set_min_delay(Duration::from_millis(100))
                    .set_max_delay(Duration::from_secs(1));
                let connect = self.client.get_connection_manager_with_config(config);
                match tokio::time::timeout(Duration::from_secs(5), connect).await {
                    Ok(Ok(c)) => Ok(c),
                    Ok(Err(e)) => Err(self.unreachable(one_line(&e))),
                    Err(_) => Err(self.unreachable("no answer within 3 s".into())),
                }
            })
            .await
            .cloned()
    }

    fn unreachable(&self, reason: String) -> BackendError {
        BackendError::Unreachable {
            service: "redis",
            endpoint: self.redis.redacted(),
            reason,
        }
    }

    /// Runs `f` on the database on one of tokio's blocking threads (SQLite waits on locks and
    /// disks; the async threads must not).
    async fn with_db<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, BackendError> {
        let db = self.db.clone();
        let run = move || {
            // A panic while holding the lock leaves a connection whose transaction rolled back.
            let mut db = db.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut db)
        };
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| BackendError::Store(format!("the SQLite thread failed: {e}")))?
            .map_err(sql)
    }
}

fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn sql(e: rusqlite::Error) -> BackendError {
    BackendError::Store(one_line(&e))
}

fn broker(e: redis::RedisError) -> BackendError {
    BackendError::Broker(one_line(&e))
}
