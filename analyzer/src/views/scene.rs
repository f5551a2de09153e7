//! One `(run_id, scenario)` as the views see it: the one model `analyzer check` built (the
//! history, its indices, its typed details), with the outcomes and figures the checks gave it.
//! The file is read once; every command, `check` included, starts from [`Scenes::load`].

use std::path::{Path, PathBuf};

use outbox_trace::{Detail, Figures, Kind};

use crate::check::Outcome;
use crate::check::{analyse, Report, RunVerdict};
use crate::model::history::History;
use crate::model::intern::{Id, Interner};
use crate::model::load::FileError;
use crate::model::row::Row;

/// One row of a scene, with the names behind its ids: what views read.
#[derive(Debug, Clone, Copy)]
pub struct RowRef<'a> {
    /// Index into the history's rows.
    pub at: usize,
    /// The compact row itself; the accessors below resolve its ids to names.
    pub row: &'a Row,
    h: &'a History,
    names: &'a Interner,
}

impl<'a> RowRef<'a> {
    /// The row's place in its run: every decision orders rows by it.
    pub fn seq(&self) -> u64 {
        self.row.seq
    }
    /// Nanoseconds since the run started: drawing only, no check reads it.
    pub fn ts_ns(&self) -> i64 {
        self.row.ts_ns
    }
    /// What happened.
    pub fn kind(&self) -> Kind {
        self.row.kind
    }
    /// Who recorded the row, by name.
    pub fn actor(&self) -> &'a str {
        self.names.name(self.row.actor)
    }
    /// Which life of the actor recorded it.
    pub fn incarnation(&self) -> u32 {
        self.row.incarnation
    }
    /// The task it concerns, by name, if it carries one.
    pub fn task_id(&self) -> Option<&'a str> {
        self.names.name_opt(self.row.task)
    }
    /// The event it concerns, by name, if it carries one.
    pub fn event_id(&self) -> Option<&'a str> {
        self.names.name_opt(self.row.event)
    }
    /// The aggregate of its event, by name, if it carries one.
    pub fn aggregate_id(&self) -> Option<&'a str> {
        self.names.name_opt(self.row.aggregate)
    }
    /// The typed `detail`, for the kinds whose detail the analyzer keeps.
    pub fn detail(&self) -> Option<&'a Detail> {
        self.h.detail(self.row)
    }
    /// The crash point of a `crash` row (`?` when it names none).
    pub fn crash_point(&self) -> &'a str {
        match self.detail().and_then(Detail::crash) {
            Some(c) if !c.point.as_str().is_empty() => c.point.as_str(),
            _ => "?",
        }
    }
    /// The fault of a `fault` row (`?` when it names none).
    pub fn fault_name(&self) -> &'a str {
        match self.detail().and_then(Detail::fault) {
            Some(f) if !f.fault.as_str().is_empty() => f.fault.as_str(),
            _ => "?",
        }
    }
}

/// One `(run_id, scenario)` of one file: a cheap, copyable view into [`Scenes`].
#[derive(Debug, Clone, Copy)]
pub struct Scene<'a> {
    /// Position in [`Scenes::scenes`] (the order `analyzer check` reports).
    pub index: usize,
    /// Index of the file in the order given.
    pub file: usize,
    /// The file it was read from, as given (views name runs by its stem).
    pub path: &'a Path,
    /// The run it belongs to (runs are compared and named by it when a file holds several).
    pub run_id: &'a str,
    /// The scenario it records: what `--scenario` selects.
    pub scenario: &'a str,
    /// `backend` of the first row.
    pub backend: &'a str,
    /// The protocol variant, from `run_start.detail.protocol` or the file's run configuration.
    pub protocol: Option<&'a str>,
    /// The model: rows sorted by `seq`, typed details, indices.
    pub history: &'a History,
    /// The names behind every id.
    pub names: &'a Interner,
    /// One outcome per invariant, in the contract's order.
    pub outcomes: &'a [Outcome],
    /// The figures `analyzer check` reports, counted once while loading.
    pub figures: &'a Figures,
    /// The combined verdict over [`Scene::outcomes`], which views headline.
    pub verdict: RunVerdict,
}

