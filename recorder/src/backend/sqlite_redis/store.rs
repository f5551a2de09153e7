//! The protocol's store port: tasks, idempotency keys and outbox rows in SQLite, each transaction
//! numbered by `store_rev`; the effect (dedup keys, results and the counter) in Redis, one Lua
//! script per commit.

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::records::{dedup_key, ResultRecord};
use super::scripts::COMMIT;
use super::{broker, SqliteRedis, REDIS_REV_BASE};
use crate::protocol::model::{CommitRules, Committed, Created, Intent, Snapshot, TaskSpec};
use crate::protocol::ports::{BackendError, Store};

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
