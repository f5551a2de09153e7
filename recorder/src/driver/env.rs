//! What one scenario's run shares with the rest of the run, and the stamp on the rows the recorder
//! writes itself.

use std::time::Duration;

use outbox_trace::Step;
use tokio_util::sync::CancellationToken;

use crate::backend::services::{LocalService, ServiceError};
use crate::fault::chaos::ChaosPlan;
use crate::fault::spec::Nemesis;
use crate::journal::author::Author;
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder, Tallies};
use crate::protocol::model::Timing;
use crate::protocol::ports::BackendError;
use crate::protocol::variant::Protocol;

/// What a scenario run shares with the rest of the run.
pub struct ScenarioEnv<'a> {
    /// The run's clock.
    pub clock: RunClock,
    /// The journal's sender: every step of the scenario goes through it.
    pub recorder: &'a Recorder,
    /// The protocol variant, passed to every actor the scenario starts.
    pub protocol: Protocol,
    /// Timing knobs (AckWait already adjusted for the variant).
    pub timing: Timing,
    /// How long a scenario may take to become quiet.
    pub deadline: Duration,
    /// Cancelled by Ctrl-C, SIGTERM or SIGHUP.
    pub shutdown: &'a CancellationToken,
    /// The run's own temporary directory (the external receiver keeps its database there).
    pub workdir: &'a std::path::Path,
    /// Live counts, for the progress line.
    pub tallies: Tallies,
    /// Show a live progress line (on a terminal).
    pub progress: bool,
    /// The chaos plan (`--chaos`): its windows, and what its draw on the steps may hit.
    pub chaos: Option<&'a ChaosPlan>,
    /// `--fault`: the faults every scenario injects.
    pub faults: &'a [Nemesis],
    /// Record the actors' steps (false: only the recorder's own rows and crashes).
    pub trace: bool,
    /// The services the recorder started (restarted and paused by faults).
    pub services: &'a tokio::sync::Mutex<Vec<LocalService>>,
}

/// Makes the rows the recorder writes itself (not an actor's), stamped with the scenario and the
/// run's clock.
pub struct Stamp {
    pub(super) clock: RunClock,
    pub(super) scenario: String,
}

impl Stamp {
    /// `step` by `author` (in its first life), now.
    pub fn entry(&self, author: Author, step: Step) -> Entry {
        Entry {
            scenario: self.scenario.clone(),
            author,
            incarnation: 0,
            ts_ns: self.clock.now(),
            step,
        }
    }
}

/// Why a scenario could not run to its end, typed where it happened: a service that cannot be
/// reached or restarted is a missing service (the run exits 4), anything else is the run's own
/// failure (exit 1). There is deliberately no conversion from `anyhow::Error`: each step says
/// which it is.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A store or broker operation of the recorder's own control failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A local service did not come back after a restart.
    #[error(transparent)]
    Service(#[from] ServiceError),
    /// Anything else: the journal, an actor process, the ground truth's files.
    #[error("{0:#}")]
    Drive(anyhow::Error),
}

/// The run's own failure, for the steps whose errors name no service.
pub fn drive(e: anyhow::Error) -> ScenarioError {
    ScenarioError::Drive(e)
}
