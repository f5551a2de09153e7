//! The store in etcd and the broker in NATS JetStream (the lab 03 stack).
//!
//! Keys of one scenario, under its prefix:
//! `task/{task_id}`, `idem/{key}`, `outbox/pending/{event_id}`, `outbox/published/{event_id}`,
//! `dedup/{event_id}`, `result/{task_id}`, `counter`.
//! An outbox record's create revision is its `aggregate_seq`: etcd assigns it at commit and it grows
//! with commit order, so pending records read by create revision come out in per-aggregate order.

use std::future::IntoFuture;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use etcd_client::{
    Compare, CompareOp, GetOptions, KvClient, LeaseClient, PutOptions, SortOrder, SortTarget, Txn,
    TxnOp, TxnOpResponse,
};
use futures::StreamExt;
use outbox_trace::detail::Observed;
use serde::{Deserialize, Serialize};

use super::connection::{Connection, Endpoints};
use super::control::{Backend, Control, Progress, StoredCommit, StoredIntent, StoredTask};
use crate::protocol::model::{
    CommitRules, Committed, Created, DedupKey, Intent, Published, Snapshot, TaskSpec, Timing,
};
use crate::protocol::ports::BackendError;
use crate::protocol::ports::{Broker, Delivery, Store};

/// The header that carries the stable event id on every copy.
pub const EVENT_ID_HEADER: &str = "Outbox-Event-Id";

/// Records marked by one transaction: two operations each, within etcd's default limit of 128.
const MAX_MARKS_PER_TXN: usize = 64;

/// A connection to one scenario's etcd keys and JetStream stream.
pub struct EtcdJetStream {
    kv: KvClient,
    leases: LeaseClient,
    prefix: String,
    nats: async_nats::Client,
    js: jetstream::Context,
    stream: String,
    subject: String,
    consumer_name: String,
    consumer: tokio::sync::OnceCell<consumer::PullConsumer>,
    ack_wait: Duration,
    replicas: usize,
    timing: Timing,
}

impl Backend for EtcdJetStream {
    async fn connect(conn: &Connection, timing: Timing) -> Result<Self, BackendError> {
        let Endpoints::EtcdJetstream {
            etcd,
            nats,
            nats_creds,
            replicas,
        } = &conn.endpoints
        else {
            return Err(BackendError::Store(
                "not an etcd + JetStream connection".into(),
            ));
        };
        let etcd_unreachable = |reason: String| BackendError::Unreachable {
            service: "etcd",
            endpoint: etcd.redacted(),
            reason,
        };
        let mut options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(10));
        if let Some((user, password)) = etcd.credentials() {
            options = options.with_user(user, password);
        }
        let scheme = if etcd.secret_url().starts_with("https") {
            "https"
        } else {
            "http"
        };
        let members: Vec<String> = etcd
            .host_ports()
            .iter()
            .map(|h| format!("{scheme}://{h}"))
            .collect();
        let client = etcd_client::Client::connect(members, Some(options))
            .await
            .map_err(|e| etcd_unreachable(one_line(&e)))?;
        let mut kv = client.kv_client();
        kv.get("/outbox-trace/.ping", None)
            .await
            .map_err(|e| etcd_unreachable(one_line(&e)))?;

