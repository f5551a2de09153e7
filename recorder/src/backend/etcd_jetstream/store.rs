//! The protocol's store port on etcd: tasks, idempotency keys and outbox records written in one
//! transaction, pending records read by create revision, guarded marks, and the effect commit
//! (dedup keys, results, completed tasks and the counter in one transaction).

use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, TxnOpResponse,
};

use super::records::{dedup_key, parse_i64, record, task_json, DedupRecord, ResultRecord};
use super::{store, EtcdJetStream};
use crate::protocol::model::{CommitRules, Committed, Created, Intent, Snapshot, TaskSpec};
use crate::protocol::ports::{BackendError, Store};

/// Records marked by one transaction: two operations each, within etcd's default limit of 128.
const MAX_MARKS_PER_TXN: usize = 64;

impl Store for EtcdJetStream {
    async fn create(&self, task: &TaskSpec, with_intent: bool) -> Result<Created, BackendError> {
        if task.fail_before_commit {
            // An etcd transaction is all or nothing: not sending it is the rollback.
            return Ok(Created::RolledBack);
        }
        let idem = self.key(&format!("idem/{}", task.idempotency_key));
        let task_key = self.key(&format!("task/{}", task.task_id));
        let mut ops = vec![
            TxnOp::put(
                task_key.clone(),
                task_json(&task.intent(), "accepted"),
                None,
            ),
            TxnOp::put(idem.clone(), task.task_id.clone(), None),
        ];
        if with_intent {
            ops.push(self.put_pending(task));
        }
        let txn = Txn::new()
            .when([Compare::version(idem.clone(), CompareOp::Equal, 0)])
            .and_then(ops)
            .or_else([TxnOp::get(idem, None), TxnOp::get(task_key, None)]);
        let resp = self.kv.clone().txn(txn).await.map_err(store)?;
        let store_rev = revision(resp.header());
        if resp.succeeded() {
            return Ok(Created::Accepted {
                store_rev,
                aggregate_seq: with_intent.then_some(store_rev as u64),
            });
        }
        let mut read = resp.op_responses().into_iter().map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().cloned(),
            _ => None,
        });
        let (key, stored) = (read.next().flatten(), read.next().flatten());
        let task_id = key
            .map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
            .unwrap_or_else(|| task.task_id.clone());
        // The task key's create revision is the transaction that created task, key and outbox
        // record together (a commit rewrites the key; its create revision stays).
        let created = stored
            .filter(|_| task_id == task.task_id)
            .map(|kv| kv.create_revision());
        Ok(Created::Existing {
            task_id,
            store_rev: created,
            aggregate_seq: created.filter(|_| with_intent).map(|rev| rev as u64),
        })
    }

    async fn record_intent(&self, task: &TaskSpec) -> Result<(i64, u64), BackendError> {
        let resp = self
            .kv
            .clone()
            .txn(Txn::new().and_then([self.put_pending(task)]))
            .await
            .map_err(store)?;
        let rev = revision(resp.header());
        Ok((rev, rev as u64))
    }

    async fn pending(&self, limit: usize) -> Result<Vec<Intent>, BackendError> {
        let options = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(limit as i64);
        let resp = self
            .kv
            .clone()
            .get(self.key("outbox/pending/"), Some(options))
            .await
            .map_err(store)?;
        resp.kvs()
            .iter()
            .map(|kv| {
                let mut intent: Intent = serde_json::from_slice(kv.value())
                    .map_err(|e| BackendError::Store(format!("unreadable outbox record: {e}")))?;
                intent.aggregate_seq = kv.create_revision() as u64;
                intent.revision = kv.mod_revision();
                Ok(intent)
            })
            .collect()
    }

    async fn mark_published(&self, batch: &[&Intent]) -> Result<Vec<Option<i64>>, BackendError> {
        let mut marked = Vec::with_capacity(batch.len());
        for chunk in batch.chunks(MAX_MARKS_PER_TXN) {
            if chunk.len() > 1 {
                if let Some(rev) = self.mark_all(chunk).await? {
                    marked.extend(chunk.iter().map(|_| Some(rev)));
                    continue;
                }
            }
            // One of them changed since it was read: find out which, one guarded transaction each.
            for intent in chunk {
                marked.push(self.mark_all(std::slice::from_ref(intent)).await?);
            }
        }
        Ok(marked)
    }

    async fn snapshot(&self, event_ids: &[&str]) -> Result<Snapshot, BackendError> {
        let mut gets: Vec<TxnOp> = event_ids
            .iter()
            .map(|id| TxnOp::get(self.key(&format!("dedup/{id}")), None))
            .collect();
        gets.push(TxnOp::get(self.key("counter"), None));
        let resp = self
            .kv
            .clone()
            .txn(Txn::new().and_then(gets))
            .await
            .map_err(store)?;
        let mut read: Vec<_> = resp
            .op_responses()
            .into_iter()
            .filter_map(|r| match r {
                TxnOpResponse::Get(g) => Some(g.kvs().first().cloned()),
                _ => None,
            })
            .collect();
        if read.len() != event_ids.len() + 1 {
            return Err(BackendError::Store("short txn reply".into()));
        }
        let counter = read.pop().flatten();
        let (value, rev) = counter
            .map(|kv| (parse_i64(kv.value()), kv.mod_revision()))
            .unwrap_or((0, 0));
        Ok(Snapshot {
            dedup: read.iter().map(|kv| kv.as_ref().map(dedup_key)).collect(),
            counter: value,
            counter_rev: rev,
        })
    }

    async fn commit(
        &self,
        batch: &[&Intent],
        read: &Snapshot,
        rules: CommitRules,
    ) -> Result<Committed, BackendError> {
        let counter_key = self.key("counter");
        let dedup = |intent: &Intent| self.key(&format!("dedup/{}", intent.event_id));
        let mut compares = Vec::new();
        if rules.require_new_key {
            compares.extend(
                batch
                    .iter()
                    .map(|i| Compare::version(dedup(i), CompareOp::Equal, 0)),
            );
        }
        if rules.guard_counter {
            compares.push(Compare::mod_revision(
                counter_key.clone(),
                CompareOp::Equal,
                read.counter_rev,
            ));
        }
        let dedup_options = match rules.dedup_ttl {
            Some(ttl) => {
                let lease = self
                    .leases
                    .clone()
                    .grant(ttl.as_secs().max(1) as i64, None)
                    .await
                    .map_err(store)?;
                Some(PutOptions::new().with_lease(lease.id()))
            }
            None => None,
        };
        let counters = Committed::running(read.counter, batch);
        let mut ops = Vec::with_capacity(3 * batch.len() + 1);
        for (intent, counter) in batch.iter().zip(&counters) {
            let remembered = DedupRecord {
                amount: intent.amount,
                counter: *counter,
                task_id: intent.task_id.clone(),
            };
            ops.push(TxnOp::put(
                dedup(intent),
                record(&remembered),
                dedup_options.clone(),
            ));
            let result = ResultRecord {
                amount: intent.amount,
                event_id: &intent.event_id,
            };
            ops.push(TxnOp::put(
                self.key(&format!("result/{}", intent.task_id)),
                record(&result),
                None,
            ));
            ops.push(TxnOp::put(
                self.key(&format!("task/{}", intent.task_id)),
                task_json(intent, "done"),
                None,
            ));
        }
        let last = counters.last().copied().unwrap_or(read.counter);
        ops.push(TxnOp::put(counter_key, last.to_string(), None));
        let mut txn = Txn::new().when(compares).and_then(ops);
        if let [only] = batch {
            txn = txn.or_else([TxnOp::get(dedup(only), None)]);
        }
        let resp = self.kv.clone().txn(txn).await.map_err(store)?;
        if resp.succeeded() {
            return Ok(Committed::Applied {
                store_rev: revision(resp.header()),
                counters,
            });
        }
        let existing = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(dedup_key),
            _ => None,
        });
        Ok(match existing {
            Some(key) => Committed::Duplicate(key),
            None => Committed::Conflict,
        })
    }
}

