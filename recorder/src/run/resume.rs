//! `recorder explore --resume`: what an earlier, interrupted run of the same search left on
//! `--out` is kept. The earlier trace is the newer of `<out>` and the last of the series
//! `<out-stem>.interrupted.parquet`, `...interrupted-2.parquet` (where the recording joins the
//! segments a killed run left before it starts). It must be the same search: the
//! `run_start.detail.search` of its scenarios names the same identity and shard, else the
//! resume is refused. A scenario is complete when it has a `run_end` that does not say it was
//! interrupted; the rows of every complete scenario are written as the first segment of the new
//! trace, so the joined trace holds each of them once, beside the schedules run now.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use outbox_trace::detail::{FaultTried, RunEnd, RunStart, SearchMark};
use outbox_trace::{Event, Step};

use crate::journal::output;
use crate::journal::writer::{parts_dir, segment_path};
use crate::system::scenario::ScenarioOutcome;

/// What an earlier run of the search completed.
#[derive(Debug, Default)]
pub struct Earlier {
    /// The trace it was read from.
    pub path: PathBuf,
    /// The calm run, when it completed.
    pub calm: Option<ScenarioOutcome>,
    /// Every complete schedule, by scenario name.
    pub done: BTreeMap<String, Done>,
    /// The rows of every complete scenario, in their order.
    pub rows: Vec<Event>,
}

/// A schedule an earlier run completed, as the table shows it.
#[derive(Debug, Clone)]
pub struct Done {
    /// Its faults, joined by ` + `.
    pub spec: String,
    /// The count of the fault that fired least (`run_end.detail.faults`).
    pub fault: FaultTried,
    /// `run_end.recovered`.
    pub recovered: bool,
}

/// Why a resume cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The earlier trace is of another search.
    #[error("--resume: {path} is not this search ({why}); give another --out, or leave out --resume to start over")]
    Other {
        /// The earlier trace.
        path: String,
        /// What differs.
        why: String,
    },
    /// The earlier trace cannot be read, or its rows cannot be kept.
    #[error("--resume: {path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        error: String,
    },
}

/// The newer of `<out>` and the last file of its `interrupted` series, if either exists.
pub fn earlier_trace(out: &Path) -> Option<PathBuf> {
    let mut last = None;
    for n in 1.. {
        let path = output::numbered(out, "interrupted", n);
        if !path.is_file() {
            break;
        }
        last = Some(path);
    }
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (out.is_file().then(|| out.to_path_buf()), last) {
        (Some(out), Some(series)) if modified(&series) > modified(&out) => Some(series),
        (Some(out), _) => Some(out),
        (None, series) => series,
    }
}

/// One scenario's rows, with its first `run_start` and last `run_end`.
#[derive(Default)]
struct Scenario {
    rows: Vec<Event>,
    start: Option<RunStart>,
    end: Option<RunEnd>,
}

/// Reads `path`, checks it is the search `mark` names, and keeps what it completed; `calm` is
/// the calm run's scenario name.
pub fn load(path: &Path, mark: &SearchMark, calm: &str) -> Result<Earlier, ResumeError> {
    let shown = path.display().to_string();
    let trace = outbox_trace::read_trace(path).map_err(|e| ResumeError::Io {
        path: shown.clone(),
        error: e.to_string(),
    })?;
    let mut scenarios: BTreeMap<(String, String), Scenario> = BTreeMap::new();
    let mut order = Vec::new();
    for event in trace.events {
        let key = (event.run_id.clone(), event.scenario.clone());
        let s = scenarios.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            Scenario::default()
        });
        match Step::try_from(&event) {
            Ok(Step::RunStart(d)) if s.start.is_none() => s.start = Some(d),
            Ok(Step::RunEnd(d)) => s.end = Some(d),
            _ => {}
        }
        s.rows.push(event);
    }
    same_search(
        &shown,
        mark,
        scenarios.values().filter_map(|s| s.start.as_ref()),
    )?;
    let mut earlier = Earlier {
        path: path.to_path_buf(),
        ..Earlier::default()
    };
    for key in order {
        let Some(s) = scenarios.remove(&key) else {
            continue;
        };
        let (Some(start), Some(end)) = (&s.start, &s.end) else {
            continue;
        };
        let name = key.1;
        // A schedule that was interrupted, or could not run, is run again.
        if end.interrupted()
            || end.could_not_run()
            || earlier.done.contains_key(&name)
            || (name == calm && earlier.calm.is_some())
        {
            continue;
        }
        if name == calm {
            earlier.calm = Some(ScenarioOutcome {
                recovered: end.recovered == Some(true),
                tried: end.faults.clone(),
                shape: end.shape.clone(),
                wire: end.wire.clone(),
                ..ScenarioOutcome::default()
            });
        } else if !start.searched.is_empty() {
            earlier.done.insert(name, done(start, end));
        } else {
            continue;
        }
        earlier.rows.extend(s.rows);
    }
    Ok(earlier)
}

