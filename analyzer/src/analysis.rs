//! From paths to a report: load every file, check every `(run_id, scenario)`, and combine the
//! verdicts. Everything here is data; `crate::output` renders it.

use std::path::PathBuf;

use crate::check::{check_all, Outcome, Verdict};
use crate::load::{FileError, LoadError, Loaded};
use outbox_trace::Figures;

/// The verdict on a scenario or on the whole check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunVerdict {
    /// Every invariant passed.
    Valid,
    /// No invariant failed, but at least one could not be decided.
    Unknown,
    /// At least one invariant failed.
    Invalid,
}

impl RunVerdict {
    /// `valid`, `invalid` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunVerdict::Valid => "valid",
            RunVerdict::Invalid => "invalid",
            RunVerdict::Unknown => "unknown",
        }
    }

    /// The combined verdict of invariant outcomes.
    pub fn of(outcomes: &[Outcome]) -> Self {
        outcomes
            .iter()
            .map(|o| match o.verdict {
                Verdict::Pass => RunVerdict::Valid,
                Verdict::Unknown => RunVerdict::Unknown,
                Verdict::Fail => RunVerdict::Invalid,
            })
            .max()
            .unwrap_or(RunVerdict::Valid)
    }
}

/// The checks of one `(run_id, scenario)`.
#[derive(Debug)]
pub struct ScenarioReport {
    /// Index into [`Loaded::histories`].
    pub history: usize,
    /// One outcome per invariant, in the contract's order.
    pub outcomes: Vec<Outcome>,
    /// The figures (one definition, shared with every other output).
    pub figures: Figures,
    /// The combined verdict.
    pub verdict: RunVerdict,
}

/// Everything `analyzer check` found.
#[derive(Debug)]
pub struct Report {
    /// The loaded files and histories.
    pub loaded: Loaded,
    /// One report per history, in the same order.
    pub scenarios: Vec<ScenarioReport>,
    /// The combined verdict over all scenarios.
    pub verdict: RunVerdict,
}

/// Loads `paths` whole (the model every view draws from) and checks every scenario. Fails on
/// the first file that breaks the contract.
pub fn analyse(paths: &[PathBuf]) -> Result<Report, FileError> {
    let mut loaded = Loaded::default();
    for path in paths {
        loaded.load(path)?;
    }
    let scenarios = check_loaded(&loaded, 0);
    Ok(Report::of(loaded, scenarios))
}

/// Checks `paths` as they stream, holding no rows but the witnesses of violations (see
/// `crate::stream`); a file whose runs are not in `seq` order is loaded whole instead. The same
/// rules decide as in [`analyse`], so the outcomes are the same.
pub fn check(paths: &[PathBuf]) -> Result<Report, FileError> {
    let mut loaded = Loaded::default();
    let mut scenarios = Vec::new();
    for path in paths {
        match crate::stream::check(&mut loaded, path, &mut scenarios) {
            Ok(()) => {}
            Err(LoadError::NotInSeqOrder) => {
                let first = loaded.histories.len();
                loaded.load(path)?;
                scenarios.extend(check_loaded(&loaded, first));
            }
            Err(error) => {
                return Err(FileError {
                    path: path.clone(),
                    error,
                })
            }
        }
    }
    Ok(Report::of(loaded, scenarios))
}

/// Checks the histories of `loaded` from `first` on.
fn check_loaded(loaded: &Loaded, first: usize) -> Vec<ScenarioReport> {
    loaded.histories[first..]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let outcomes = check_all(h, &loaded.names);
            ScenarioReport {
                history: first + i,
                verdict: RunVerdict::of(&outcomes),
                figures: crate::figures::of(h),
                outcomes,
            }
        })
        .collect()
}

impl Report {
    fn of(loaded: Loaded, scenarios: Vec<ScenarioReport>) -> Self {
        let verdict = scenarios
            .iter()
            .map(|s| s.verdict)
            .max()
            // Nothing to check is not a pass.
            .unwrap_or(RunVerdict::Unknown);
        Report {
            loaded,
            scenarios,
            verdict,
        }
    }
}
