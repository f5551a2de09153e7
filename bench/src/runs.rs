//! Many checked recordings: the chaos campaign's, the detection part's and the system part's. Each
//! is a `recorder run` child checked by the analyzer's `check` ([`super::verdict`]), `--jobs` of
//! them at a time. What a recording showed is kept
//! as data (an [`Outcome`]: verdict, failing invariants, the windows and service faults that
//! fired, the figures and the observer's ground truth) and merged with the outcomes that
//! `results.json` already holds, keyed by setup, protocol and seed, so a long part can be run over
//! several sittings and its tables are made from every outcome on record.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Context as _;
use outbox_trace::{FigureRow, FigureTally, Figures, Kind, Step};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::recording::Bench;
use super::verdict::check;

/// One recording to make and check.
#[derive(Debug, Clone)]
pub struct Job {
    /// The setup's label (`etcd-jetstream`, `sqlite-redis`, `etcd-jetstream --cluster 3`).
    pub setup: String,
    /// The protocol variant's name.
    pub protocol: String,
    /// The chaos seed; with the setup and protocol it names the job's outcome.
    pub seed: u64,
    /// Tasks the run creates.
    pub tasks: u64,
    /// The trace's name under the bench's output directory.
    pub name: String,
    /// `recorder run`'s flags.
    pub flags: Vec<String>,
}

/// What one recording showed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// The setup's label.
    pub setup: String,
    /// The protocol variant's name.
    pub protocol: String,
    /// The chaos seed; with the setup and protocol it keys the outcome in `results.json`.
    pub seed: u64,
    /// Tasks the run was asked to create.
    pub tasks_asked: u64,
    /// `analyzer check`'s verdict.
    pub verdict: String,
    /// The ids of the invariants that failed.
    pub failed: Vec<String>,
    /// The crash points (a step's kill, `ROLE:after-KIND`, included) and service faults that fired.
    pub fired: BTreeSet<String>,
    /// Service restarts (`fault` rows).
    pub service_restarts: u64,
    /// The trace's figures.
    pub figures: Figures,
    /// Tasks the observer found done in the store at the end.
    pub tasks_done: Option<i64>,
    /// The recording's wall time, in seconds.
    pub wall_s: f64,
}

impl Outcome {
    /// The ground truth read back from the services says every asked task exists, is done, and
    /// has exactly one result and one dedup key.
    pub fn exactly_once(&self) -> bool {
        let asked = i64::try_from(self.tasks_asked).ok();
        let f = &self.figures;
        i64::try_from(f.tasks).ok() == asked
            && self.tasks_done == asked
            && f.results == asked
            && f.dedup_keys == asked
    }

    /// Asked tasks the store does not hold as done at the end.
    pub fn lost(&self) -> u64 {
        let done = self.tasks_done.unwrap_or(0).max(0) as u64;
        self.tasks_asked.saturating_sub(done)
    }

    fn key(&self) -> (String, String, u64) {
        (self.setup.clone(), self.protocol.clone(), self.seed)
    }
}

/// Makes and checks every job, `jobs` at a time, and returns their outcomes in the jobs' order.
/// A recording that fails to run is tried once more (parallel runs pick free ports that another
/// may take first) before the part fails.
pub fn run_all(bench: &Bench, part: &str, list: &[Job], jobs: u32) -> anyhow::Result<Vec<Outcome>> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let invalid = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let results: Mutex<Vec<Option<anyhow::Result<Outcome>>>> =
        Mutex::new(list.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = list.get(i) else { break };
                let outcome = one(bench, job).or_else(|_| one(bench, job));
                let failed = outcome.is_err();
                let found = outcome.as_ref().is_ok_and(|o| o.verdict == "invalid");
                let found =
                    invalid.fetch_add(usize::from(found), Ordering::Relaxed) + usize::from(found);
                results.lock().expect("results lock")[i] = Some(outcome);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                let left = started
                    .elapsed()
                    .mul_f64((list.len() - n) as f64 / n as f64)
                    .as_secs();
                // A progress line on a terminal; a log (not a terminal) gets none.
                if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                    eprintln!(
                        "bench: {part} {n}/{} {} · {found} invalid so far · about {}m {}s left",
                        list.len(),
                        job.name,
                        left / 60,
                        left % 60
                    );
                }
                if failed {
                    // Let the other threads finish what they hold; take no new job.
                    next.store(list.len(), Ordering::Relaxed);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
        .collect()
}

fn one(bench: &Bench, job: &Job) -> anyhow::Result<Outcome> {
    let flags: Vec<&str> = job.flags.iter().map(String::as_str).collect();
    let run = bench.record(&job.name, &flags, &[])?;
    let verdict = check(&run.trace)?;
    let read = Read::of(&run.trace)?;
    let mut failed = verdict.failed;
    failed.sort();
    failed.dedup();
    Ok(Outcome {
        setup: job.setup.clone(),
        protocol: job.protocol.clone(),
        seed: job.seed,
        tasks_asked: job.tasks,
        verdict: verdict.verdict,
        failed,
        fired: read.fired,
        service_restarts: read.service_restarts,
        figures: read.figures,
        tasks_done: read.tasks_done,
        wall_s: (run.finished.wall.as_secs_f64() * 100.0).round() / 100.0,
    })
}

