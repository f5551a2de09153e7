//! What the protocol's steps exchange with a store and a broker: the task asked for, the intent,
//! what a create, a publish and a commit answered, and the timing knobs shared by the actors.

use std::time::Duration;

use outbox_trace::detail::Note;
use outbox_trace::About;
use serde::{Deserialize, Serialize};

/// How the API publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiMode {
    /// Task and outbox record in the store; the relay publishes.
    Outbox,
    /// Task in the store, then a direct publish to the broker: the dual write the outbox replaces.
    DualWrite,
}

/// A task the API is asked to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The business entity's id.
    pub task_id: String,
    /// The client's idempotency key: creating twice with one key yields one task.
    pub idempotency_key: String,
    /// The effect's size: the counter grows by this much, once.
    pub amount: i64,
    /// The ordering group of the task's event.
    pub aggregate_id: String,
    /// The event's type (`task.created`, `order.paid`, ...).
    pub event_type: String,
    /// Fail the create after writing and before committing (it must leave nothing behind).
    #[serde(default)]
    pub fail_before_commit: bool,
}

impl TaskSpec {
    /// The stable id of the event this task publishes: the same on every copy and delivery.
    pub fn event_id(&self) -> String {
        event_id_of(&self.task_id)
    }

    /// The outbox record this task's create writes (its `aggregate_seq` is assigned at commit).
    pub fn intent(&self) -> Intent {
        Intent {
            event_id: self.event_id(),
            task_id: self.task_id.clone(),
            aggregate_id: self.aggregate_id.clone(),
            aggregate_seq: 0,
            amount: self.amount,
            event_type: self.event_type.clone(),
            revision: 0,
        }
    }
}

/// The stable id of the event that task `task_id` publishes.
pub fn event_id_of(task_id: &str) -> String {
    format!("evt-{task_id}")
}

/// An outbox record as the relay reads it, and the message body the broker carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// The event's stable id.
    pub event_id: String,
    /// The task it completes.
    pub task_id: String,
    /// Ordering group: the relay publishes a group's records in `aggregate_seq` order.
    pub aggregate_id: String,
    /// Position in the group, assigned by the store at commit.
    #[serde(default)]
    pub aggregate_seq: u64,
    /// The effect's size, copied from the task: what the worker adds to the counter.
    pub amount: i64,
    /// The event's type, copied from the task; empty in a message that lacks it.
    #[serde(default)]
    pub event_type: String,
    /// The record's revision when read, for the mark's guard (not part of the message).
    #[serde(skip)]
    pub revision: i64,
}

impl Intent {
    /// What a step about this record is about: its event, its task, and its place in the
    /// aggregate once assigned.
    pub fn about(&self) -> About<String> {
        About {
            event_id: self.event_id.clone(),
            task_id: self.task_id.clone(),
            aggregate_id: Some(self.aggregate_id.clone()),
            aggregate_seq: (self.aggregate_seq > 0).then_some(self.aggregate_seq),
        }
    }
}

/// What the store answered to a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new task; `store_rev` is the transaction that wrote it.
    Accepted {
        /// The `store_rev` the API reports on the task's `task_accepted` and `intent_recorded`.
        store_rev: i64,
        /// The aggregate position assigned at commit (when the intent was written with it).
        aggregate_seq: Option<u64>,
    },
    /// The idempotency key already existed: this is the task created before.
    Existing {
        /// The id of the task the key created first; the API answers with it.
        task_id: String,
        /// The transaction that created it (etcd: the task key's create revision; SQLite: the
        /// row's commit number), when the store has it.
        store_rev: Option<i64>,
        /// Its outbox record's aggregate position, when it has one.
        aggregate_seq: Option<u64>,
    },
    /// The create failed before its commit and was rolled back.
    RolledBack,
}

/// What the broker answered to a publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Published {
    /// The broker's ACK arrived with the copy's position.
    Acked {
        /// The copy's position (stream sequence, list position).
        broker_seq: u64,
        /// The broker said the copy was a duplicate it dropped (broker-side dedup).
        duplicate: bool,
    },
    /// No ACK arrived in time; the broker may or may not hold the copy.
    Unacked {
        /// Why no ACK came (a timeout, or an error after the copy was sent), for `detail.reason`.
        reason: String,
    },
    /// The broker refused or was unreachable.
    Failed {
        /// The broker's or the client's error, on one line, for `detail.reason`.
        reason: String,
    },
}

/// What the worker read before deciding: the dedup keys of a batch of events and the counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Each event's dedup key, if it exists, in the order asked.
    pub dedup: Vec<Option<DedupKey>>,
    /// The counter's value as read: the base of the batch's running values.
    pub counter: i64,
    /// The counter's revision (0 when it does not exist yet).
    pub counter_rev: i64,
}

/// What a dedup key remembers of the commit that wrote it, so that a later suppression can name
/// that commit even if the worker that made it died before reporting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DedupKey {
    /// The commit's `store_rev`.
    pub store_rev: Option<i64>,
    /// The counter right after that commit.
    pub counter: Option<i64>,
}

/// How the worker's commit is guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRules {
    /// Require the dedup key to be absent.
    pub require_new_key: bool,
    /// Require the counter's revision to be the one read.
    pub guard_counter: bool,
    /// Put the dedup key on a lease of this length.
    pub dedup_ttl: Option<Duration>,
}

/// What a commit of a batch of effects did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Every effect's dedup key, result and completed task, and the counter, written in one
    /// transaction.
    Applied {
        /// The `store_rev` every effect of the batch reports.
        store_rev: i64,
        /// The counter right after each effect, in batch order.
        counters: Vec<i64>,
    },
    /// A batch of one found its dedup key there: nothing applied.
    Duplicate(DedupKey),
    /// The counter moved since it was read, or a dedup key appeared in a larger batch: read again
    /// and retry.
    Conflict,
}

impl Committed {
    /// The counter right after each effect of a batch that starts from `counter`.
    pub fn running(counter: i64, batch: &[&Intent]) -> Vec<i64> {
        batch
            .iter()
            .scan(counter, |value, intent| {
                *value += intent.amount;
                Some(*value)
            })
            .collect()
    }
}

/// Timing knobs shared by the actors.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Timing {
    /// The consumer's AckWait: how long a delivered copy may go unACKed before the broker delivers
    /// it again.
    pub ack_wait: Duration,
    /// How long the relay waits for a publish ACK.
    pub publish_timeout: Duration,
    /// Pause between relay passes that found nothing to do.
    pub relay_idle: Duration,
    /// How long one fetch waits for messages.
    pub fetch_wait: Duration,
    /// Messages fetched at once.
    pub fetch_batch: usize,
    /// Records the relay publishes at once and marks with one transaction.
    pub relay_batch: usize,
    /// Create requests the API has in flight at once.
    pub api_inflight: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            ack_wait: Duration::from_secs(2),
            publish_timeout: Duration::from_millis(500),
            relay_idle: Duration::from_millis(50),
            fetch_wait: Duration::from_millis(300),
            fetch_batch: 1,
            relay_batch: 1,
            api_inflight: 1,
        }
    }
}

/// A note giving the reason of a publish that went wrong.
pub fn because(reason: impl Into<String>) -> Note {
    Note {
        reason: Some(reason.into()),
        ..Note::default()
    }
}
