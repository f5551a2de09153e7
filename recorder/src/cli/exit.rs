//! How a recorder command fails: the one error type whose every variant names its exit code (as
//! `--help` lists them), so an error cannot be added without deciding which code it ends with.

use crate::backend::services::ServiceError;
use crate::driver::run_scenario::ScenarioError;
use crate::protocol::ports::BackendError;

use super::config::ConfigError;

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
}

impl Failure {
    /// The process's exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Unavailable(_) => 4,
            Failure::Run(_) => 1,
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
        }
    }

    /// The run went wrong: the class of every error that is neither usage nor a service.
    pub fn run(e: impl Into<anyhow::Error>) -> Self {
        Failure::Run(e.into())
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
            ScenarioError::Connect(e) => Failure::from(e),
            ScenarioError::Drive(e) => Failure::Run(e),
        }
    }
}
