//! One recording from start to end, for either subject ([`recording`]): `--out` locked, the
//! subject's shared parts up, every scenario in turn, the trace joined; the built-in lab
//! ([`lab`]) and a team's own system ([`system`]) as its subjects; what both print and write at
//! the end ([`summary`]); and their temporary directory, removed on every ending and after a
//! killed run ([`workdir`]).

pub mod lab;
pub mod recording;
pub mod summary;
pub mod system;
pub mod workdir;

use tokio_util::sync::CancellationToken;

use crate::cli::config::RunConfig;
use crate::cli::exit::Failure;
use crate::system::config::SystemConfig;
use recording::{record, Output, RunOutcome};

/// Records the built-in lab as `config` says, until done or `shutdown`.
pub async fn run(config: &RunConfig, shutdown: CancellationToken) -> Result<RunOutcome, Failure> {
    let output = Output {
        out: &config.out,
        otlp: config.otlp.as_deref(),
        report: config.report.as_deref(),
        progress: config.progress,
    };
    record(output, lab::Lab::new(config), shutdown).await
}

/// Records a team's own system as `config` says, until done or `shutdown`.
pub async fn run_system(
    config: &SystemConfig,
    shutdown: CancellationToken,
) -> Result<RunOutcome, Failure> {
    let output = Output {
        out: &config.out,
        otlp: config.otlp.as_deref(),
        report: config.report.as_deref(),
        progress: config.progress,
    };
    record(output, system::TeamSystem::new(config), shutdown).await
}
