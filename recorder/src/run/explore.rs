//! `recorder explore --system FILE` as a recording's [`Subject`]: a systematic search, no scenario
//! to write. Scenario `calm` (no fault) learns the shape of the system, and which roles' connections
//! to which services pass the recorder's proxy; then every single-fault schedule enumerated from
//! it ([`crate::fault::schedules`]) runs as a scenario of its own, named by its spec, `--jobs` at a
//! time, its fault recorded as searched (`run_start.detail.searched`). A schedule whose fault did
//! not fire (for a wire fault: did not act on traffic) runs once more (`...-again`); if it still
//! does not, it is not reached: reported, not judged. With `--depth 2`, pairs of single faults
//! drawn from a seed follow, until a time budget is spent. What each schedule tried is kept for
//! the table. After a signal no schedule starts, and those running end as interrupted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use outbox_trace::detail::{self, FaultTried, RoleShape};

use super::recording::{Opened, Run, Subject};
use crate::cli::exit::Failure;
use crate::fault::coverage::Origin;
use crate::fault::dice::Dice;
use crate::fault::duration::show_duration;
use crate::fault::schedules::{singles, slug, Space};
use crate::fault::spec::{Nemesis, WireFault};
use crate::journal::writer::{parts_dir, segment_path};
use crate::system::config::SystemConfig;
use crate::system::proxy::wire::Wire;
use crate::system::scenario::{run_or_not, ScenarioOutcome, SystemEnv, OWN_EXIT_RESTARTS};
use crate::system::tasks::UNREACHABLE_FOR;
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
        }
    }

    /// The schedules the shape calls for.
    fn schedules(&self) -> Vec<Nemesis> {
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
        let counts: Vec<FaultTried> = faults
            .iter()
            .map(|f| {
                let spec = f.to_string();
                outcome
                    .tried
                    .iter()
                    .find(|t| t.spec == spec)
                    .cloned()
                    .unwrap_or_else(|| FaultTried {
                        spec,
                        why: Some("the scenario recorded no count of it".into()),
                        ..FaultTried::default()
                    })
            })
            .collect();
        let least = counts
            .iter()
            .min_by_key(|t| t.fired)
            .cloned()
            .unwrap_or_default();
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
        let schedules = self.schedules();
        let total = schedules.len();
        let this = &*self;
        let mut done = 0;
        let mut tried = Vec::with_capacity(total);
        let stop = AtomicBool::new(false);
        let stop = &stop;
        let mut runs = futures::stream::iter(schedules.into_iter().enumerate().map(|(i, f)| {
            let name = slug(&f);
            async move {
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
                let again = format!("{}-again", slug(&fault));
                result = self.one(run, again, vec![fault]).await?;
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
            let name = format!("pair-{n}-{}+{}", slug(&singles[a]), slug(&singles[b]));
            let tried = self
                .one(run, name, vec![singles[a].clone(), singles[b].clone()])
                .await?;
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
        let outcome = match run_or_not(&env, CALM, &[], Origin::Named).await {
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
            if self.judged(run, from, CALM).await? == RunVerdict::Invalid {
                self.stopped_at = Some(CALM.to_string());
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
        let mut scenarios = vec![CALM.to_string()];
        if !self.shape_only {
            scenarios.push("schedules".to_string());
        }
        Ok(Opened {
            metadata: detail::RunConfig {
                backend: Some(backend.clone()),
                recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
                scenarios: vec![CALM.to_string()],
                ..detail::RunConfig::default()
            },
            backend,
            protocol: None,
            scenarios,
        })
    }

    async fn scenario(&mut self, run: &Run<'_>, index: usize) -> Result<bool, Failure> {
        if index > 0 {
            return self.search(run).await;
        }
        let outcome = self.calm_run(run).await?;
        self.shape = outcome.shape.clone();
        let recovered = outcome.recovered;
        self.calm = Some(outcome);
        Ok(recovered)
    }
}
