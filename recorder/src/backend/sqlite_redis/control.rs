//! The recorder's control over SQLite and Redis: creating the tables and clearing the keys,
//! reading how far a scenario has got, and reading the ground truth back from both stores.

use std::collections::BTreeMap;

use outbox_trace::detail::Observed;
use redis::aio::ConnectionManager;

use super::records::{dedup_key, ResultRecord};
use super::{broker, SqliteRedis};
use crate::backend::control::{Control, Progress, StoredCommit, StoredIntent, StoredTask};
use crate::protocol::model::{event_id_of, Intent};
use crate::protocol::ports::BackendError;

impl SqliteRedis {
    /// The single number a counting query gives.
    async fn count(&self, query: &'static str) -> Result<i64, BackendError> {
        self.with_db(move |db| db.query_row(query, [], |r| r.get::<_, i64>(0)))
            .await
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
