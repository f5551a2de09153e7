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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use outbox_trace::detail::Observed;
use redis::aio::{ConnectionLike as _, ConnectionManager, ConnectionManagerConfig};
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::connection::{Connection, Endpoints};
use super::control::{Backend, Control, Progress, StoredCommit, StoredIntent, StoredTask};
use super::endpoints::Endpoint;
use crate::protocol::model::{
    event_id_of, CommitRules, Committed, Created, DedupKey, Intent, Published, Snapshot, TaskSpec,
    Timing,
};
use crate::protocol::ports::BackendError;
use crate::protocol::ports::{Broker, Delivery, Store};

/// Redis commit numbers start here, above any SQLite `store_rev`.
pub const REDIS_REV_BASE: i64 = 1 << 40;

const PUBLISH: &str = r"
if ARGV[3] == '1' then
  local prior = redis.call('HGET', KEYS[4], ARGV[2])
  if prior then return {tonumber(prior), 1} end
end
local n = redis.call('INCR', KEYS[3])
local item = n .. '|' .. ARGV[1]
redis.call('RPUSH', KEYS[1], item)
redis.call('RPUSH', KEYS[2], item)
if ARGV[3] == '1' then redis.call('HSET', KEYS[4], ARGV[2], n) end
return {n, 0}
";

const FETCH: &str = r"
local item = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
if not item then return false end
local seq = string.match(item, '^(%d+)|')
local n = redis.call('HINCRBY', KEYS[3], seq, 1)
local t = redis.call('TIME')
redis.call('HSET', KEYS[4], seq, t[1] * 1000 + math.floor(t[2] / 1000))
return {item, n}
";

const RECOVER: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local moved = 0
for i = #items, 1, -1 do
  local item = items[i]
  local seq = string.match(item, '^(%d+)|')
  local at = tonumber(redis.call('HGET', KEYS[3], seq) or '0')
  if now - at >= tonumber(ARGV[1]) then
    redis.call('LREM', KEYS[1], 1, item)
    redis.call('LPUSH', KEYS[2], item)
    moved = moved + 1
  end
end
return moved
";

const COMMIT: &str = r"
local n = #KEYS - 3
if ARGV[1] == '1' then
  for i = 1, n do
    local prior = redis.call('GET', KEYS[3 + i])
    if prior then
      if n == 1 then return {'2', prior} end
      return {'3'}
    end
  end
end
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[2] == '1' and current ~= tonumber(ARGV[3]) then return {'3'} end
local counter = tonumber(ARGV[3])
local rev = redis.call('INCR', KEYS[3])
local out = {'1', tostring(rev)}
for i = 1, n do
  local at = 4 + 3 * (i - 1)
  counter = counter + tonumber(ARGV[at + 3])
  local remembered = rev .. ':' .. counter
  if tonumber(ARGV[4]) > 0 then
    redis.call('SET', KEYS[3 + i], remembered, 'PX', ARGV[4])
  else
    redis.call('SET', KEYS[3 + i], remembered)
  end
  redis.call('HSET', KEYS[1], ARGV[at + 1], ARGV[at + 2])
  out[#out + 1] = tostring(counter)
end
redis.call('SET', KEYS[2], counter)
return out
";

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
        let db_path = db_dir.join(format!("{}.db", conn.namespace.scenario));
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

    /// The single number a counting query gives.
    async fn count(&self, query: &'static str) -> Result<i64, BackendError> {
        self.with_db(move |db| db.query_row(query, [], |r| r.get::<_, i64>(0)))
            .await
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

    /// The keys matching `pattern`, listed with `SCAN` (which, unlike `KEYS`, never holds Redis
    /// for the whole keyspace).
    async fn scan(
        &self,
        conn: &mut ConnectionManager,
        pattern: &str,
    ) -> Result<Vec<String>, BackendError> {
        let mut keys = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1_000)
                .query_async(conn)
                .await
                .map_err(broker)?;
            keys.extend(batch);
            if next == 0 {
                // SCAN may return a key more than once.
                keys.sort_unstable();
                keys.dedup();
                return Ok(keys);
            }
            cursor = next;
        }
    }

    /// Sends a publish whose reply Redis never sends: on a connection of its own, `CLIENT REPLY
    /// SKIP` drops the reply of the script that follows, and a `PING` after it is the only
    /// answer read. Redis performs the publish; the ACK is lost for real. The connection is then
    /// dropped, and the relay waits out its publish timeout as it would for any missing ACK.
    async fn publish_without_reply(&self, script: redis::Cmd) -> Result<(), String> {
        let connect = self.client.get_multiplexed_async_connection();
        let mut conn = tokio::time::timeout(self.timing.publish_timeout, connect)
            .await
            .map_err(|_| "no connection to Redis within the publish timeout".to_string())?
            .map_err(|e| one_line(&e))?;
        let mut pipe = redis::pipe();
        pipe.cmd("CLIENT").arg("REPLY").arg("SKIP");
        pipe.add_command(script);
        pipe.cmd("PING");
        let sent = tokio::time::timeout(
            self.timing.publish_timeout,
            conn.req_packed_commands(&pipe, 0, 1),
        )
        .await;
        drop(conn);
        if let Ok(Err(e)) = sent {
            return Err(one_line(&e));
        }
        tokio::time::sleep(self.timing.publish_timeout).await;
        Ok(())
    }
}

