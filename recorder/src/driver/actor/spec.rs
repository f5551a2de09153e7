//! What the recorder tells an actor process: the [`ActorSpec`], written as one JSON line to its
//! standard input (the lines it writes back are [`Line`](crate::protocol::ctx::Line)s).

use serde::{Deserialize, Serialize};

use crate::backend::connection::Connection;
use crate::fault::plan::FaultPlan;
use crate::journal::clock::RunClock;
use crate::protocol::external::spec::ExternalSpec;
use crate::protocol::model::{ApiMode, TaskSpec, Timing};
use crate::protocol::variant::Protocol;

use crate::journal::author::Role;

/// Everything one actor life needs, sent over its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActorSpec {
    pub role: Role,
    pub incarnation: u32,
    /// The run's clock.
    pub clock: RunClock,
    pub connection: Connection,
    pub protocol: Protocol,
    /// Faults armed in this life.
    pub plan: FaultPlan,
    pub timing: Timing,
    /// The tasks to create (API only).
    pub tasks: Vec<TaskSpec>,
    /// How the API publishes (API only).
    pub api_mode: ApiMode,
    /// Tasks the API creates per second (0: no pacing).
    pub api_rate: u32,
    /// The external receiver (the receiver serves it; workers call it).
    pub external: Option<ExternalSpec>,
    /// Kinds whose report waits for the recorder's answer on standard input (a fault follows
    /// them: the recorder may kill the process instead of answering).
    #[serde(default)]
    pub hold: Vec<outbox_trace::Kind>,
    /// Report every step; when false, only crashes (to measure what tracing costs).
    #[serde(default = "yes")]
    pub trace: bool,
}

fn yes() -> bool {
    true
}
