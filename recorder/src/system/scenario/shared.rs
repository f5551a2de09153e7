//! What every part of a scenario shares: the run's environment, how a scenario ended, why it
//! could not run, and the timings of its stops and restarts.

use std::path::Path;
use std::sync::atomic::AtomicU32;

use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::fault::spec::Nemesis;
use crate::journal::clock::RunClock;
use crate::journal::writer::Recorder;
use crate::process::child::SpawnError;
use crate::system::file::System;
use crate::system::services::ServiceFailure;

/// How long a process may take to stop after SIGTERM.
pub const GRACE: Duration = Duration::from_secs(5);
/// Without a `quiet` command: quiet once no span arrived for this long.
pub(crate) const SPAN_SILENCE: Duration = Duration::from_secs(2);
/// How long after a `quiet` that said no the next is asked (a probe is never asked while
/// another runs, so a slow `quiet` is asked back to back, not over itself).
pub(crate) const QUIET_EVERY: Duration = Duration::from_millis(50);
/// The least time a `quiet` asked just before the deadline is given to answer.
pub(crate) const QUIET_AT_LEAST: Duration = Duration::from_millis(250);
/// Restarts of processes that exit on their own, per run.
pub const OWN_EXIT_RESTARTS: u32 = 20;
/// After a kill, how long exports already on their way may take to arrive before the crash row.
pub(crate) const DRAIN: Duration = Duration::from_millis(30);

/// A scenario's phases as they end, on stderr with `RUST_LOG=outbox_recorder::timing=debug`:
/// milliseconds from the scenario's start (what the recorder's own work per scenario costs).
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    scenario: String,
    started: Instant,
}

impl Timeline {
    pub(crate) fn new(scenario: &str, started: Instant) -> Self {
        Timeline {
            scenario: scenario.to_string(),
            started,
        }
    }

    /// `phase` ended now.
    pub(crate) fn mark(&self, phase: &str) {
        self.mark_at(phase, Instant::now());
    }

    /// `phase` ended at `at`.
    pub(crate) fn mark_at(&self, phase: &str, at: Instant) {
        tracing::debug!(
            target: "outbox_recorder::timing",
            scenario = self.scenario.as_str(),
            ms = at.saturating_duration_since(self.started).as_millis() as u64,
            "{phase}"
        );
    }
}

/// Why a scenario could not run.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// A process that could not start, a service never ready, a failed setup: exit 4.
    #[error("{0}")]
    Unavailable(String),
    /// The run was interrupted (Ctrl-C, SIGTERM, SIGHUP) before the scenario could begin: it
    /// ends as an interrupted run does.
    #[error("interrupted")]
    Interrupted,
    /// Anything else: exit 1.
    #[error("{0:#}")]
    Run(anyhow::Error),
}

impl From<SpawnError> for SystemError {
    fn from(e: SpawnError) -> Self {
        SystemError::Unavailable(e.to_string())
    }
}

impl From<ServiceFailure> for SystemError {
    fn from(e: ServiceFailure) -> Self {
        SystemError::Unavailable(e.to_string())
    }
}

pub(crate) fn run_err(e: impl Into<anyhow::Error>) -> SystemError {
    SystemError::Run(e.into())
}

/// What every scenario of a system run shares.
pub struct SystemEnv<'a> {
    /// The system file.
    pub system: &'a System,
    /// `--env`: added to every process's environment, over `[env]`.
    pub extra_env: &'a [(String, String)],
    /// `--fault`: added to every scenario's faults.
    pub faults: &'a [Nemesis],
    /// Tasks per scenario.
    pub tasks: u32,
    /// `--chaos`: seed and window.
    pub chaos: Option<(u64, Duration)>,
    /// How long a scenario may take to become quiet.
    pub deadline: Duration,
    /// How long the first task may go without reaching the service before the scenario is one
    /// that could not run.
    pub first_task_within: Duration,
    /// The journal.
    pub recorder: &'a Recorder,
    /// The run's clock.
    pub clock: RunClock,
    /// Unix nanoseconds at the clock's zero: a span's time minus this is its `ts_ns`.
    pub epoch_unix_ns: u64,
    /// The run.
    pub run_id: &'a str,
    /// Scenario directories go here.
    pub workdir: &'a Path,
    /// Cancelled by Ctrl-C, SIGTERM or SIGHUP.
    pub shutdown: &'a CancellationToken,
    /// Restarts left for processes that exit on their own.
    pub restarts_left: &'a AtomicU32,
    /// The system's configuration for `run_start` (secrets masked).
    pub shown: &'a serde_json::Value,
    /// The search a scenario of `recorder explore` belongs to, for `run_start.detail.search`.
    pub search: Option<&'a outbox_trace::detail::SearchMark>,
    /// The services kept between scenarios (`[reset]`); without, each scenario starts its own.
    pub kept: Option<&'a super::service_set::KeptServices>,
}

/// How a scenario ended.
#[derive(Debug, Clone, Default)]
pub struct ScenarioOutcome {
    /// `run_end.recovered`.
    pub recovered: bool,
    /// Spans that gave no row, with why (first few).
    pub skipped: Vec<String>,
    /// How many spans gave no row.
    pub skipped_count: u64,
    /// The spans refused for want of a column their kind requires, and those that mapped to
    /// no kind: `run_end.detail.refused` and `unmapped`.
    pub dropped: outbox_trace::otlp::Counts,
    /// How long no span had arrived when the deadline passed while `quiet` still said no.
    pub quiet_waiting: Option<std::time::Duration>,
    /// Why there is no `observed` row, if there is none.
    pub no_observed: Option<String>,
    /// Every fault the scenario named, searched or drew: `run_end.detail.faults`.
    pub tried: Vec<outbox_trace::detail::FaultTried>,
    /// What each role reported: `run_end.detail.shape`.
    pub shape: std::collections::BTreeMap<String, outbox_trace::detail::RoleShape>,
    /// What each role passed through the proxies to each service: `run_end.detail.wire`.
    pub wire: Vec<outbox_trace::detail::WireTraffic>,
    /// How long after the roles started the first task reached the service.
    pub first_reached: Option<Duration>,
    /// Why the scenario could not run (its roles did not start, or no task reached them); its
    /// `run_end` says `could not run: <why>`.
    pub could_not_run: Option<String>,
}

pub use outbox_trace::detail::COULD_NOT_RUN;

/// The file inside a scenario's directory that names its scenario.
pub const SCENARIO_FILE: &str = "scenario.txt";

/// A new directory for scenario `name` under `workdir`: short and of a fixed length whatever the
/// name (`s001`, `s002`, ...; numbered per process), so a Unix socket a service puts in `${dir}`
/// stays far under the 107-byte limit; the scenario's name is in [`SCENARIO_FILE`] inside.
pub fn scenario_dir(workdir: &Path, name: &str) -> std::io::Result<std::path::PathBuf> {
    let dir = numbered_dir(workdir, "s")?;
    std::fs::write(dir.join(SCENARIO_FILE), format!("{name}\n"))?;
    Ok(dir)
}

/// A new directory `<prefix>NNN` under `workdir` (numbered per process, from 001): a scenario's
/// (`s`), or that of a set of services kept between scenarios (`k`).
pub fn numbered_dir(workdir: &Path, prefix: &str) -> std::io::Result<std::path::PathBuf> {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = workdir.join(format!("{prefix}{n:03}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