fn bump_rev(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<i64> {
    tx.query_row(
        "UPDATE store_rev SET rev = rev + 1 RETURNING rev",
        [],
        |r| r.get(0),
    )
}

fn next_seq(tx: &rusqlite::Transaction<'_>, aggregate: &str) -> rusqlite::Result<u64> {
    tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox WHERE aggregate_id = ?1",
        [aggregate],
        |r| r.get::<_, i64>(0),
    )
    .map(|s| s as u64)
}

/// Inserts the task's outbox row, written by commit `rev`.
fn insert_intent(
    tx: &rusqlite::Transaction<'_>,
    task: &TaskSpec,
    rev: i64,
) -> rusqlite::Result<u64> {
    let seq = next_seq(tx, &task.aggregate_id)?;
    let mut intent = task.intent();
    intent.aggregate_seq = seq;
    tx.execute(
        "INSERT INTO outbox(event_id, aggregate_id, seq, event_type, payload, rev) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            intent.event_id,
            intent.aggregate_id,
            seq as i64,
            intent.event_type,
            serde_json::to_string(&intent).expect("intent serialises"),
            rev
        ],
    )?;
    Ok(seq)
}

impl Store for SqliteRedis {
    async fn create(&self, task: &TaskSpec, with_intent: bool) -> Result<Created, BackendError> {
        let task = task.clone();
        self.with_db(move |db| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let existing: Option<String> = tx
                .query_row(
                    "SELECT order_id FROM idempotency WHERE key = ?1",
                    [&task.idempotency_key],
                    |r| r.get(0),
                )
                .optional()?;
            if let Some(task_id) = existing {
                // The row keeps the commit number of the transaction that created it.
                let original: Option<(i64, Option<i64>)> = if task_id == task.task_id {
                    tx.query_row(
                        "SELECT rev, (SELECT seq FROM outbox WHERE event_id = ?2) FROM orders WHERE id = ?1",
                        params![task.task_id, task.event_id()],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?
                } else {
                    None
                };
                return Ok(Created::Existing {
                    task_id,
                    store_rev: original.map(|(rev, _)| rev),
                    aggregate_seq: original
                        .and_then(|(_, seq)| seq)
                        .filter(|_| with_intent)
                        .map(|seq| seq as u64),
                });
            }
            let store_rev = bump_rev(&tx)?;
            tx.execute(
                "INSERT INTO orders(id, sku, qty, rev) VALUES (?1, ?2, ?3, ?4)",
                params![
                    task.task_id,
                    format!("sku-{}", task.aggregate_id),
                    task.amount,
                    store_rev
                ],
            )?;
            tx.execute(
                "INSERT INTO idempotency(key, order_id) VALUES (?1, ?2)",
                params![task.idempotency_key, task.task_id],
            )?;
            let seq = if with_intent {
                Some(insert_intent(&tx, &task, store_rev)?)
            } else {
                None
            };
            if task.fail_before_commit {
                // Dropping the transaction rolls it back: neither the order nor its outbox row
                // stays, and the commit number is not spent.
                drop(tx);
                return Ok(Created::RolledBack);
            }
            tx.commit()?;
            Ok(Created::Accepted {
                store_rev,
                aggregate_seq: seq,
            })
        }).await
    }

