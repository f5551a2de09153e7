//! The actor process's wire format: the [`ActorSpec`] the recorder writes as one JSON line to the
//! actor's standard input, and the [`Line`]s the actor writes back on its standard output.

use outbox_trace::Step;
use serde::{Deserialize, Serialize};

use crate::backend::connection::Connection;
use crate::external::spec::ExternalSpec;
use crate::fault::plan::{Fault, FaultPlan};
use crate::journal::clock::RunClock;
use crate::protocol::model::{ApiMode, TaskSpec, Timing};
use crate::protocol::variant::Protocol;

use super::id::Role;

/// Everything one actor life needs, sent over its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActorSpec {
    /// What to do.
    pub role: Role,
    /// Which life this is.
    pub incarnation: u32,
    /// The run's clock.
    pub clock: RunClock,
    /// Where the services are.
    pub connection: Connection,
    /// Which protocol variant.
    pub protocol: Protocol,
    /// Faults armed in this life.
    pub plan: FaultPlan,
    /// Timing knobs.
    pub timing: Timing,
    /// The tasks to create (API only).
    pub tasks: Vec<TaskSpec>,
    /// How the API publishes (API only).
    pub api_mode: ApiMode,
    /// Tasks the API creates per second (0: no pacing).
    pub api_rate: u32,
    /// The external receiver (the receiver serves it; workers call it).
    pub external: Option<ExternalSpec>,
    /// Report every step; when false, only crashes (to measure what tracing costs).
    #[serde(default = "yes")]
    pub trace: bool,
}

fn yes() -> bool {
    true
}

/// One line an actor writes to its standard output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "line", content = "body", rename_all = "kebab-case")]
pub enum Line {
    /// A protocol step and when it happened (who did it, and where, the recorder fills in).
    Step {
        /// Nanoseconds on the run's clock.
        ts_ns: i64,
        /// What happened.
        step: Box<Step>,
    },
    /// A fault of the plan fired and is spent.
    Fired(Fault),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_line_reads_back_as_the_same_step() {
        let step = Step::crash("relay:before-publish", None);
        let text = serde_json::to_string(&Line::Step {
            ts_ns: 42,
            step: Box::new(step.clone()),
        })
        .unwrap();
        match serde_json::from_str::<Line>(&text).unwrap() {
            Line::Step { ts_ns, step: back } => assert_eq!((ts_ns, *back), (42, step)),
            other => panic!("{other:?}"),
        }
    }
}