        let mut nats_options = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(3))
            .max_reconnects(None);
        if let Some((user, password)) = nats.credentials() {
            nats_options = if password.is_empty() {
                nats_options.token(user)
            } else {
                nats_options.user_and_password(user, password)
            };
        }
        if let Some(path) = nats_creds {
            nats_options = nats_options.credentials_file(path).await.map_err(|e| {
                BackendError::Unreachable {
                    service: "nats",
                    endpoint: nats.redacted(),
                    reason: format!("credentials file {}: {}", path.display(), one_line(&e)),
                }
            })?;
        }
        let servers: Vec<async_nats::ServerAddr> = nats
            .host_ports()
            .iter()
            .filter_map(|h| format!("nats://{h}").parse().ok())
            .collect();
        let nats = nats_options
            .connect(servers)
            .await
            .map_err(|e| BackendError::Unreachable {
                service: "nats",
                endpoint: nats.redacted(),
                reason: one_line(&e),
            })?;
        let js = jetstream::new(nats.clone());
        Ok(EtcdJetStream {
            kv,
            leases: client.lease_client(),
            prefix: conn.namespace.prefix.clone(),
            nats,
            js,
            stream: conn.namespace.stream.clone(),
            subject: conn.namespace.subject.clone(),
            consumer_name: conn.namespace.consumer.clone(),
            consumer: tokio::sync::OnceCell::new(),
            ack_wait: conn.ack_wait,
            replicas: (*replicas).max(1),
            timing,
        })
    }
}

impl EtcdJetStream {
    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }

    async fn consumer(&self) -> Result<&consumer::PullConsumer, BackendError> {
        self.consumer
            .get_or_try_init(|| async {
                let stream = self.js.get_stream(&self.stream).await.map_err(broker)?;
                stream
                    .get_consumer::<consumer::pull::Config>(&self.consumer_name)
                    .await
                    .map_err(broker)
            })
            .await
    }

    async fn count(&self, rest: &str) -> Result<u64, BackendError> {
        let resp = self
            .kv
            .clone()
            .get(
                self.key(rest),
                Some(GetOptions::new().with_prefix().with_count_only()),
            )
            .await
            .map_err(store)?;
        Ok(u64::try_from(resp.count()).unwrap_or(0))
    }

    async fn counter(&self) -> Result<i64, BackendError> {
        let resp = self
            .kv
            .clone()
            .get(self.key("counter"), None)
            .await
            .map_err(store)?;
        Ok(resp
            .kvs()
            .first()
            .map(|kv| parse_i64(kv.value()))
            .unwrap_or(0))
    }
}

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
    /// Creates the namespace's stream (with its replicas) and its durable consumer.
    async fn create_stream_and_consumer(&self) -> Result<(), BackendError> {
        let stream = self
            .js
            .create_stream(stream::Config {
                name: self.stream.clone(),
                subjects: vec![self.subject.clone()],
                storage: stream::StorageType::File,
                num_replicas: self.replicas,
                ..Default::default()
            })
            .await
            .map_err(broker)?;
        stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some(self.consumer_name.clone()),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: self.ack_wait,
                ..Default::default()
            })
            .await
            .map_err(broker)?;
        Ok(())
    }

    /// Every key under `rest`, read in pages so that no reply exceeds the client's message limit.
    async fn range(&self, rest: &str) -> Result<Vec<etcd_client::KeyValue>, BackendError> {
        const PAGE: i64 = 2_000;
        let prefix = self.key(rest).into_bytes();
        let mut end = prefix.clone();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let mut from = prefix;
        let mut out = Vec::new();
        loop {
            let options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
            let mut resp = self
                .kv
                .clone()
                .get(from.clone(), Some(options))
                .await
                .map_err(store)?;
            let more = resp.more();
            let page = resp.take_kvs();
            if let Some(last) = page.last() {
                from = last.key().to_vec();
                from.push(0);
            }
            out.extend(page);
            if !more {
                return Ok(out);
            }
        }
    }

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