impl EtcdJetStream {
    /// Marks every record of `batch` published in one transaction guarded by each record's
    /// revision: all of them, at the returned revision, or none (`None`) if any changed.
    async fn mark_all(&self, batch: &[&Intent]) -> Result<Option<i64>, BackendError> {
        let mut guards = Vec::with_capacity(batch.len());
        let mut ops = Vec::with_capacity(2 * batch.len());
        for intent in batch {
            let pending = self.key(&format!("outbox/pending/{}", intent.event_id));
            let published = self.key(&format!("outbox/published/{}", intent.event_id));
            let body = serde_json::to_vec(intent).expect("intent serialises");
            guards.push(Compare::mod_revision(
                pending.clone(),
                CompareOp::Equal,
                intent.revision,
            ));
            ops.push(TxnOp::delete(pending, None));
            ops.push(TxnOp::put(published, body, None));
        }
        let txn = Txn::new().when(guards).and_then(ops);
        let resp = self.kv.clone().txn(txn).await.map_err(store)?;
        Ok(resp.succeeded().then(|| revision(resp.header())))
    }

    fn put_pending(&self, task: &TaskSpec) -> TxnOp {
        let intent = task.intent();
        TxnOp::put(
            self.key(&format!("outbox/pending/{}", intent.event_id)),
            serde_json::to_vec(&intent).expect("intent serialises"),
            None,
        )
    }
}

fn revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or_default()
}
