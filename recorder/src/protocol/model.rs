//! The outbox protocol, written once: the API's create, the relay and the worker, each a sequence of
//! steps over a [`Store`](crate::backend::Store) and a [`Broker`](crate::backend::Broker). Every
//! backend runs this same code; every broken variant is a switch in it, not a copy of it.

pub mod api;
pub mod relay;
pub mod worker;

use std::time::Duration;

use outbox_trace::detail::Note;
use outbox_trace::About;
use serde::{Deserialize, Serialize};

/// Which protocol to run: the reference, or one deliberately broken variant that a checker must
/// catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// The correct protocol.
    Reference,
    /// The worker ACKs, then commits: a crash between loses the task.
    AckBeforeCommit,
    /// The worker never checks the dedup key: a second copy or a redelivery applies again.
    NoDedup,
    /// Task and outbox record in two transactions: a crash between loses the intent.
    SplitOutbox,
    /// The relay marks, then publishes: a crash between loses the event.
    MarkBeforePublish,
    /// The counter is written without its revision guard: concurrent workers lose an update.
    UnguardedCounter,
    /// Dedup keys live on a lease shorter than AckWait: the redelivery finds none.
    DedupExpiry,
    /// Relies on the broker's duplicate window (`Nats-Msg-Id`) instead of the consumer's dedup key.
    BrokerDedup,
    /// Calls the external receiver without an idempotency key: a retried call pays again.
    NoIdempotencyKey,
}

impl Protocol {
    /// The variant's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Reference => "reference",
            Protocol::AckBeforeCommit => "ack-before-commit",
            Protocol::NoDedup => "no-dedup",
            Protocol::SplitOutbox => "split-outbox",
            Protocol::MarkBeforePublish => "mark-before-publish",
            Protocol::UnguardedCounter => "unguarded-counter",
            Protocol::DedupExpiry => "dedup-expiry",
            Protocol::BrokerDedup => "broker-dedup",
            Protocol::NoIdempotencyKey => "no-idempotency-key",
        }
    }

    /// The API writes the task and its outbox record in one transaction.
    pub fn atomic_intent(self) -> bool {
        self != Protocol::SplitOutbox
    }

    /// The relay publishes before it marks.
    pub fn publish_then_mark(self) -> bool {
        self != Protocol::MarkBeforePublish
    }

    /// The worker commits before it ACKs.
    pub fn commit_then_ack(self) -> bool {
        self != Protocol::AckBeforeCommit
    }

    /// The worker consults the dedup key before applying the effect.
    pub fn checks_dedup(self) -> bool {
        !matches!(self, Protocol::NoDedup | Protocol::BrokerDedup)
    }

    /// The counter write is guarded by the revision read.
    pub fn guards_counter(self) -> bool {
        self != Protocol::UnguardedCounter
    }

    /// How long a dedup key lives (`None`: for the whole run).
    pub fn dedup_ttl(self) -> Option<Duration> {
        (self == Protocol::DedupExpiry).then_some(Duration::from_secs(1))
    }

    /// The worker sends `event_id` as the external receiver's idempotency key.
    pub fn sends_idempotency_key(self) -> bool {
        self != Protocol::NoIdempotencyKey
    }

    /// The relay sets the broker's message id, turning on broker-side duplicate suppression.
    pub fn broker_msg_id(self) -> bool {
        self == Protocol::BrokerDedup
    }

    /// The shortest AckWait under which this variant's flaw shows (a dedup lease must expire before
    /// the redelivery).
    pub fn min_ack_wait(self) -> Duration {
        match self {
            Protocol::DedupExpiry => Duration::from_secs(4),
            _ => Duration::ZERO,
        }
    }
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
    /// Ordering group.
    pub aggregate_id: String,
    /// Position in the group, assigned by the store at commit.
    #[serde(default)]
    pub aggregate_seq: u64,
    /// The effect's size.
    pub amount: i64,
    /// The event's type.
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
        /// The transaction.
        store_rev: i64,
        /// The aggregate position assigned at commit (when the intent was written with it).
        aggregate_seq: Option<u64>,
    },
    /// The idempotency key already existed: this is the task created before.
    Existing {
        /// The existing task.
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
        /// Why.
        reason: String,
    },
    /// The broker refused or was unreachable.
    Failed {
        /// Why.
        reason: String,
    },
}

/// What the worker read before deciding: the dedup keys of a batch of events and the counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Each event's dedup key, if it exists, in the order asked.
    pub dedup: Vec<Option<DedupKey>>,
    /// The counter's value.
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
        /// The transaction.
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
    /// The consumer's AckWait.
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
