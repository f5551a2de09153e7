//! The recorder's control over etcd and JetStream: creating the namespace's stream and consumer,
//! reading how far a scenario has got, and reading the ground truth back from the keys.

use std::time::Duration;

use async_nats::jetstream::{consumer, stream};
use etcd_client::GetOptions;
use outbox_trace::detail::Observed;

use super::records::{parse_i64, DedupRecord, TaskStatus};
use super::{broker, store, EtcdJetStream};
use crate::backend::control::{Control, Progress, StoredCommit, StoredIntent, StoredTask};
use crate::protocol::model::Intent;
use crate::protocol::ports::BackendError;

impl EtcdJetStream {
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
