//! What the protocol needs from a store and a broker: the traits every backend implements. The
//! protocol is written against these alone, so it never names a backend.

use super::model::{CommitRules, Committed, Created, Intent, Published, Snapshot, TaskSpec};

/// Why a backend operation failed. Each message fits on one line and never holds credentials.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A service could not be reached.
    #[error("cannot reach {service} at {endpoint}: {reason}")]
    Unreachable {
        /// The service's name (`etcd`, `nats`, `redis`).
        service: &'static str,
        /// Its address, with any credentials masked.
        endpoint: String,
        /// The client's error, on one line.
        reason: String,
    },
    /// The store refused or failed an operation.
    #[error("store: {0}")]
    Store(String),
    /// The broker refused or failed an operation.
    #[error("broker: {0}")]
    Broker(String),
}

/// One delivery of one copy.
#[derive(Debug)]
pub struct Delivery<H> {
    /// The outbox record the copy carries, as the relay published it.
    pub intent: Intent,
    /// The broker's delivery count (1 on the first delivery).
    pub count: u32,
    /// The copy's position in the broker; a redelivery keeps the position of the first delivery.
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
    /// What the backend keeps of one delivery to ACK it later.
    type Handle;
    /// Publishes one copy. `lose_ack` sends it with a reply address nobody reads; `msg_id` turns
    /// on broker-side duplicate suppression.
    async fn publish(&self, intent: &Intent, lose_ack: bool, msg_id: bool) -> Published;
    /// The next deliveries, waiting a little when there are none.
    async fn fetch(&self) -> Result<Vec<Delivery<Self::Handle>>, BackendError>;
    /// ACKs a delivery, waiting for the broker to confirm it.
    async fn ack(&self, delivery: &Delivery<Self::Handle>) -> Result<(), BackendError>;
}
