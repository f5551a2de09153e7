//! From paths to a report: load every file, check every `(run_id, scenario)`, and combine the
//! verdicts. Everything here is data; `crate::explain` renders it.

use std::path::PathBuf;

use super::coverage::Coverage;
use super::memory::check_all;
use super::report::{Report, ScenarioReport};
use crate::model::load::{FileError, LoadError, Loaded};

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
/// `crate::check::streamed`); a file whose runs are not in `seq` order is loaded whole instead. The same
/// rules decide as in [`analyse`], so the outcomes are the same.
pub fn check_paths(paths: &[PathBuf]) -> Result<Report, FileError> {
    let mut loaded = Loaded::default();
    let mut scenarios = Vec::new();
    for path in paths {
        match crate::check::streamed::check(&mut loaded, path, &mut scenarios) {
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
            let (outcomes, figures) = check_all(h, &loaded.names);
            let coverage = Coverage::of(h.run_start(), h.run_end().and_then(|(_, end)| end));
            ScenarioReport::new(first + i, outcomes, figures, coverage)
        })
        .collect()
}