impl Broker for EtcdJetStream {
    type Handle = jetstream::Message;

    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(EVENT_ID_HEADER, intent.event_id.as_str());
        if msg_id {
            headers.insert("Nats-Msg-Id", intent.event_id.as_str());
        }
        let payload: bytes::Bytes = serde_json::to_vec(intent)
            .expect("intent serialises")
            .into();
        let wait = self.timing.publish_timeout;
        if lose_ack {
            // A reply inbox nobody subscribes to: the stream stores the copy, the ACK goes nowhere.
            let nowhere = format!("_INBOX.outbox-trace.lost.{}", intent.event_id);
            let sent = self
                .nats
                .publish_with_reply_and_headers(self.subject.clone(), nowhere, headers, payload)
                .await;
            if let Err(e) = sent {
                return Published::Failed {
                    reason: one_line(&e),
                };
            }
            let _ = self.nats.flush().await;
            tokio::time::sleep(wait).await;
            return Published::Unacked {
                reason: format!("no publish ACK within {} ms", wait.as_millis()),
            };
        }
        let future = match self
            .js
            .publish_with_headers(self.subject.clone(), headers, payload)
            .await
        {
            Ok(f) => f,
            Err(e) => {
                return Published::Failed {
                    reason: one_line(&e),
                }
            }
        };
        match tokio::time::timeout(wait, future.into_future()).await {
            Ok(Ok(ack)) => Published::Acked {
                broker_seq: ack.sequence,
                duplicate: ack.duplicate,
            },
            Ok(Err(e)) => Published::Unacked {
                reason: one_line(&e),
            },
            Err(_) => Published::Unacked {
                reason: format!("no publish ACK within {} ms", wait.as_millis()),
            },
        }
    }

    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError> {
        let consumer = self.consumer().await?;
        let mut batch = consumer
            .fetch()
            .max_messages(self.timing.fetch_batch)
            .expires(self.timing.fetch_wait)
            .messages()
            .await
            .map_err(broker)?;
        let mut out = Vec::new();
        while let Some(message) = batch.next().await {
            let message = message.map_err(broker)?;
            let (count, broker_seq) = {
                let info = message.info().map_err(broker)?;
                (
                    u32::try_from(info.delivered).unwrap_or(u32::MAX),
                    info.stream_sequence,
                )
            };
            let intent: Intent = serde_json::from_slice(&message.payload).map_err(|e| {
                BackendError::Broker(format!("unreadable message at seq {broker_seq}: {e}"))
            })?;
            out.push(Delivery {
                intent,
                count,
                broker_seq,
                handle: message,
            });
        }
        Ok(out)
    }

    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError> {
        delivery.handle.double_ack().await.map_err(broker)
    }
}

