//! The search proper: the list of single-fault schedules (enumerated from the calm run's shape
//! and the wire it used, or `--plan`'s), run `--jobs` at a time with those that did not fire
//! tried once more, and with `--depth 2` the pairs drawn from a seed until the budget is spent.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use outbox_analyzer::check::RunVerdict;

use super::{Explore, Tried};
use crate::cli::exit::Failure;
use crate::fault::dice::Dice;
use crate::fault::duration::show_duration;
use crate::fault::schedules::{singles, slug, Space};
use crate::fault::spec::Nemesis;
use crate::run::recording::Run;

/// What running the list gave: each schedule by its place in the list, the one `--fail-fast`
/// stopped at, and how many did not start.
struct Ran {
    tried: Vec<(usize, Nemesis, Tried)>,
    stopped_at: Option<String>,
    not_run: usize,
}

impl Explore<'_> {
    /// The schedules the shape calls for (or `--plan` lists), in their fixed order.
    pub(super) fn schedules(&self) -> Vec<Nemesis> {
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
        let lossy = self.config.system.lossy();
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
    pub(super) async fn search(&mut self, run: &Run<'_>) -> Result<bool, Failure> {
        if self.stopped_at.is_some() {
            return Ok(true);
        }
        self.warn_jobs();
        let schedules = self.share(self.schedules());
        let Ran {
            mut tried,
            stopped_at,
            not_run,
        } = self.run_all(run, schedules).await?;
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

    /// Runs `schedules`, `jobs` at a time (those an earlier run completed kept as they were),
    /// until the last, `--fail-fast`'s first invalid one or a signal; those running then are
    /// waited for.
    async fn run_all(&self, run: &Run<'_>, schedules: Vec<Nemesis>) -> Result<Ran, Failure> {
        let total = schedules.len();
        let mut done = 0;
        let mut tried = Vec::with_capacity(total);
        let stop = AtomicBool::new(false);
        let stop = &stop;
        let mut runs = futures::stream::iter(schedules.into_iter().enumerate().map(|(i, f)| {
            let name = slug(&f);
            async move {
                if let Some(kept) = self.kept(&name) {
                    return (i, f, Some(Ok(kept)));
                }
                // Nothing starts after `--fail-fast` stopped the search or a signal ended it.
                if stop.load(Ordering::SeqCst) || run.shutdown.is_cancelled() {
                    return (i, f, None);
                }
                let result = self.one(run, name, vec![f.clone()]).await;
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
                show_progress(&result, (done, total), invalid, started);
            }
            // After a signal the schedules still running end as interrupted (each writes its
            // `run_end`), so they are waited for, not dropped.
            tried.push((i, fault, result));
        }
        Ok(Ran {
            tried,
            stopped_at,
            not_run,
        })
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

/// The progress line of a schedule that ended: `done` of `total`, the invalid ones so far, and
/// about how long the rest will take at the pace so far.
fn show_progress(result: &Tried, (done, total): (usize, usize), invalid: usize, started: Instant) {
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