/// What an outcome needs from a trace.
struct Read {
    fired: BTreeSet<String>,
    service_restarts: u64,
    figures: Figures,
    tasks_done: Option<i64>,
}

impl Read {
    fn of(path: &Path) -> anyhow::Result<Self> {
        let trace = outbox_trace::read_trace(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let mut tally: FigureTally<&str> = FigureTally::default();
        let mut fired = BTreeSet::new();
        let mut service_restarts = 0;
        let mut tasks_done = None;
        for e in &trace.events {
            tally.add(FigureRow::of(e));
            if !matches!(e.kind, Kind::Crash | Kind::Fault | Kind::Observed) {
                continue;
            }
            match Step::try_from(e) {
                Ok(Step::Crash { crash, .. }) => {
                    fired.insert(crash.point.into());
                }
                Ok(Step::Fault(fault)) => {
                    service_restarts += 1;
                    fired.insert(fault.fault.into());
                }
                Ok(Step::Observed(observed)) => {
                    tasks_done = observed.tasks_done.or(tasks_done);
                    tally.observe(&observed);
                }
                _ => {}
            }
        }
        Ok(Read {
            fired,
            service_restarts,
            figures: tally.figures(),
            tasks_done,
        })
    }
}

/// `fresh` outcomes over those a previous results.json holds under `part.runs` (a fresh outcome
/// replaces the stored one of the same setup, protocol and seed), sorted.
pub fn merge(previous: Option<&Value>, fresh: Vec<Outcome>) -> Vec<Outcome> {
    let stored: Vec<Outcome> = previous
        .and_then(|p| p.get("runs"))
        .and_then(|runs| serde_json::from_value(runs.clone()).ok())
        .unwrap_or_default();
    let mut all: std::collections::BTreeMap<(String, String, u64), Outcome> =
        stored.into_iter().map(|o| (o.key(), o)).collect();
    for o in fresh {
        all.insert(o.key(), o);
    }
    all.into_values().collect()
}

/// The blocks of 20 seeds the outcomes cover, as `(first, last)`: `1-20`, `21-40`, ...
pub fn seed_blocks(outcomes: &[Outcome]) -> Vec<(u64, u64)> {
    let blocks: BTreeSet<u64> = outcomes.iter().map(|o| (o.seed - 1) / 20).collect();
    blocks
        .into_iter()
        .map(|b| (b * 20 + 1, b * 20 + 20))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(setup: &str, seed: u64, verdict: &str) -> Outcome {
        Outcome {
            setup: setup.into(),
            protocol: "reference".into(),
            seed,
            tasks_asked: 10,
            verdict: verdict.into(),
            failed: Vec::new(),
            fired: BTreeSet::new(),
            service_restarts: 0,
            figures: Figures::default(),
            tasks_done: Some(10),
            wall_s: 1.0,
        }
    }

    #[test]
    fn fresh_outcomes_replace_stored_ones_of_the_same_run_and_keep_the_others() {
        let stored = serde_json::json!({
            "runs": [outcome("a", 1, "invalid"), outcome("a", 2, "valid")]
        });
        let merged = merge(
            Some(&stored),
            vec![outcome("a", 1, "valid"), outcome("b", 1, "valid")],
        );
        let seen: Vec<(&str, u64, &str)> = merged
            .iter()
            .map(|o| (o.setup.as_str(), o.seed, o.verdict.as_str()))
            .collect();
        assert_eq!(
            seen,
            [("a", 1, "valid"), ("a", 2, "valid"), ("b", 1, "valid")]
        );
        assert_eq!(merge(None, Vec::new()).len(), 0);
        assert_eq!(seed_blocks(&merged), [(1, 20)]);
        assert_eq!(
            seed_blocks(&[outcome("a", 20, "valid"), outcome("a", 21, "valid")]),
            [(1, 20), (21, 40)]
        );
    }

    #[test]
    fn exactly_once_needs_every_asked_task_done_with_one_result_and_one_key() {
        let mut o = outcome("a", 1, "valid");
        o.figures.tasks = 10;
        o.figures.results = Some(10);
        o.figures.dedup_keys = Some(10);
        assert!(o.exactly_once());
        assert_eq!(o.lost(), 0);
        o.figures.results = Some(11);
        assert!(!o.exactly_once());
        o.figures.results = Some(10);
        o.tasks_done = Some(9);
        assert!(!o.exactly_once());
        assert_eq!(o.lost(), 1);
    }
}
