//! `recorder explore --system FILE` as a recording's [`Subject`]: a systematic search, no scenario
//! to write. Scenario `calm` (no fault) learns the shape of the system, and which roles' connections
//! to which services pass the recorder's proxy; then every single-fault schedule enumerated from
//! it ([`crate::fault::schedules`]) runs as a scenario of its own, named by its spec, `--jobs` at a
//! time, its fault recorded as searched (`run_start.detail.searched`). A schedule whose fault did
//! not fire (for a wire fault: did not act on traffic) runs once more (`...-again`); if it still
//! does not, it is not reached: reported, not judged. With `--depth 2`, pairs of single faults
//! drawn from a seed follow, until a time budget is spent. What each schedule tried is kept for
//! the table. After a signal no schedule starts, and those running end as interrupted.
//!
//! `--shard K/N` runs only the K-th share of the list; `--plan FILE` replaces the list with one a
//! calm run wrote (`--write-plan`); `--resume` keeps what an earlier run of the same search
//! completed ([`super::resume`]). Every scenario's `run_start.detail.search` names the search, its
//! shard and (after the calm run) its list's digest ([`super::plan`]).
//!
//! The parts: [`search`] (the list and the search proper), [`schedule`] (one schedule run and
//! judged), [`calm`] (the calm run and what it leaves), [`shard_plan_resume`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use outbox_trace::detail::{self, FaultTried, RoleShape, SearchMark};

use super::recording::{Opened, Run, Subject};
use super::resume::Earlier;
use crate::cli::exit::Failure;
use crate::cli::shard::Shard;
use crate::system::config::SystemConfig;
use crate::system::scenario::{KeptServices, ScenarioOutcome, SystemEnv};
use crate::system::tasks::UNREACHABLE_FOR;
use outbox_analyzer::check::RunVerdict;

mod calm;
mod schedule;
mod search;
mod shard_plan_resume;

/// The name of the calm scenario.
pub const CALM: &str = "calm";

/// One schedule as it ran.
#[derive(Debug, Clone)]
pub struct Tried {
    /// The scenario's name in the trace (the last try's).
    pub scenario: String,
    /// The fault.
    pub spec: String,
    /// How it fired (fired 0: not reached, with why).
    pub fault: FaultTried,
    /// The run of it became quiet.
    pub recovered: bool,
    /// Its verdict as it ended (with `--fail-fast` or a progress line; the findings judge the
    /// whole trace).
    pub judged: Option<RunVerdict>,
    /// Why it could not run (tried twice), if it could not.
    pub could_not_run: Option<String>,
}

impl Tried {
    /// Judged invalid as it ended.
    fn invalid(&self) -> bool {
        self.judged == Some(RunVerdict::Invalid)
    }
}

/// The search, for one recording.
pub struct Explore<'c> {
    config: &'c SystemConfig,
    jobs: usize,
    pause_for: Duration,
    shape_only: bool,
    shown: serde_json::Value,
    /// What the calm run learned.
    pub shape: BTreeMap<String, RoleShape>,
    /// The calm run's outcome.
    pub calm: Option<ScenarioOutcome>,
    /// Every schedule, in the order enumerated.
    pub tried: Vec<Tried>,
    /// Only the schedules whose spec holds one of these words (all when empty).
    pub only: Vec<String>,
    /// `--depth 2`: pairs of faults drawn from this seed after the singles, for this long.
    pub pairs: Option<(u64, Duration)>,
    /// `--fail-fast`: each schedule is judged as it ends, and the first invalid one stops the
    /// search (the schedules running finish; no other starts).
    pub fail_fast: bool,
    /// The schedule that stopped the search.
    pub stopped_at: Option<String>,
    /// How many schedules it left unrun.
    pub not_run: usize,
    /// `--shard K/N`: only this share of the schedules runs.
    pub shard: Option<Shard>,
    /// `--resume`: keep what an earlier run of the same search completed on `--out`.
    pub resume: bool,
    /// `--plan FILE`: the list every shard shares.
    pub plan_file: Option<std::path::PathBuf>,
    /// `--write-plan FILE`: where the calm run's list goes.
    pub write_plan: Option<std::path::PathBuf>,
    /// The list of `--plan`.
    planned: Option<Vec<String>>,
    /// What each scenario's `run_start.detail.search` says.
    mark: SearchMark,
    /// What an earlier run of the search completed (`--resume`).
    earlier: Earlier,
    /// With `[reset]`: the services kept between schedules, one set per job slot.
    kept: Option<KeptServices>,
}

