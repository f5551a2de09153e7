//! How a recorder command fails: the one error type whose every variant names its exit code (as
//! `--help` lists them), so an error cannot be added without deciding which code it ends with.

use crate::backend::services::ServiceError;
use crate::driver::env::ScenarioError;
use crate::journal::output::OutputError;
use crate::protocol::ports::BackendError;
use crate::system::scenario::SystemError;

use super::config::ConfigError;

/// The recorder's exit codes, as `--help` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every scenario ran and recovered (or a command other than `run` succeeded).
    Success = 0,
    /// The run failed.
    Failed = 1,
    /// A bad command line.
    Usage = 2,
    /// The run finished, but a scenario never became quiet.
    Unrecovered = 3,
    /// A service is missing or unreachable.
    Unavailable = 4,
    /// Interrupted (Ctrl-C); what was recorded is kept.
    Interrupted = 130,
    /// Ended by SIGTERM; what was recorded is kept.
    Terminated = 143,
    /// Ended by SIGHUP; what was recorded is kept.
    HungUp = 129,
}

/// Every way a recorder command can fail, each with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// A command line that parses but does not make sense: exit 2.
    #[error(transparent)]
    Usage(#[from] ConfigError),
    /// A service the run needs is missing, does not start, or cannot be reached: exit 4.
    #[error("{0:#}")]
    Unavailable(anyhow::Error),
    /// The run itself went wrong: exit 1.
    #[error("{0:#}")]
    Run(anyhow::Error),
    /// `--out` refused before the run (unusable, or in use by another recorder): exit 2; or the
    /// trace could not be written (a full disk): exit 1.
    #[error(transparent)]
    Output(#[from] OutputError),
}

impl Failure {
    /// The process's exit code for this failure.
    pub fn exit(&self) -> Exit {
        match self {
            Failure::Usage(_) => Exit::Usage,
            Failure::Unavailable(_) => Exit::Unavailable,
            Failure::Run(_) => Exit::Failed,
            Failure::Output(e) if e.is_refusal() => Exit::Usage,
            Failure::Output(_) => Exit::Failed,
        }
    }

    /// The same failure, saying what was being done when it happened.
    pub fn context<C>(self, what: C) -> Self
    where
        C: std::fmt::Display + Send + Sync + 'static,
    {
        match self {
            Failure::Usage(e) => Failure::Usage(e),
            Failure::Unavailable(e) => Failure::Unavailable(e.context(what)),
            Failure::Run(e) => Failure::Run(e.context(what)),
            Failure::Output(e) => Failure::Output(e),
        }
    }

    /// The run went wrong: the class of every error that is neither usage nor a service. It
    /// takes an `anyhow::Error`, not any error: a service's typed error converts by its own
    /// `From` impl below.
    pub fn run(e: anyhow::Error) -> Self {
        Failure::Run(e)
    }
}

impl From<ServiceError> for Failure {
    fn from(e: ServiceError) -> Self {
        Failure::Unavailable(e.into())
    }
}

impl From<BackendError> for Failure {
    fn from(e: BackendError) -> Self {
        match e {
            e @ BackendError::Unreachable { .. } => Failure::Unavailable(e.into()),
            e => Failure::Run(e.into()),
        }
    }
}

impl From<ScenarioError> for Failure {
    fn from(e: ScenarioError) -> Self {
        match e {
            ScenarioError::Backend(e) => Failure::from(e),
            ScenarioError::Service(e) => Failure::from(e),
            ScenarioError::Drive(e) => Failure::Run(e),
        }
    }
}

impl From<SystemError> for Failure {
    fn from(e: SystemError) -> Self {
        match e {
            SystemError::Unavailable(m) => Failure::Unavailable(anyhow::anyhow!(m)),
            SystemError::Run(e) => Failure::Run(e),
            SystemError::Interrupted => Failure::Run(anyhow::anyhow!("interrupted")),
        }
    }
}
