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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use outbox_trace::detail::{self, FaultTried, RoleShape, SearchMark};

use super::plan::{plan_digest, read_plan, search_id, write_plan, Settings};
use super::recording::{Opened, Run, Subject};
use super::resume::{earlier_trace, keep, load, Earlier};
use crate::cli::config::ConfigError;
use crate::cli::exit::Failure;
use crate::cli::shard::Shard;
use crate::fault::coverage::Origin;
use crate::fault::dice::Dice;
use crate::fault::duration::show_duration;
use crate::fault::schedules::{singles, slug, Space};
use crate::fault::spec::{Nemesis, WireFault};
use crate::journal::writer::{parts_dir, segment_path};
use crate::system::config::SystemConfig;
use crate::system::scenario::{
    run_or_not, KeptServices, ScenarioOutcome, SystemEnv, OWN_EXIT_RESTARTS,
};
use crate::system::tasks::UNREACHABLE_FOR;
use crate::wire::protocol::Wire;
use outbox_analyzer::check::RunVerdict;

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

    /// The schedules the shape calls for (or `--plan` lists), in their fixed order.
    fn schedules(&self) -> Vec<Nemesis> {
        let file = &self.config.system.file;
        let listed = match &self.planned {
            Some(plan) => plan.clone(),
            None => self.enumerated(),
        };
        listed
            .iter()
            .filter(|text| {
                self.only.is_empty() || self.only.iter().any(|w| text.contains(w.as_str()))
            })
            .filter_map(|text| {
                // Enumerated from the file's own names: a spec that does not resolve is a bug
                // here, and is left out rather than run as something else.
                Nemesis::parse(text)
                    .and_then(|n| n.resolve(|s| file.services.contains_key(s)))
                    .ok()
            })
            .collect()
    }

    /// The single faults enumerated from the calm run's shape.
    fn enumerated(&self) -> Vec<String> {
        let file = &self.config.system.file;
        let instances: BTreeMap<String, u32> = file
            .roles
            .iter()
            .map(|(r, spec)| (r.clone(), spec.instances))
            .collect();
        let services: Vec<String> = file.services.keys().cloned().collect();
        let lossy: Vec<(String, WireFault)> = file
            .services
            .iter()
            .filter_map(|(name, spec)| {
                let fault = match spec.wire {
                    Wire::Postgres => WireFault::LoseCommitReply,
                    Wire::Nats => WireFault::LosePuback,
                    Wire::Tcp | Wire::Redis => return None,
                };
                Some((name.clone(), fault))
            })
            .collect();
        // A wire fault can act only where the calm run's connections passed the proxy.
        let wired: BTreeSet<(String, String)> = self
            .calm
            .iter()
            .flat_map(|c| &c.wire)
            .filter(|w| w.request_bytes + w.reply_bytes > 0)
            .map(|w| (w.role.clone(), w.service.clone()))
            .collect();
        let space = Space {
            shape: &self.shape,
            instances: &instances,
            services: &services,
            wired: &wired,
            lossy: &lossy,
            pause_for: self.pause_for,
        };
        singles(&space)
    }

    /// Runs one schedule (one fault, or a pair) as scenario `name`, with a budget of its own for
    /// processes that exit. It fired when each of its faults did.
    async fn one(
        &self,
        run: &Run<'_>,
        name: String,
        faults: Vec<Nemesis>,
    ) -> Result<Tried, Failure> {
        let restarts_left = AtomicU32::new(OWN_EXIT_RESTARTS);
        let env = self.env(run, &restarts_left);
        // Judged as it ends when the search may stop on it, or shows its progress.
        let judge = self.fail_fast || self.config.progress;
        let from = match judge {
            true => Some(run.recorder.seal().await.map_err(Failure::run)?),
            false => None,
        };
        let (name, outcome) = run_or_not(&env, &name, &faults, Origin::Searched)
            .await
            .map_err(Failure::from)?;
        let judged = match from {
            Some(from) => Some(self.judged(run, from, &name).await?),
            None => None,
        };
        let (counts, least) =
            super::resume::least_fired(faults.iter().map(ToString::to_string), &outcome.tried);
        Ok(Tried {
            scenario: name,
            spec: counts
                .iter()
                .map(|t| t.spec.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            fault: FaultTried {
                spec: least.spec.clone(),
                ..least
            },
            recovered: outcome.recovered,
            judged,
            could_not_run: outcome.could_not_run,
        })
    }

    /// The verdict of scenario `name`, judged by the analyzer on its own rows: those of the
    /// segments written since segment `from` (every row of a scenario that began after it),
    /// gathered into a file of their own in the run's working directory (never among the
    /// segments, which are the trace) for as long as the judging takes.
    async fn judged(&self, run: &Run<'_>, from: u32, name: &str) -> Result<RunVerdict, Failure> {
        let to = run.recorder.seal().await.map_err(Failure::run)?;
        let parts = parts_dir(&self.config.out);
        let judging = run.workdir.join(format!("judging-{name}.parquet"));
        let gathered = (|| -> Result<(), outbox_trace::TraceError> {
            let mut rows = Vec::new();
            for n in from + 1..=to {
                let segment = segment_path(&parts, n);
                if segment.exists() {
                    let trace = outbox_trace::read_trace(&segment)?;
                    rows.extend(trace.events.into_iter().filter(|e| e.scenario == name));
                }
            }
            let mut writer = outbox_trace::TraceWriter::create(&judging, None)?;
            writer.write(&rows)?;
            writer.finish()?;
            Ok(())
        })();
        let judged = gathered.map_err(|e| e.to_string()).and_then(|()| {
            outbox_analyzer::check::check_paths(std::slice::from_ref(&judging))
                .map_err(|e| e.to_string())
        });
        let _ = std::fs::remove_file(&judging);
        let report =
            judged.map_err(|e| Failure::run(anyhow::anyhow!("judging {name} as it ended: {e}")))?;
        Ok(report.verdict_of(name).unwrap_or(RunVerdict::Unknown))
    }

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

    /// Says so when `--jobs` asks for more schedules at once than the machine has cores.
    fn warn_jobs(&self) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if self.jobs > cores {
            eprintln!(
                "recorder: explore: --jobs {} exceeds this machine's {cores} core(s): schedules \
                 may be slow to start",
                self.jobs
            );
        }
    }

    /// Every schedule, `jobs` at a time; those that did not fire, once more.
    async fn search(&mut self, run: &Run<'_>) -> Result<bool, Failure> {
        if self.stopped_at.is_some() {
            return Ok(true);
        }
        self.warn_jobs();
        let schedules = self.share(self.schedules());
        let total = schedules.len();
        let this = &*self;
        let mut done = 0;
        let mut tried = Vec::with_capacity(total);
        let stop = AtomicBool::new(false);
        let stop = &stop;
        let mut runs = futures::stream::iter(schedules.into_iter().enumerate().map(|(i, f)| {
            let name = slug(&f);
            async move {
                if let Some(kept) = this.kept(&name) {
                    return (i, f, Some(Ok(kept)));
                }
                // Nothing starts after `--fail-fast` stopped the search or a signal ended it.
                if stop.load(Ordering::SeqCst) || run.shutdown.is_cancelled() {
                    return (i, f, None);
                }
                let result = this.one(run, name, vec![f.clone()]).await;
                (i, f, Some(result))
            }
        }))
        .buffer_unordered(self.jobs);
        let mut stopped_at = None;
        let mut not_run = 0;
        let mut invalid = 0;
        let started = std::time::Instant::now();
        while let Some((i, fault, result)) = runs.next().await {
            let Some(result) = result else {
                not_run += 1;
                continue;
            };
            let result = result?;
            if result.invalid() && self.fail_fast && stopped_at.is_none() {
                stop.store(true, Ordering::SeqCst);
                stopped_at = Some(result.scenario.clone());
            }
            done += 1;
            invalid += usize::from(result.invalid());
            if self.config.progress {
                let left = started
                    .elapsed()
                    .mul_f64((total - done) as f64 / done as f64);
                eprintln!(
                    "[{done}/{total}] {}: fired {}, {} · {invalid} invalid so far · about {} left",
                    result.spec,
                    result.fault.fired,
                    result.judged.map_or("?", RunVerdict::as_str),
                    show_duration(Duration::from_secs(left.as_secs()))
                );
            }
            // After a signal the schedules still running end as interrupted (each writes its
            // `run_end`), so they are waited for, not dropped.
            tried.push((i, fault, result));
        }
        drop(runs);
        self.stopped_at = stopped_at;
        self.not_run = not_run;
        tried.sort_by_key(|(i, _, _)| *i);
        let mut all_recovered = true;
        for (_, fault, mut result) in tried {
            let retry = self.stopped_at.is_none() && !run.shutdown.is_cancelled();
            if result.fault.fired == 0 && retry && result.could_not_run.is_none() {
                result = self.again(run, fault).await?;
            }
            all_recovered &= result.recovered;
            self.tried.push(result);
        }
        if let (Some((seed, budget)), None) = (self.pairs, &self.stopped_at) {
            all_recovered &= self.pairs(run, seed, budget).await?;
        }
        Ok(all_recovered)
    }

    /// `--depth 2`: pairs of distinct single faults drawn from `seed`, one after another, until
    /// `budget` has passed.
    async fn pairs(&mut self, run: &Run<'_>, seed: u64, budget: Duration) -> Result<bool, Failure> {
        let singles = self.schedules();
        let mut dice = Dice::new(seed);
        let until = std::time::Instant::now() + budget;
        let mut all_recovered = true;
        let mut n = 0;
        while singles.len() >= 2
            && std::time::Instant::now() < until
            && !run.shutdown.is_cancelled()
        {
            let len = singles.len() as u64;
            let a = dice.below(len) as usize;
            let mut b = dice.below(len - 1) as usize;
            if b >= a {
                b += 1;
            }
            n += 1;
            if self.shard.is_some_and(|s| !s.takes(n - 1)) {
                continue;
            }
            let name = format!("pair-{n}-{}+{}", slug(&singles[a]), slug(&singles[b]));
            let pair = vec![singles[a].clone(), singles[b].clone()];
            let tried = self.kept_or_run(run, name, pair).await?;
            if self.config.progress {
                eprintln!("[pair {n}] {}: fired {}", tried.spec, tried.fault.fired);
            }
            all_recovered &= tried.recovered;
            let invalid = tried.invalid();
            self.tried.push(tried);
            if invalid && self.fail_fast {
                self.stopped_at = self.tried.last().map(|t| t.scenario.clone());
                break;
            }
        }
        Ok(all_recovered)
    }
}