/// Refuses a trace whose scenarios name another search, or none.
fn same_search<'a>(
    path: &str,
    mark: &SearchMark,
    starts: impl Iterator<Item = &'a RunStart>,
) -> Result<(), ResumeError> {
    let other = |why: String| ResumeError::Other {
        path: path.to_string(),
        why,
    };
    let mut seen = false;
    for found in starts.filter_map(|s| s.search.as_ref()) {
        seen = true;
        if found.id != mark.id {
            return Err(other("another system file or other options".into()));
        }
        if found.shard != mark.shard {
            let name = |s: &Option<String>| s.clone().unwrap_or_else(|| "unsharded".into());
            return Err(other(format!(
                "shard {}, this run is shard {}",
                name(&found.shard),
                name(&mark.shard)
            )));
        }
    }
    match seen {
        true => Ok(()),
        false => Err(other(
            "no scenario of it names a search of recorder explore".into(),
        )),
    }
}

/// The count of each of a schedule's faults `specs` in what its scenario recorded (`tried`),
/// and the one that fired least, which stands for the schedule.
pub fn least_fired(
    specs: impl IntoIterator<Item = String>,
    tried: &[outbox_trace::detail::FaultTried],
) -> (
    Vec<outbox_trace::detail::FaultTried>,
    outbox_trace::detail::FaultTried,
) {
    let counts: Vec<_> = specs
        .into_iter()
        .map(|spec| {
            tried
                .iter()
                .find(|t| t.spec == spec)
                .cloned()
                .unwrap_or_else(|| outbox_trace::detail::FaultTried {
                    spec,
                    why: Some("the scenario recorded no count of it".into()),
                    ..Default::default()
                })
        })
        .collect();
    let least = counts
        .iter()
        .min_by_key(|t| t.fired)
        .cloned()
        .unwrap_or_default();
    (counts, least)
}

/// A complete schedule as the table shows it: its faults' counts as its `run_end` gave them.
fn done(start: &RunStart, end: &RunEnd) -> Done {
    let (_, least) = least_fired(start.searched.iter().cloned(), &end.faults);
    Done {
        spec: start.searched.join(" + "),
        fault: least,
        recovered: end.recovered == Some(true),
    }
}

/// Writes the kept rows as the first segment of `out`'s new trace (`run_json` its metadata):
/// the join at the end puts them first, and a run killed again leaves them among its segments.
pub fn keep(out: &Path, run_json: &str, rows: &[Event]) -> Result<(), ResumeError> {
    let parts = parts_dir(out);
    let path = segment_path(&parts, 0);
    let io = |e: String| ResumeError::Io {
        path: path.display().to_string(),
        error: e,
    };
    if rows.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(&parts).map_err(|e| io(e.to_string()))?;
    let tmp = path.with_extension("tmp");
    let written = (|| -> Result<(), outbox_trace::TraceError> {
        let mut writer = outbox_trace::TraceWriter::create(&tmp, Some(run_json))?;
        writer.write(rows)?;
        writer.finish()?;
        Ok(())
    })();
    written.map_err(|e| io(e.to_string()))?;
    std::fs::rename(&tmp, &path).map_err(|e| io(e.to_string()))
}
