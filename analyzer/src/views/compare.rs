//! `analyzer compare`: runs side by side. A column per run and scenario, a row per measure
//! (invariant verdicts, counts, counter, duration, accepted-to-committed latency), a difference
//! column for two runs, and the figures tied to a failing invariant marked. Runs compare on the
//! scenarios they share, and the comparison says which ones they do not share.

use std::collections::BTreeSet;

use outbox_trace::Kind;
use serde::Serialize;

use crate::check::{Invariant, Verdict};
use crate::model::intern::IdTable;
use crate::views::scene::{file_stem, Scene};

/// Why nothing could be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// The runs have no scenario in common.
    #[error("the runs share no scenario ({0})")]
    NothingShared(String),
}

/// One numeric measure of a column, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// Accepted tasks.
    Tasks,
    /// Publish attempts by the relay.
    PublishAttempts,
    /// Copies the broker holds.
    StreamCopies,
    /// First deliveries.
    Deliveries,
    /// Deliveries again.
    Redeliveries,
    /// Deliveries the dedup key absorbed.
    Suppressions,
    /// Committed effects.
    Effects,
    /// Consumer ACKs.
    Acks,
    /// The observed counter.
    Counter,
    /// From the first row to the last.
    DurationMs,
    /// Median accepted-to-committed latency.
    LatencyP50Ms,
    /// 99th percentile of the same.
    LatencyP99Ms,
    /// The slowest task.
    LatencyMaxMs,
}

impl Measure {
    /// Every measure, in table order.
    pub const ALL: &'static [Measure] = &[
        Measure::Tasks,
        Measure::PublishAttempts,
        Measure::StreamCopies,
        Measure::Deliveries,
        Measure::Redeliveries,
        Measure::Suppressions,
        Measure::Effects,
        Measure::Acks,
        Measure::Counter,
        Measure::DurationMs,
        Measure::LatencyP50Ms,
        Measure::LatencyP99Ms,
        Measure::LatencyMaxMs,
    ];

    /// The counts, summed over scenarios in the picture.
    pub const COUNTS: &'static [Measure] = &[
        Measure::Tasks,
        Measure::PublishAttempts,
        Measure::StreamCopies,
        Measure::Deliveries,
        Measure::Redeliveries,
        Measure::Suppressions,
        Measure::Effects,
        Measure::Acks,
        Measure::Counter,
    ];

    /// The latencies, the worst scenario's in the picture.
    pub const LATENCIES: &'static [Measure] = &[
        Measure::LatencyP50Ms,
        Measure::LatencyP99Ms,
        Measure::LatencyMaxMs,
    ];

    /// The row label of the table and the name in JSON.
    pub fn label(self) -> &'static str {
        match self {
            Measure::Tasks => "tasks",
            Measure::PublishAttempts => "publish attempts",
            Measure::StreamCopies => "stream copies",
            Measure::Deliveries => "deliveries",
            Measure::Redeliveries => "redeliveries",
            Measure::Suppressions => "suppressions",
            Measure::Effects => "effects",
            Measure::Acks => "ACKs",
            Measure::Counter => "counter",
            Measure::DurationMs => "duration ms",
            Measure::LatencyP50Ms => "latency p50 ms",
            Measure::LatencyP99Ms => "latency p99 ms",
            Measure::LatencyMaxMs => "latency max ms",
        }
    }
}

impl Serialize for Measure {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

/// The figures of one column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Measures {
    /// Verdict per invariant, in the contract's order (JSON: `[id, verdict]` pairs).
    #[serde(serialize_with = "verdict_pairs")]
    pub verdicts: Vec<(Invariant, Verdict)>,
    /// Every measure, in [`Measure::ALL`] order; `None` when not recorded.
    pub numbers: Vec<(Measure, Option<i64>)>,
    /// Measures tied to a failing invariant.
    pub failing: Vec<Measure>,
}

impl Measures {
    /// The value of `m`, if recorded.
    pub fn number(&self, m: Measure) -> Option<i64> {
        self.numbers
            .iter()
            .find(|(n, _)| *n == m)
            .and_then(|(_, v)| *v)
    }

    /// The verdict on `inv`, if it was checked.
    pub fn verdict(&self, inv: Invariant) -> Option<Verdict> {
        self.verdicts
            .iter()
            .find(|(i, _)| *i == inv)
            .map(|(_, v)| *v)
    }
}

/// `[id, verdict]` pairs: the JSON of [`Measures::verdicts`].
fn verdict_pairs<S: serde::Serializer>(
    v: &[(Invariant, Verdict)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|(i, v)| (i.id(), v.as_str())))
}

/// `tied`, from the `tied` column of the invariant table.
macro_rules! tied_measures {
    ($($variant:ident [$($measure:ident),*])+) => {
        /// The measures a failing invariant puts in doubt.
        fn tied(inv: Invariant) -> &'static [Measure] {
            match inv {
                $(Invariant::$variant => &[$(Measure::$measure),*],)+
            }
        }
    };
}