impl<'c> Explore<'c> {
    /// The search of `config`'s system.
    pub fn new(
        config: &'c SystemConfig,
        jobs: usize,
        pause_for: Duration,
        shape_only: bool,
    ) -> Self {
        Explore {
            config,
            jobs: jobs.max(1),
            pause_for,
            shape_only,
            shown: config.shown(),
            shape: BTreeMap::new(),
            calm: None,
            tried: Vec::new(),
            only: Vec::new(),
            pairs: None,
            fail_fast: false,
            stopped_at: None,
            not_run: 0,
            shard: None,
            resume: false,
            plan_file: None,
            write_plan: None,
            planned: None,
            mark: SearchMark::default(),
            earlier: Earlier::default(),
            kept: config
                .system
                .file
                .reset
                .is_some()
                .then(KeptServices::default),
        }
    }

    /// What a scenario of the search (the calm run or a schedule) runs in: the system with no
    /// fault of its own, the run's journal and clock, the search's mark and the services kept
    /// between schedules.
    fn env<'a>(&'a self, run: &'a Run<'_>, restarts_left: &'a AtomicU32) -> SystemEnv<'a> {
        let config = self.config;
        SystemEnv {
            system: &config.system,
            extra_env: &config.env,
            faults: &[],
            tasks: config.tasks,
            chaos: None,
            deadline: config.deadline,
            first_task_within: self.first_task_within(),
            recorder: run.recorder,
            clock: run.clock,
            epoch_unix_ns: run.epoch_unix_ns,
            run_id: run.run_id,
            workdir: run.workdir,
            shutdown: run.shutdown,
            restarts_left,
            shown: &self.shown,
            search: Some(&self.mark),
            kept: self.kept.as_ref(),
        }
    }

    /// How long a schedule's first task may go without reaching the service: three times what
    /// the calm run took, and never less than [`UNREACHABLE_FOR`].
    fn first_task_within(&self) -> Duration {
        let calm = self.calm.as_ref().and_then(|c| c.first_reached);
        calm.map_or(UNREACHABLE_FOR, |took| UNREACHABLE_FOR.max(took * 3))
    }
}

impl Subject for Explore<'_> {
    async fn open(&mut self, _workdir: &Path) -> Result<Opened, Failure> {
        crate::process::reaper::adopt_orphans()
            .map_err(|e| Failure::run(anyhow::anyhow!("becoming a child subreaper: {e}")))?;
        let backend = format!("system:{}", self.config.system.file.name);
        let mut scenarios = vec![self.calm_name()];
        if !self.shape_only {
            scenarios.push("schedules".to_string());
        }
        let metadata = detail::RunConfig {
            backend: Some(backend.clone()),
            recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
            scenarios: vec![self.calm_name()],
            ..detail::RunConfig::default()
        };
        self.begin(&metadata)?;
        Ok(Opened {
            metadata,
            backend,
            protocol: None,
            scenarios,
        })
    }

    async fn scenario(&mut self, run: &Run<'_>, index: usize) -> Result<bool, Failure> {
        if index > 0 {
            return self.search(run).await;
        }
        if let Some(calm) = self.earlier.calm.take() {
            return self.calm_kept(calm);
        }
        let outcome = self.calm_run(run).await?;
        self.calm_kept(outcome)
    }

    async fn close(&mut self) {
        if let Some(kept) = &self.kept {
            kept.stop(crate::system::scenario::GRACE).await;
        }
        // What no scenario could claim, left while others ran, goes with the run.
        crate::process::reaper::sweep(None).await;
    }
}
