//! What the recorder itself needs of a scenario's services, beside the protocol's own operations:
//! connect, create the namespace, watch for quiet, and read the ground truth back.

use crate::protocol::model::Timing;
use crate::protocol::ports::{Broker, Store};

use super::connection::Connection;
use crate::protocol::ports::BackendError;

/// A backend: the store, the broker, and the recorder's control over both.
#[allow(async_fn_in_trait)]
pub trait Backend: Store + Broker + Control + Sized {
    /// Connects to the services and checks that each answers.
    async fn connect(connection: &Connection, timing: Timing) -> Result<Self, BackendError>;
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
    /// Reads how far the scenario has got, to tell when it is quiet.
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
    pub task_id: String,
    /// The event its outbox record carries.
    pub event_id: String,
    /// The transaction that created it.
    pub store_rev: i64,
    /// Its ordering group, when the store can tell it (SQLite keeps it in the order's `sku`).
    pub aggregate_id: Option<String>,
    /// The effect's size, when the store keeps it.
    pub amount: Option<i64>,
}

/// An outbox record, pending or published, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIntent {
    pub event_id: String,
    /// The task the record completes; empty when the record does not name it.
    pub task_id: String,
    /// The transaction that wrote the record.
    pub store_rev: i64,
    pub aggregate_id: Option<String>,
    /// Its position in the group (etcd: the record's create revision).
    pub aggregate_seq: Option<u64>,
    pub amount: Option<i64>,
}

/// An effect commit as the store remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCommit {
    pub event_id: String,
    pub task_id: String,
    pub amount: i64,
    /// The commit's `store_rev` (etcd: the dedup key's mod revision).
    pub store_rev: i64,
    /// The counter right after it.
    pub counter: i64,
}