impl Explore<'_> {
    /// The calm run: tried twice, then exit 4 if it could not run; with `--fail-fast`, judged
    /// as it ends, and the search stops if it is invalid.
    async fn calm_run(&mut self, run: &Run<'_>) -> Result<ScenarioOutcome, Failure> {
        let restarts_left = AtomicU32::new(OWN_EXIT_RESTARTS);
        let env = self.env(run, &restarts_left);
        let from = match self.fail_fast {
            true => Some(run.recorder.seal().await.map_err(Failure::run)?),
            false => None,
        };
        let calm = self.calm_name();
        let outcome = match run_or_not(&env, &calm, &[], Origin::Named).await {
            Ok((_, outcome)) => outcome,
            Err(e) => {
                crate::process::reaper::sweep(None).await;
                return Err(e.into());
            }
        };
        if let Some(why) = &outcome.could_not_run {
            return Err(Failure::Unavailable(anyhow::anyhow!(
                "the calm run could not run: {why}"
            )));
        }
        if let Some(from) = from {
            if self.judged(run, from, &calm).await? == RunVerdict::Invalid {
                self.stopped_at = Some(calm);
            }
        }
        Ok(outcome)
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

/// `--shard`, `--plan` and `--resume`: what the search is, its share of the list, and what an
/// earlier run of it completed.
impl Explore<'_> {
    /// The calm run's scenario name: `calm`, or one of each shard's own.
    pub fn calm_name(&self) -> String {
        self.shard
            .map_or_else(|| CALM.to_string(), |s| s.calm_name())
    }

    /// This shard's share of `schedules` (all of them unsharded), in their order.
    fn share(&self, schedules: Vec<Nemesis>) -> Vec<Nemesis> {
        schedules
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.shard.is_none_or(|s| s.takes(*i)))
            .map(|(_, f)| f)
            .collect()
    }

    /// A schedule an earlier run of the search completed (`--resume`).
    fn kept(&self, name: &str) -> Option<Tried> {
        self.earlier.done.get(name).map(|done| Tried {
            scenario: name.to_string(),
            spec: done.spec.clone(),
            fault: done.fault.clone(),
            recovered: done.recovered,
            judged: None,
            could_not_run: None,
        })
    }

    /// Schedule `name` as an earlier run completed it, else run now.
    async fn kept_or_run(
        &self,
        run: &Run<'_>,
        name: String,
        faults: Vec<Nemesis>,
    ) -> Result<Tried, Failure> {
        match self.kept(&name) {
            Some(kept) => Ok(kept),
            None => self.one(run, name, faults).await,
        }
    }

    /// A schedule whose fault did not fire, once more (`...-again`).
    async fn again(&self, run: &Run<'_>, fault: Nemesis) -> Result<Tried, Failure> {
        let again = format!("{}-again", slug(&fault));
        self.kept_or_run(run, again, vec![fault]).await
    }

    /// Before the calm run: the `--plan` list read, the search's mark, and with `--resume` what
    /// an earlier run of it completed, written as the first rows of this trace.
    fn begin(&mut self, metadata: &detail::RunConfig) -> Result<(), Failure> {
        let usage = |e: String| Failure::Usage(ConfigError::Search(e));
        if let Some(path) = &self.plan_file {
            self.planned = Some(read_plan(path).map_err(|e| usage(e.to_string()))?);
        }
        let settings = Settings {
            shown: &self.shown,
            env: &self.config.env,
            tasks: self.config.tasks,
            deadline: self.config.deadline,
            pause_for: self.pause_for,
            only: &self.only,
            pairs: self.pairs,
            shards: self.shard.map_or(1, |s| s.n),
            plan: self.planned.as_deref(),
        };
        self.mark = SearchMark {
            id: Some(search_id(&settings)),
            shard: self.shard.map(|s| s.to_string()),
            ..SearchMark::default()
        };
        if !self.resume {
            return Ok(());
        }
        let out = &self.config.out;
        let Some(path) = earlier_trace(out) else {
            eprintln!(
                "recorder: --resume: no earlier trace of {} found; the search starts from the beginning",
                out.display()
            );
            return Ok(());
        };
        self.earlier =
            load(&path, &self.mark, &self.calm_name()).map_err(|e| usage(e.to_string()))?;
        let run_json = serde_json::to_string(metadata).map_err(|e| Failure::run(e.into()))?;
        keep(out, &run_json, &self.earlier.rows).map_err(|e| Failure::run(e.into()))?;
        self.earlier.rows = Vec::new();
        eprintln!(
            "recorder: --resume: {} the calm run and {} schedule(s) completed in {}",
            if self.earlier.calm.is_some() {
                "kept"
            } else {
                "no"
            },
            self.earlier.done.len(),
            path.display()
        );
        Ok(())
    }

    /// After the calm run (or the one an earlier run completed): its shape kept, the digest of
    /// the list in the mark of every schedule, the list written for `--write-plan`.
    fn calm_kept(&mut self, outcome: ScenarioOutcome) -> Result<bool, Failure> {
        self.shape = outcome.shape.clone();
        let recovered = outcome.recovered;
        self.calm = Some(outcome);
        let listed: Vec<String> = self.schedules().iter().map(ToString::to_string).collect();
        self.mark.plan = Some(plan_digest(&listed));
        self.mark.schedules = Some(listed.len() as u64);
        if let Some(path) = &self.write_plan {
            write_plan(path, &listed).map_err(|e| Failure::run(e.into()))?;
        }
        Ok(recovered)
    }
}