crate::check::invariant::invariants!(tied tied_measures);

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[i64], p: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// Milliseconds from each task's acceptance to its first committed effect, sorted.
pub fn latencies(scene: &Scene) -> Vec<i64> {
    let mut committed = IdTable::new(scene.history.id_bound(), None);
    for c in scene.of(Kind::EffectCommitted) {
        if let Some(t) = c.row.task {
            committed.get_mut(t).get_or_insert(c.ts_ns());
        }
    }
    let mut out: Vec<i64> = scene
        .of(Kind::TaskAccepted)
        .filter_map(|a| {
            let c = (*committed.get(a.row.task?))?;
            Some((c - a.ts_ns()) / 1_000_000)
        })
        .collect();
    out.sort_unstable();
    out
}

/// The measures of one scene.
pub fn measures(scene: &Scene) -> Measures {
    let c = scene.figures;
    let lat = latencies(scene);
    let rows = &scene.history.rows;
    let first = rows.first().map_or(0, |e| e.ts_ns);
    let last = rows.last().map_or(0, |e| e.ts_ns);
    let n = |v: u64| Some(v as i64);
    let numbers = Measure::ALL
        .iter()
        .map(|&m| {
            let v = match m {
                Measure::Tasks => n(c.tasks),
                Measure::PublishAttempts => n(c.publish_attempts),
                Measure::StreamCopies => n(c.stream_copies),
                Measure::Deliveries => n(c.deliveries),
                Measure::Redeliveries => n(c.redeliveries),
                Measure::Suppressions => n(c.suppressions),
                Measure::Effects => n(c.effects),
                Measure::Acks => n(c.acks),
                Measure::Counter => c.counter,
                Measure::DurationMs => Some((last - first) / 1_000_000),
                Measure::LatencyP50Ms => percentile(&lat, 50),
                Measure::LatencyP99Ms => percentile(&lat, 99),
                Measure::LatencyMaxMs => lat.last().copied(),
            };
            (m, v)
        })
        .collect();
    let failing: BTreeSet<Measure> = scene
        .outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .flat_map(|o| tied(o.invariant).iter().copied())
        .collect();
    Measures {
        verdicts: scene
            .outcomes
            .iter()
            .map(|o| (o.invariant, o.verdict))
            .collect(),
        numbers,
        // By name, as the JSON has always listed them.
        failing: {
            let mut failing: Vec<Measure> = failing.into_iter().collect();
            failing.sort_by_key(|m| m.label());
            failing
        },
    }
}

/// One column: a run's scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Column {
    /// The run's name (file stem, and run id when a file holds several).
    pub run: String,
    /// The backend that ran it: columns of different backends compare implementations.
    pub backend: String,
    /// The protocol variant, when recorded: what the column header names the run by.
    pub protocol: Option<String>,
    /// Its verdicts and measures, in the same order in every column.
    pub measures: Measures,
}

/// One shared scenario across the runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shared {
    /// The scenario name every run has (runs compare scenario by scenario).
    pub scenario: String,
    /// One column per run, in the order given.
    pub columns: Vec<Column>,
}

/// The whole comparison: what `analyzer compare` prints as a table, a picture or JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// The runs, in the order given.
    pub runs: Vec<String>,
    /// Scenarios every run has.
    pub shared: Vec<Shared>,
    /// Scenarios only some runs have: `(scenario, runs that have it)`.
    pub not_shared: Vec<(String, Vec<String>)>,
}

/// A run: one `(file, run_id)`.
fn run_name(scene: &Scene, several_runs: bool) -> String {
    if several_runs {
        format!("{}:{}", file_stem(scene.path), scene.run_id)
    } else {
        file_stem(scene.path)
    }
}

/// Compares the runs in `scenes` (a run is a file, or a run id when a file holds several).
pub fn compare(scenes: &[Scene], scenario: Option<&str>) -> Result<Comparison, CompareError> {
    let several = {
        let mut ids: Vec<(usize, &str)> = scenes.iter().map(|s| (s.file, s.run_id)).collect();
        ids.sort_unstable();
        ids.dedup();
        let files: BTreeSet<usize> = ids.iter().map(|(f, _)| *f).collect();
        ids.len() > files.len()
    };
    let mut runs: Vec<String> = Vec::new();
    for s in scenes {
        let r = run_name(s, several);
        if !runs.contains(&r) {
            runs.push(r);
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for s in scenes {
        if scenario.is_none_or(|w| w == s.scenario) && !names.contains(&s.scenario) {
            names.push(s.scenario);
        }
    }
    let mut shared = Vec::new();
    let mut not_shared = Vec::new();
    for name in names {
        let columns: Vec<Column> = runs
            .iter()
            .filter_map(|r| {
                scenes
                    .iter()
                    .find(|s| s.scenario == name && run_name(s, several) == *r)
                    .map(|s| Column {
                        run: r.clone(),
                        backend: s.backend.to_string(),
                        protocol: s.protocol.map(String::from),
                        measures: measures(s),
                    })
            })
            .collect();
        if columns.len() == runs.len() {
            shared.push(Shared {
                scenario: name.to_string(),
                columns,
            });
        } else {
            not_shared.push((
                name.to_string(),
                columns.into_iter().map(|c| c.run).collect(),
            ));
        }
    }
    if shared.is_empty() {
        return Err(CompareError::NothingShared(runs.join(", ")));
    }
    Ok(Comparison {
        runs,
        shared,
        not_shared,
    })
}
