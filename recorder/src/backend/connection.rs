//! The store and broker operations the protocol needs, one implementation per backend.
//!
//! The protocol ([`crate::protocol`]) is written against these traits; a backend supplies the
//! transactions and the messaging, nothing else. [`Control`] is what the recorder itself needs
//! around a scenario: create the namespace, watch for quiet, and read the ground truth back.

pub mod etcd_jetstream;
pub mod sqlite_redis;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::endpoints::Endpoint;
use crate::protocol::{CommitRules, Committed, Created, Intent, Published, Snapshot, TaskSpec};

/// Why a backend operation failed. Each message fits on one line and never holds credentials.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A service could not be reached.
    #[error("cannot reach {service} at {endpoint}: {reason}")]
    Unreachable {
        /// Which service.
        service: &'static str,
        /// Where (redacted).
        endpoint: String,
        /// Why.
        reason: String,
    },
    /// The store refused or failed an operation.
    #[error("store: {0}")]
    Store(String),
    /// The broker refused or failed an operation.
    #[error("broker: {0}")]
    Broker(String),
}

/// The name of a backend as written in the trace's `backend` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// etcd for the store, NATS JetStream for the broker.
    EtcdJetstream,
    /// A SQLite file for the outbox, a Redis list for the broker, Redis for the effect.
    SqliteRedis,
}

impl BackendKind {
    /// The trace's name for it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::EtcdJetstream => "etcd-jetstream",
            BackendKind::SqliteRedis => "sqlite-redis",
        }
    }
}

/// Where one scenario lives inside the shared services, so scenarios never see each other.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Namespace {
    /// The scenario's name (names its database file where the store is a file).
    pub scenario: String,
    /// Key prefix in the store.
    pub prefix: String,
    /// Stream (or list) name.
    pub stream: String,
    /// Subject published to.
    pub subject: String,
    /// Durable consumer name.
    pub consumer: String,
}

impl Namespace {
    /// The namespace of `scenario` in run `run_id`.
    pub fn new(run_id: &str, scenario: &str) -> Self {
        let token: String = format!("{run_id}_{scenario}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        Namespace {
            scenario: scenario.to_string(),
            prefix: format!("/outbox-trace/{run_id}/{scenario}/"),
            stream: format!("OT_{token}"),
            subject: format!("outbox-trace.{token}.tasks"),
            consumer: "worker".to_string(),
        }
    }
}

/// Where a backend's services are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "backend")]
pub enum Endpoints {
    /// etcd and NATS.
    EtcdJetstream {
        /// etcd's client URL.
        etcd: Endpoint,
        /// NATS' client URL.
        nats: Endpoint,
        /// A NATS credentials file (its path is not secret; its content never leaves it).
        #[serde(default)]
        nats_creds: Option<PathBuf>,
        /// Copies of the stream the NATS cluster keeps (1 on a single server).
        #[serde(default = "one")]
        replicas: usize,
    },
    /// A SQLite directory and Redis.
    SqliteRedis {
        /// The directory holding one database file per scenario.
        db_dir: PathBuf,
        /// Redis' URL.
        redis: Endpoint,
    },
}

fn one() -> usize {
    1
}

impl Endpoints {
    /// Which backend these endpoints are for.
    pub fn kind(&self) -> BackendKind {
        match self {
            Endpoints::EtcdJetstream { .. } => BackendKind::EtcdJetstream,
            Endpoints::SqliteRedis { .. } => BackendKind::SqliteRedis,
        }
    }
}

/// Everything an actor needs to connect: endpoints (with credentials, passed only over a pipe) and
/// the namespace.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connection {
    /// Where the services are.
    pub endpoints: Endpoints,
    /// The scenario's namespace.
    pub namespace: Namespace,
    /// The consumer's AckWait.
    pub ack_wait: Duration,
    /// Who connects (`worker-2`, ...): names a consumer's own in-flight list where the broker needs one.
    pub member: String,
}

/// A backend: the store, the broker, and the recorder's control over both.
#[allow(async_fn_in_trait)]
pub trait Backend: Store + Broker + Control + Sized {
    /// Connects to the services and checks that each answers.
    async fn connect(
        connection: &Connection,
        timing: crate::protocol::Timing,
    ) -> Result<Self, BackendError>;
}

/// One delivery of one copy.
#[derive(Debug)]
pub struct Delivery<H> {
    /// The event it carries.
    pub intent: Intent,
    /// The broker's delivery count (1 on the first delivery).
    pub count: u32,
    /// The copy's position.
    pub broker_seq: u64,
    /// What the broker needs to ACK it.
    pub handle: H,
}