    async fn record_intent(&self, task: &TaskSpec) -> Result<(i64, u64), BackendError> {
        let task = task.clone();
        self.with_db(move |db| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let rev = bump_rev(&tx)?;
            let seq = insert_intent(&tx, &task, rev)?;
            tx.commit()?;
            Ok((rev, seq))
        })
        .await
    }

    async fn pending(&self, limit: usize) -> Result<Vec<Intent>, BackendError> {
        self.with_db(move |db| {
            let mut stmt = db.prepare_cached(
                "SELECT payload, seq FROM outbox WHERE status = 'PENDING' ORDER BY aggregate_id, seq LIMIT ?1",
            )?;
            let rows = stmt.query_map([limit as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            let mut out = Vec::new();
            for row in rows {
                let (payload, seq) = row?;
                let mut intent: Intent = serde_json::from_str(&payload).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
                })?;
                intent.aggregate_seq = seq as u64;
                out.push(intent);
            }
            Ok(out)
        }).await
    }

    async fn mark_published(&self, batch: &[&Intent]) -> Result<Vec<Option<i64>>, BackendError> {
        let event_ids: Vec<String> = batch.iter().map(|i| i.event_id.clone()).collect();
        self.with_db(move |db| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut changed = Vec::with_capacity(event_ids.len());
            {
                let mut update = tx.prepare_cached(
                    "UPDATE outbox SET status = 'PUBLISHED' WHERE event_id = ?1 AND status = 'PENDING'",
                )?;
                for event_id in &event_ids {
                    changed.push(update.execute([event_id])? > 0);
                }
            }
            if !changed.contains(&true) {
                return Ok(vec![None; event_ids.len()]);
            }
            let rev = bump_rev(&tx)?;
            tx.commit()?;
            Ok(changed.into_iter().map(|c| c.then_some(rev)).collect())
        }).await
    }

    async fn snapshot(&self, event_ids: &[&str]) -> Result<Snapshot, BackendError> {
        let mut conn = self.redis().await?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for id in event_ids {
            pipe.cmd("GET").arg(self.key(&format!("dedup:{id}")));
        }
        pipe.cmd("GET").arg(self.key("counter"));
        let mut read: Vec<Option<String>> = pipe.query_async(&mut conn).await.map_err(broker)?;
        if read.len() != event_ids.len() + 1 {
            return Err(BackendError::Store("short snapshot reply".into()));
        }
        let counter = read
            .pop()
            .flatten()
            .and_then(|c| c.parse::<i64>().ok())
            .unwrap_or(0);
        // The guard compares the counter's value: it only grows, so a changed value is a changed counter.
        Ok(Snapshot {
            dedup: read.iter().map(|v| v.as_deref().map(dedup_key)).collect(),
            counter,
            counter_rev: counter,
        })
    }

    async fn commit(
        &self,
        batch: &[&Intent],
        read: &Snapshot,
        rules: CommitRules,
    ) -> Result<Committed, BackendError> {
        let mut conn = self.redis().await?;
        let ttl_ms = rules.dedup_ttl.map(|t| t.as_millis() as i64).unwrap_or(0);
        let script = redis::Script::new(COMMIT);
        let mut call = script.prepare_invoke();
        call.key(self.key("processed"))
            .key(self.key("counter"))
            .key(self.key("rev"));
        for intent in batch {
            call.key(self.key(&format!("dedup:{}", intent.event_id)));
        }
        call.arg(if rules.require_new_key { "1" } else { "0" })
            .arg(if rules.guard_counter { "1" } else { "0" })
            .arg(read.counter)
            .arg(ttl_ms);
        for intent in batch {
            let result = serde_json::to_string(&ResultRecord {
                amount: intent.amount,
                task_id: intent.task_id.clone(),
            })
            .expect("plain records serialise");
            call.arg(&intent.event_id).arg(result).arg(intent.amount);
        }
        let reply: Vec<String> = call.invoke_async(&mut conn).await.map_err(broker)?;
        let number = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| BackendError::Store(format!("unexpected commit reply {reply:?}")))
        };
        Ok(match reply.first().map(String::as_str) {
            Some("1") if reply.len() == batch.len() + 2 => Committed::Applied {
                store_rev: REDIS_REV_BASE + number(&reply[1])?,
                counters: reply[2..]
                    .iter()
                    .map(|c| number(c))
                    .collect::<Result<_, _>>()?,
            },
            Some("2") if reply.len() == 2 => Committed::Duplicate(dedup_key(&reply[1])),
            Some("3") => Committed::Conflict,
            _ => {
                return Err(BackendError::Store(format!(
                    "unexpected commit reply {reply:?}"
                )))
            }
        })
    }
}