impl<'a> Scene<'a> {
    /// The row at index `at`.
    pub fn row(&self, at: usize) -> RowRef<'a> {
        RowRef {
            at,
            row: &self.history.rows[at],
            h: self.history,
            names: self.names,
        }
    }

    /// Every row, in `seq` order.
    pub fn rows(&self) -> impl DoubleEndedIterator<Item = RowRef<'a>> + ExactSizeIterator + 'a {
        let (h, names) = (self.history, self.names);
        h.rows
            .iter()
            .enumerate()
            .map(move |(at, row)| RowRef { at, row, h, names })
    }

    /// The rows of `kind`, in `seq` order.
    pub fn of(&self, kind: Kind) -> impl DoubleEndedIterator<Item = RowRef<'a>> + 'a {
        let (h, names) = (self.history, self.names);
        h.of(kind)
            .map(move |(at, row)| RowRef { at, row, h, names })
    }

    /// The rows at these indices.
    pub fn at(&self, rows: &[u32]) -> Vec<RowRef<'a>> {
        rows.iter().map(|&at| self.row(at as usize)).collect()
    }

    /// The row with this `seq`.
    pub fn by_seq(&self, seq: u64) -> Option<RowRef<'a>> {
        let at = self
            .history
            .rows
            .binary_search_by_key(&seq, |r| r.seq)
            .ok()?;
        Some(self.row(at))
    }

    /// The id of a name, if any row of any scene uses it.
    pub fn id(&self, name: &str) -> Option<Id> {
        self.names.get(name)
    }

    /// `run_start.detail.ack_wait_ms`, if recorded.
    pub fn ack_wait_ms(&self) -> Option<i64> {
        self.history.run_start().and_then(|d| d.ack_wait_ms)
    }

    /// `run_end.detail.recovered`, if recorded as a boolean.
    pub fn recovered(&self) -> Option<bool> {
        self.history.run_end().and_then(|(_, end)| end?.recovered)
    }

    /// A short name: the scenario, prefixed by the file stem when several files are loaded.
    pub fn label(&self, with_file: bool) -> String {
        if with_file {
            format!("{}/{}", file_stem(self.path), self.scenario)
        } else {
            self.scenario.to_string()
        }
    }
}

/// The file name without directory and extension.
pub fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Every scene of the given files: the check report and the paths it came from.
#[derive(Debug)]
pub struct Scenes {
    /// The check report (the model of every scenario, outcomes, figures).
    pub report: Report,
    /// The files, in the order given.
    pub paths: Vec<PathBuf>,
}

impl Scenes {
    /// Loads and checks `paths`: each file is read once.
    pub fn load(paths: &[PathBuf]) -> Result<Scenes, FileError> {
        Ok(Scenes {
            report: analyse(paths)?,
            paths: paths.to_vec(),
        })
    }

    /// How many scenes there are.
    pub fn len(&self) -> usize {
        self.report.scenarios.len()
    }

    /// Whether there is no scene.
    pub fn is_empty(&self) -> bool {
        self.report.scenarios.is_empty()
    }

    /// Scene `i`, in the order `analyzer check` reports them.
    pub fn scene(&self, i: usize) -> Scene<'_> {
        let s = &self.report.scenarios[i];
        let loaded = &self.report.loaded;
        let h = &loaded.histories[s.history];
        let names = &loaded.names;
        let file = &loaded.files[h.file];
        let protocol = h
            .run_start()
            .and_then(|d| d.protocol.as_deref())
            .or_else(|| file.run.as_ref().and_then(|r| r.protocol.as_deref()));
        Scene {
            index: i,
            file: h.file,
            path: &file.path,
            run_id: names.name(h.run_id),
            scenario: names.name(h.scenario),
            backend: names.name(h.backend),
            protocol,
            history: h,
            names,
            outcomes: &s.outcomes,
            figures: &s.figures,
            verdict: s.verdict,
        }
    }

    /// Every scene, in the order `analyzer check` reports them.
    pub fn scenes(&self) -> impl ExactSizeIterator<Item = Scene<'_>> + '_ {
        (0..self.len()).map(|i| self.scene(i))
    }

    /// The scenes of the named scenario (all when `None`).
    pub fn select(&self, scenario: Option<&str>) -> Vec<Scene<'_>> {
        self.scenes()
            .filter(|s| scenario.is_none_or(|want| s.scenario == want))
            .collect()
    }
}

/// The actor's role: its name without a `-N` suffix.
pub fn role(actor: &str) -> &str {
    match actor.rsplit_once('-') {
        Some((base, n)) if n.chars().all(|c| c.is_ascii_digit()) => base,
        _ => actor,
    }
}