/// The store's side of the protocol.
#[allow(async_fn_in_trait)]
pub trait Store {
    /// Writes the task and its idempotency key, and the outbox record too when `with_intent`,
    /// in one transaction, unless the key exists. A task marked `fail_before_commit` is written
    /// and then rolled back: nothing of it remains.
    async fn create(&self, task: &TaskSpec, with_intent: bool) -> Result<Created, BackendError>;
    /// Writes the outbox record alone (the broken `split-outbox` path). Returns `(store_rev,
    /// aggregate_seq)`.
    async fn record_intent(&self, task: &TaskSpec) -> Result<(i64, u64), BackendError>;
    /// Pending outbox records, in per-aggregate order, at most `limit`.
    async fn pending(&self, limit: usize) -> Result<Vec<Intent>, BackendError>;
    /// Marks a batch of records published in one guarded transaction: each one only if it is
    /// still the revision read. Returns, per record, the revision that marked it, or `None` if it
    /// changed since it was read (another relay marked it).
    async fn mark_published(&self, batch: &[&Intent]) -> Result<Vec<Option<i64>>, BackendError>;
    /// Reads the dedup keys of `event_ids` and the counter together.
    async fn snapshot(&self, event_ids: &[&str]) -> Result<Snapshot, BackendError>;
    /// Commits, for each record of `batch` (distinct events, at most [`MAX_COMMIT_BATCH`]), its
    /// dedup key, result and completed task, and the counter once, in one transaction.
    async fn commit(
        &self,
        batch: &[&Intent],
        read: &Snapshot,
        rules: CommitRules,
    ) -> Result<Committed, BackendError>;
}

/// Effects one commit transaction holds at most (three etcd operations each, within its default
/// limit of 128 per transaction).
pub const MAX_COMMIT_BATCH: usize = 32;

/// The broker's side of the protocol.
#[allow(async_fn_in_trait)]
pub trait Broker {
    /// What an ACK needs.
    type Handle;
    /// Publishes one copy. `lose_ack` sends it with a reply address nobody reads; `msg_id` turns
    /// on broker-side duplicate suppression.
    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published;
    /// The next deliveries, waiting a little when there are none.
    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError>;
    /// ACKs a delivery, waiting for the broker to confirm it.
    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError>;
}

/// How far a scenario has got, from the services themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Outbox records not marked published.
    pub outbox_pending: u64,
    /// Copies not yet delivered plus copies delivered and not ACKed.
    pub broker_pending: u64,
}

/// The recorder's own view of a scenario's services.
#[allow(async_fn_in_trait)]
pub trait Control {
    /// Creates the stream and consumer (or tables) of the namespace, from scratch.
    async fn setup(&self) -> Result<(), BackendError>;
    /// Reads the progress.
    async fn progress(&self) -> Result<Progress, BackendError>;
    /// Reads the ground truth back: stream messages, counter, results, dedup keys, pending outbox
    /// records, tasks; and whatever else the backend's lab reports (orders, enqueued, duplicates).
    async fn observe(&self) -> Result<outbox_trace::detail::Observed, BackendError>;
    /// Every effect commit the store remembers, from its dedup keys.
    async fn commits(&self) -> Result<Vec<StoredCommit>, BackendError>;
    /// Every task and every outbox record the store holds, each with the transaction that
    /// created it.
    async fn creates(&self) -> Result<(Vec<StoredTask>, Vec<StoredIntent>), BackendError>;
}

/// A task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTask {
    /// The task.
    pub task_id: String,
    /// Its event.
    pub event_id: String,
    /// The transaction that created it.
    pub store_rev: i64,
    /// Its ordering group.
    pub aggregate_id: Option<String>,
    /// The effect's size.
    pub amount: Option<i64>,
}

/// An outbox record, pending or published, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIntent {
    /// The event.
    pub event_id: String,
    /// The task.
    pub task_id: String,
    /// The transaction that wrote the record.
    pub store_rev: i64,
    /// Its ordering group.
    pub aggregate_id: Option<String>,
    /// Its position in the group.
    pub aggregate_seq: Option<u64>,
    /// The effect's size.
    pub amount: Option<i64>,
}

/// An effect commit as the store remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCommit {
    /// The event.
    pub event_id: String,
    /// The task.
    pub task_id: String,
    /// The effect's size.
    pub amount: i64,
    /// The commit's transaction.
    pub store_rev: i64,
    /// The counter right after it.
    pub counter: i64,
}
