//! One `(run_id, scenario)` with its full events (timestamps and every `detail`), next to the
//! invariant outcomes `analyzer check` gives it. The diagram, report and comparison commands start
//! from here: [`Scenes::load`] reads each file once for the checks and once for the events.

use std::path::{Path, PathBuf};

use outbox_trace::{read_trace, Event, Kind, TraceError};

use crate::analysis::{analyse, Report, RunVerdict};
use crate::check::Outcome;
use crate::counts::Counts;
use crate::load::FileError;

/// Why scenes could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file breaks the contract (the checks' loader said so).
    #[error(transparent)]
    Check(#[from] FileError),
    /// The file could not be read as events.
    #[error("{path}: {source}")]
    Events {
        /// The file.
        path: PathBuf,
        /// The reader's reason.
        source: TraceError,
    },
}

/// One `(run_id, scenario)` of one file.
#[derive(Debug, Clone)]
pub struct Scene {
    /// Index of the file in the order given.
    pub file: usize,
    /// The file.
    pub path: PathBuf,
    /// `run_id`
    pub run_id: String,
    /// `scenario`
    pub scenario: String,
    /// `backend` of the first row.
    pub backend: String,
    /// The protocol variant, from `run_start.detail.protocol` or the file's run configuration.
    pub protocol: Option<String>,
    /// The events, sorted by `seq`.
    pub events: Vec<Event>,
    /// One outcome per invariant, in the contract's order.
    pub outcomes: Vec<Outcome>,
    /// The summary counts of `analyzer check`.
    pub counts: Counts,
    /// The combined verdict.
    pub verdict: RunVerdict,
}

impl Scene {
    /// `run_start.detail.ack_wait_ms`, if recorded.
    pub fn ack_wait_ms(&self) -> Option<i64> {
        self.last_detail(Kind::RunStart)
            .and_then(|d| d.get("ack_wait_ms").and_then(|v| v.as_i64()))
    }

    /// The parsed `detail` of the last row of `kind`.
    pub fn last_detail(&self, kind: Kind) -> Option<serde_json::Value> {
        self.events
            .iter()
            .rev()
            .find(|e| e.kind == kind)
            .map(Event::detail_json)
    }

    /// The event with this `seq`.
    pub fn by_seq(&self, seq: u64) -> Option<&Event> {
        self.events
            .binary_search_by_key(&seq, |e| e.seq)
            .ok()
            .map(|i| &self.events[i])
    }

    /// A short name: the scenario, prefixed by the file stem when several files are loaded.
    pub fn label(&self, with_file: bool) -> String {
        if with_file {
            format!("{}/{}", file_stem(&self.path), self.scenario)
        } else {
            self.scenario.clone()
        }
    }
}

/// The file name without directory and extension.
pub fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Every scene of the given files, plus the check report they came from.
#[derive(Debug)]
pub struct Scenes {
    /// Scenes in the order `analyzer check` reports them.
    pub scenes: Vec<Scene>,
    /// The check report (histories, violations as row indices).
    pub report: Report,
}

impl Scenes {
    /// Loads and checks `paths`, then reads their events.
    pub fn load(paths: &[PathBuf]) -> Result<Scenes, SceneError> {
        let report = analyse(paths)?;
        let mut events_of: Vec<Vec<Event>> = Vec::new();
        let mut protocols: Vec<Option<String>> = Vec::new();
        for path in paths {
            let trace = read_trace(path).map_err(|source| SceneError::Events {
                path: path.clone(),
                source,
            })?;
            let protocol = trace
                .info
                .run_json
                .as_deref()
                .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
                .and_then(|v| v.get("protocol").and_then(|p| p.as_str().map(String::from)));
            protocols.push(protocol);
            events_of.push(trace.events);
        }
        let names = &report.loaded.names;
        let mut scenes = Vec::with_capacity(report.scenarios.len());
        for s in &report.scenarios {
            let h = &report.loaded.histories[s.history];
            let (run_id, scenario) = (names.name(h.run_id), names.name(h.scenario));
            let mut events: Vec<Event> = events_of[h.file]
                .iter()
                .filter(|e| e.run_id == run_id && e.scenario == scenario)
                .cloned()
                .collect();
            events.sort_by_key(|e| e.seq);
            let protocol = events
                .iter()
                .find(|e| e.kind == Kind::RunStart)
                .and_then(|e| {
                    e.detail_json()
                        .get("protocol")
                        .and_then(|p| p.as_str().map(String::from))
                })
                .or_else(|| protocols[h.file].clone());
            scenes.push(Scene {
                file: h.file,
                path: paths[h.file].clone(),
                run_id: run_id.to_string(),
                scenario: scenario.to_string(),
                backend: names.name(h.backend).to_string(),
                protocol,
                events,
                outcomes: s.outcomes.clone(),
                counts: s.counts.clone(),
                verdict: s.verdict,
            });
        }
        Ok(Scenes { scenes, report })
    }

    /// The scenes of the named scenario (all when `None`).
    pub fn select(&self, scenario: Option<&str>) -> Vec<&Scene> {
        self.scenes
            .iter()
            .filter(|s| scenario.is_none_or(|want| s.scenario == want))
            .collect()
    }
}