impl Broker for SqliteRedis {
    type Handle = String;

    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published {
        let payload = serde_json::to_string(intent).expect("intent serialises");
        let keys = [
            self.key("outbox.events"),
            self.key("outbox.log"),
            self.key("seq"),
            self.key("msgids"),
        ];
        let use_id = if msg_id { "1" } else { "0" };
        if lose_ack {
            let mut script = redis::cmd("EVAL");
            script.arg(PUBLISH).arg(keys.len()).arg(&keys[..]);
            script.arg(&payload).arg(&intent.event_id).arg(use_id);
            return match self.publish_without_reply(script).await {
                Ok(()) => Published::Unacked {
                    reason: format!(
                        "Redis sent no reply to the publish (waited {} ms)",
                        self.timing.publish_timeout.as_millis()
                    ),
                },
                Err(reason) => Published::Failed { reason },
            };
        }
        let mut conn = match self.redis().await {
            Ok(c) => c,
            Err(e) => {
                return Published::Failed {
                    reason: e.to_string(),
                }
            }
        };
        let publish = redis::Script::new(PUBLISH);
        let mut script = publish.prepare_invoke();
        for k in &keys {
            script.key(k);
        }
        script.arg(payload).arg(&intent.event_id).arg(use_id);
        match tokio::time::timeout(
            self.timing.publish_timeout,
            script.invoke_async::<(u64, i64)>(&mut conn),
        )
        .await
        {
            Ok(Ok((seq, dup))) => Published::Acked {
                broker_seq: seq,
                duplicate: dup == 1,
            },
            Ok(Err(e)) => Published::Failed {
                reason: one_line(&e),
            },
            Err(_) => Published::Unacked {
                reason: format!(
                    "no reply within {} ms",
                    self.timing.publish_timeout.as_millis()
                ),
            },
        }
    }

    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError> {
        let mut conn = self.redis().await?;
        let processing = self.key(&format!("processing:{}", self.member));
        // Our own in-flight copies older than AckWait go back to the queue first.
        redis::Script::new(RECOVER)
            .key(&processing)
            .key(self.key("outbox.events"))
            .key(self.key("delivered_at"))
            .arg(self.ack_wait.as_millis() as u64)
            .invoke_async::<i64>(&mut conn)
            .await
            .map_err(broker)?;
        let started = Instant::now();
        let mut out = Vec::new();
        loop {
            let got: Option<(String, u32)> = redis::Script::new(FETCH)
                .key(self.key("outbox.events"))
                .key(&processing)
                .key(self.key("deliveries"))
                .key(self.key("delivered_at"))
                .invoke_async(&mut conn)
                .await
                .map_err(broker)?;
            match got {
                Some((item, count)) => {
                    let (seq, body) = item.split_once('|').ok_or_else(|| {
                        BackendError::Broker(format!("unreadable item {item:.80}"))
                    })?;
                    let broker_seq = seq
                        .parse()
                        .map_err(|_| BackendError::Broker(format!("unreadable item {item:.80}")))?;
                    let intent: Intent = serde_json::from_str(body).map_err(|e| {
                        BackendError::Broker(format!("unreadable item at {seq}: {e}"))
                    })?;
                    out.push(Delivery {
                        intent,
                        count,
                        broker_seq,
                        handle: item,
                    });
                    if out.len() >= self.timing.fetch_batch {
                        return Ok(out);
                    }
                }
                None if !out.is_empty() || started.elapsed() >= self.timing.fetch_wait => {
                    return Ok(out)
                }
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError> {
        let mut conn = self.redis().await?;
        let removed: i64 = redis::cmd("LREM")
            .arg(self.key(&format!("processing:{}", self.member)))
            .arg(1)
            .arg(&delivery.handle)
            .query_async(&mut conn)
            .await
            .map_err(broker)?;
        if removed == 1 {
            Ok(())
        } else {
            Err(BackendError::Broker(format!(
                "copy {} was not in flight",
                delivery.broker_seq
            )))
        }
    }
}

impl Control for SqliteRedis {
    async fn setup(&self) -> Result<(), BackendError> {
        let mut conn = self.redis().await?;
        let keys = self.scan(&mut conn, &self.key("*")).await?;
        if !keys.is_empty() {
            redis::cmd("DEL")
                .arg(&keys)
                .query_async::<i64>(&mut conn)
                .await
                .map_err(broker)?;
        }
        self.with_db(move |db| {
            db.execute_batch(
                "DROP TABLE IF EXISTS orders; DROP TABLE IF EXISTS outbox; DROP TABLE IF EXISTS idempotency;
                 DROP TABLE IF EXISTS store_rev;
                 CREATE TABLE orders(id TEXT PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL,
                     rev INTEGER NOT NULL DEFAULT 0);
                 CREATE TABLE outbox(
                     event_id TEXT PRIMARY KEY,
                     aggregate_id TEXT NOT NULL,
                     seq INTEGER NOT NULL,
                     event_type TEXT NOT NULL,
                     payload TEXT NOT NULL,
                     status TEXT NOT NULL DEFAULT 'PENDING',
                     rev INTEGER NOT NULL DEFAULT 0,
                     UNIQUE(aggregate_id, seq));
                 CREATE INDEX outbox_pending ON outbox(status) WHERE status = 'PENDING';
                 CREATE TABLE idempotency(key TEXT PRIMARY KEY, order_id TEXT NOT NULL);
                 CREATE TABLE store_rev(rev INTEGER NOT NULL);
                 INSERT INTO store_rev VALUES (0);",
            )
        }).await
    }

    async fn progress(&self) -> Result<Progress, BackendError> {
        let outbox_pending = self
            .count("SELECT COUNT(*) FROM outbox WHERE status = 'PENDING'")
            .await? as u64;
        let mut conn = self.redis().await?;
        let mut lists = self.scan(&mut conn, &self.key("processing:*")).await?;
        lists.push(self.key("outbox.events"));
        let mut broker_pending = 0;
        for list in lists {
            broker_pending += redis::cmd("LLEN")
                .arg(list)
                .query_async::<u64>(&mut conn)
                .await
                .map_err(broker)?;
        }
        Ok(Progress {
            outbox_pending,
            broker_pending,
        })
    }

    async fn commits(&self) -> Result<Vec<StoredCommit>, BackendError> {
        let mut conn = self.redis().await?;
        let prefix = self.key("dedup:");
        let keys = self.scan(&mut conn, &format!("{prefix}*")).await?;
        let mut out = Vec::new();
        for keys in keys.chunks(1_000) {
            let ids: Vec<&str> = keys
                .iter()
                .map(|k| k.strip_prefix(&prefix).unwrap_or(k))
                .collect();
            let (values, results): (Vec<Option<String>>, Vec<Option<String>>) = redis::pipe()
                .cmd("MGET")
                .arg(keys)
                .cmd("HMGET")
                .arg(self.key("processed"))
                .arg(&ids)
                .query_async(&mut conn)
                .await
                .map_err(broker)?;
            for ((event_id, value), result) in ids.into_iter().zip(values).zip(results) {
                let (Some(value), Some(result)) = (value, result) else {
                    continue;
                };
                let remembered = dedup_key(&value);
                let result = serde_json::from_str::<ResultRecord>(&result).ok();
                if let (Some(store_rev), Some(counter), Some(result)) =
                    (remembered.store_rev, remembered.counter, result)
                {
                    out.push(StoredCommit {
                        event_id: event_id.to_string(),
                        task_id: result.task_id,
                        amount: result.amount,
                        store_rev,
                        counter,
                    });
                }
            }
        }
        Ok(out)
    }

    async fn creates(&self) -> Result<(Vec<StoredTask>, Vec<StoredIntent>), BackendError> {
        self.with_db(move |db| {
            let mut stmt = db.prepare("SELECT id, sku, qty, rev FROM orders")?;
            let tasks = stmt
                .query_map([], |r| {
                    let task_id: String = r.get(0)?;
                    let sku: String = r.get(1)?;
                    Ok(StoredTask {
                        event_id: event_id_of(&task_id),
                        task_id,
                        store_rev: r.get(3)?,
                        aggregate_id: sku.strip_prefix("sku-").map(str::to_string),
                        amount: Some(r.get(2)?),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut stmt =
                db.prepare("SELECT event_id, aggregate_id, seq, payload, rev FROM outbox")?;
            let intents = stmt
                .query_map([], |r| {
                    let payload: String = r.get(3)?;
                    let intent = serde_json::from_str::<Intent>(&payload).ok();
                    Ok(StoredIntent {
                        event_id: r.get(0)?,
                        task_id: intent
                            .as_ref()
                            .map(|i| i.task_id.clone())
                            .unwrap_or_default(),
                        store_rev: r.get(4)?,
                        aggregate_id: Some(r.get(1)?),
                        aggregate_seq: Some(r.get::<_, i64>(2)? as u64),
                        amount: intent.map(|i| i.amount),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((tasks, intents))
        })
        .await
    }

    async fn observe(&self) -> Result<Observed, BackendError> {
        let orders = self.count("SELECT COUNT(*) FROM orders").await?;
        let outbox = self.count("SELECT COUNT(*) FROM outbox").await?;
        let outbox_pending = self
            .count("SELECT COUNT(*) FROM outbox WHERE status = 'PENDING'")
            .await?;
        let outbox_published = self
            .count("SELECT COUNT(*) FROM outbox WHERE status = 'PUBLISHED'")
            .await?;
        let mut conn = self.redis().await?;
        let log: Vec<String> = redis::cmd("LRANGE")
            .arg(self.key("outbox.log"))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(broker)?;
        let results: Vec<String> = redis::cmd("HVALS")
            .arg(self.key("processed"))
            .query_async(&mut conn)
            .await
            .map_err(broker)?;
        let processed = results.len() as i64;
        // A task is done when Redis holds its effect's result: the two stores joined.
        let with_result: std::collections::HashSet<String> = results
            .iter()
            .filter_map(|r| serde_json::from_str::<ResultRecord>(r).ok())
            .map(|r| r.task_id)
            .collect();
        let tasks_done = self
            .with_db(move |db| {
                let mut query = db.prepare("SELECT id FROM orders")?;
                let ids = query.query_map([], |r| r.get::<_, String>(0))?;
                let mut done = 0i64;
                for id in ids {
                    done += i64::from(with_result.contains(&id?));
                }
                Ok(done)
            })
            .await?;
        let dedup = self.scan(&mut conn, &self.key("dedup:*")).await?;
        let counter: Option<i64> = redis::cmd("GET")
            .arg(self.key("counter"))
            .query_async(&mut conn)
            .await
            .map_err(broker)?;
        let queue: i64 = redis::cmd("LLEN")
            .arg(self.key("outbox.events"))
            .query_async(&mut conn)
            .await
            .map_err(broker)?;

        // What the log says: copies per event, and whether each aggregate went out in seq order.
        let mut copies: BTreeMap<String, u64> = BTreeMap::new();
        let mut last_seq: BTreeMap<String, u64> = BTreeMap::new();
        let mut order_ok = true;
        for item in &log {
            let Some(intent) = item
                .split_once('|')
                .and_then(|(_, b)| serde_json::from_str::<Intent>(b).ok())
            else {
                continue;
            };
            let n = copies.entry(intent.event_id.clone()).or_default();
            *n += 1;
            if *n == 1 {
                let last = last_seq.entry(intent.aggregate_id.clone()).or_default();
                if intent.aggregate_seq <= *last {
                    order_ok = false;
                }
                *last = intent.aggregate_seq;
            }
        }
        let duplicates: BTreeMap<String, i64> = copies
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(id, n)| (id, n as i64))
            .collect();
        let mut other = serde_json::Map::new();
        other.insert("queue_length".into(), queue.into());
        other.insert("db".into(), self.db_path.display().to_string().into());
        Ok(Observed {
            orders: Some(orders),
            outbox: Some(outbox),
            outbox_pending: Some(outbox_pending),
            outbox_published: Some(outbox_published),
            enqueued: Some(log.len() as i64),
            processed_unique: Some(processed),
            stream_messages: Some(log.len() as i64),
            results: Some(processed),
            dedup_keys: Some(dedup.len() as i64),
            counter: Some(counter.unwrap_or(0).into()),
            tasks: Some(orders),
            tasks_done: Some(tasks_done),
            duplicates: Some(duplicates),
            order_ok: Some(order_ok),
            other,
            ..Observed::default()
        })
    }
}

/// An effect's result as the `processed` hash keeps it.
#[derive(Serialize, Deserialize)]
struct ResultRecord {
    amount: i64,
    task_id: String,
}

/// What a dedup key remembers (`rev:counter`) of the commit that wrote it.
fn dedup_key(value: &str) -> DedupKey {
    let mut parts = value.split(':').map(|p| p.parse::<i64>().ok());
    let store_rev = parts.next().flatten().map(|rev| REDIS_REV_BASE + rev);
    DedupKey {
        store_rev,
        counter: parts.next().flatten(),
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