impl Control for EtcdJetStream {
    async fn setup(&self) -> Result<(), BackendError> {
        // A cluster that has just elected its leaders may not place a replicated stream at once;
        // a single server either can or cannot, so its error is final.
        let settle = if self.replicas > 1 { 30 } else { 0 };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(settle);
        loop {
            match self.create_stream_and_consumer().await {
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::info!("setting up the stream: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                done => return done,
            }
        }
    }

    async fn progress(&self) -> Result<Progress, BackendError> {
        let mut consumer = self.consumer().await?.clone();
        let info = consumer.info().await.map_err(broker)?;
        Ok(Progress {
            outbox_pending: self.count("outbox/pending/").await?,
            broker_pending: info.num_pending + info.num_ack_pending as u64,
        })
    }

    async fn commits(&self) -> Result<Vec<StoredCommit>, BackendError> {
        let prefix = self.key("dedup/");
        let keys = self.range("dedup/").await?;
        Ok(keys
            .iter()
            .filter_map(|kv| {
                let value: DedupRecord = serde_json::from_slice(kv.value()).ok()?;
                Some(StoredCommit {
                    event_id: String::from_utf8_lossy(kv.key())
                        .strip_prefix(&prefix)?
                        .to_string(),
                    task_id: value.task_id,
                    amount: value.amount,
                    store_rev: kv.mod_revision(),
                    counter: value.counter,
                })
            })
            .collect())
    }

    async fn creates(&self) -> Result<(Vec<StoredTask>, Vec<StoredIntent>), BackendError> {
        let tasks = self
            .range("task/")
            .await?
            .iter()
            .filter_map(|kv| {
                let task: TaskStatus = serde_json::from_slice(kv.value()).ok()?;
                Some(StoredTask {
                    task_id: task.task_id,
                    event_id: task.event_id,
                    store_rev: kv.create_revision(),
                    aggregate_id: task.aggregate_id,
                    amount: task.amount,
                })
            })
            .collect();
        let mut intents = Vec::new();
        for (rest, pending) in [("outbox/pending/", true), ("outbox/published/", false)] {
            for kv in self.range(rest).await? {
                let Ok(intent) = serde_json::from_slice::<Intent>(kv.value()) else {
                    continue;
                };
                // A pending record's create revision is the transaction that wrote it; the relay
                // copies it into the published record as its `aggregate_seq`.
                let store_rev = if pending {
                    kv.create_revision()
                } else {
                    intent.aggregate_seq as i64
                };
                intents.push(StoredIntent {
                    event_id: intent.event_id,
                    task_id: intent.task_id,
                    store_rev,
                    aggregate_id: Some(intent.aggregate_id),
                    aggregate_seq: Some(store_rev as u64),
                    amount: Some(intent.amount),
                });
            }
        }
        Ok((tasks, intents))
    }

    async fn observe(&self) -> Result<Observed, BackendError> {
        let mut stream = self.js.get_stream(&self.stream).await.map_err(broker)?;
        let stream_messages = stream.info().await.map_err(broker)?.state.messages;
        let tasks = self.range("task/").await?;
        let tasks_done = tasks
            .iter()
            .filter(|kv| {
                serde_json::from_slice::<TaskStatus>(kv.value()).is_ok_and(|t| t.status == "done")
            })
            .count();
        Ok(Observed {
            stream_messages: Some(stream_messages as i64),
            counter: Some(self.counter().await?.into()),
            results: Some(self.count("result/").await? as i64),
            dedup_keys: Some(self.count("dedup/").await? as i64),
            outbox_pending: Some(self.count("outbox/pending/").await? as i64),
            outbox_published: Some(self.count("outbox/published/").await? as i64),
            tasks: Some(tasks.len() as i64),
            tasks_done: Some(tasks_done as i64),
            ..Observed::default()
        })
    }
}

/// A task as the store keeps it (fields in the order they are written).
#[derive(Serialize)]
struct TaskRecord<'a> {
    aggregate_id: &'a str,
    amount: i64,
    event_id: &'a str,
    status: &'a str,
    task_id: &'a str,
}

/// What the observer reads of a stored task.
#[derive(Deserialize)]
struct TaskStatus {
    status: String,
    #[serde(default)]
    task_id: String,
    #[serde(default)]
    event_id: String,
    #[serde(default)]
    aggregate_id: Option<String>,
    #[serde(default)]
    amount: Option<i64>,
}

/// What a dedup key holds: the commit's task and effect, and the counter right after it.
#[derive(Serialize, Deserialize)]
struct DedupRecord {
    amount: i64,
    counter: i64,
    task_id: String,
}

/// An effect's stored result.
#[derive(Serialize)]
struct ResultRecord<'a> {
    amount: i64,
    event_id: &'a str,
}

/// A record's JSON text.
fn record<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain records serialise")
}

fn task_json(intent: &Intent, status: &str) -> String {
    record(&TaskRecord {
        aggregate_id: &intent.aggregate_id,
        amount: intent.amount,
        event_id: &intent.event_id,
        status,
        task_id: &intent.task_id,
    })
}

/// The commit a dedup key remembers: the revision that last wrote it is that commit's revision.
fn dedup_key(kv: &etcd_client::KeyValue) -> DedupKey {
    let counter = serde_json::from_slice::<DedupRecord>(kv.value())
        .ok()
        .map(|r| r.counter);
    DedupKey {
        store_rev: Some(kv.mod_revision()),
        counter,
    }
}

fn revision(header: Option<&etcd_client::ResponseHeader>) -> i64 {
    header.map(|h| h.revision()).unwrap_or_default()
}

fn parse_i64(bytes: &[u8]) -> i64 {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn store(e: etcd_client::Error) -> BackendError {
    BackendError::Store(one_line(&e))
}

fn broker(e: impl std::fmt::Display) -> BackendError {
    BackendError::Broker(one_line(&e))
}
