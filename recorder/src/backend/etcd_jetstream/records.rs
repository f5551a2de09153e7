//! What the etcd keys hold: the JSON of a task, a dedup key and a result, and how a dedup key and
//! the counter read back.

use serde::{Deserialize, Serialize};

use crate::protocol::model::{DedupKey, Intent};

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
pub(super) struct TaskStatus {
    pub(super) status: String,
    #[serde(default)]
    pub(super) task_id: String,
    #[serde(default)]
    pub(super) event_id: String,
    #[serde(default)]
    pub(super) aggregate_id: Option<String>,
    #[serde(default)]
    pub(super) amount: Option<i64>,
}

/// What a dedup key holds: the commit's task and effect, and the counter right after it.
#[derive(Serialize, Deserialize)]
pub(super) struct DedupRecord {
    pub(super) amount: i64,
    pub(super) counter: i64,
    pub(super) task_id: String,
}

/// An effect's stored result.
#[derive(Serialize)]
pub(super) struct ResultRecord<'a> {
    pub(super) amount: i64,
    pub(super) event_id: &'a str,
}

/// A record's JSON text.
pub(super) fn record<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain records serialise")
}

pub(super) fn task_json(intent: &Intent, status: &str) -> String {
    record(&TaskRecord {
        aggregate_id: &intent.aggregate_id,
        amount: intent.amount,
        event_id: &intent.event_id,
        status,
        task_id: &intent.task_id,
    })
}

/// The commit a dedup key remembers: the revision that last wrote it is that commit's revision.
pub(super) fn dedup_key(kv: &etcd_client::KeyValue) -> DedupKey {
    let counter = serde_json::from_slice::<DedupRecord>(kv.value())
        .ok()
        .map(|r| r.counter);
    DedupKey {
        store_rev: Some(kv.mod_revision()),
        counter,
    }
}

pub(super) fn parse_i64(bytes: &[u8]) -> i64 {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}
