//! What the worker and the payments receiver share: where the receiver listens and keeps its keys,
//! a payment request's body and an HTTP answer.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where the receiver listens and keeps its keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExternalSpec {
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The receiver's own database file.
    pub db: PathBuf,
    /// How long the receiver takes to perform a payment (to make "in progress" observable).
    pub slow_ms: u64,
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// Whether the receiver replayed a stored answer.
    pub replayed: bool,
    pub body: String,
}

/// A payment request's body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Payment {
    /// The event that asks for it; its id is also the idempotency key, when the protocol sends one.
    pub event_id: String,
    /// The task it completes.
    pub task_id: String,
    /// How much to pay: the task's amount.
    pub amount: i64,
}
