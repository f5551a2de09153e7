//! Loading trace files into compact histories: each file is streamed batch by batch through the
//! contract crate's validating reader, strings are interned, and rows are grouped by
//! `(run_id, scenario)`. Memory is one small [`Row`](crate::model::row::Row) per event of a
//! known kind.
//!
//! Files: this one (what a load gives, and `read`, which drives the three stages), `error` (why
//! a file could not be loaded), `sink` (where the rows go), then the stages: `names` (the string
//! columns as ids), `build` (the rows built from the columns), `group` (each row handed to the
//! history of its `(run_id, scenario)`); `progress` draws a long read's line on a terminal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use outbox_trace::input::Encoding;
use outbox_trace::{ReadOptions, TraceError, TraceFile};

use crate::model::decode::{Ordered, Stages};
use crate::model::history::History;
use crate::model::intern::{FastMap, Id, Interner};

mod build;
mod error;
mod group;
mod names;
pub mod progress;
mod sink;

use build::{Built, Spent};
pub use error::{FileError, LoadError};
use group::{FileState, Groups};
use names::{Dictionaries, Expect, NAMED_COLUMNS, STRING_COLUMNS};
use sink::Keep;
pub(crate) use sink::Sink;

/// What the analyzer notes about a file it accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileNote {
    /// The file has no `outbox_trace.schema_version` key; it was read as version 1.
    NoSchemaVersion,
    /// Columns the contract does not define, ignored.
    ExtraColumns(Vec<String>),
    /// Rows of a kind the contract does not define, ignored.
    UnknownKind {
        /// The kind's name.
        kind: String,
        /// How many rows.
        rows: u64,
    },
}

/// A loaded file: its notes and its histories.
#[derive(Debug)]
pub struct LoadedFile {
    /// The path as given.
    pub path: PathBuf,
    /// Number of rows in the file.
    pub rows: u64,
    /// Notes about the file.
    pub notes: Vec<FileNote>,
    /// The recorder's configuration (`outbox_trace.run`), when the file carries one.
    pub run: Option<outbox_trace::detail::RunConfig>,
}

/// Everything loaded from the files given: the interner shared by all histories.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Names behind every [`Id`].
    pub names: Interner,
    /// The files, in the order given.
    pub files: Vec<LoadedFile>,
    /// One history per `(file, run_id, scenario)`, in order of first appearance.
    pub histories: Vec<History>,
}

impl Loaded {
    /// Loads `path` and appends its histories.
    pub fn load(&mut self, path: &Path) -> Result<(), FileError> {
        self.load_inner(path).map_err(|error| FileError {
            path: path.to_path_buf(),
            error,
        })
    }

    fn load_inner(&mut self, path: &Path) -> Result<(), LoadError> {
        let first_history = self.histories.len();
        let mut keep = Keep::default();
        let read = read(
            path,
            &mut self.names,
            &mut self.histories,
            self.files.len(),
            &mut keep,
        )?;
        for h in &mut self.histories[first_history..] {
            h.finish();
        }
        check_seqs(
            &self.histories[first_history..],
            keep.unknown_seqs,
            &self.names,
        )?;
        self.files.push(read.into_file(path));
        Ok(())
    }
}

/// What reading a file gave besides its rows.
pub(crate) struct FileRead {
    info: outbox_trace::FileInfo,
    /// Rows of unknown kinds, by kind.
    unknown: BTreeMap<String, u64>,
}

impl FileRead {
    /// The file's entry in [`Loaded::files`].
    pub(crate) fn into_file(self, path: &Path) -> LoadedFile {
        let info = self.info;
        let mut notes = Vec::new();
        if !info.version_declared {
            notes.push(FileNote::NoSchemaVersion);
        }
        if !info.extra_columns.is_empty() {
            notes.push(FileNote::ExtraColumns(info.extra_columns.clone()));
        }
        for (kind, rows) in self.unknown {
            notes.push(FileNote::UnknownKind { kind, rows });
        }
        LoadedFile {
            path: path.to_path_buf(),
            rows: info.rows,
            notes,
            run: info
                .run_json
                .as_deref()
                .and_then(outbox_trace::detail::RunConfig::parse),
        }
    }
}

/// Reads `path` (file number `file`), opening a history per `(run_id, scenario)` in
/// `histories` and handing every row to `sink`.
pub(crate) fn read(
    path: &Path,
    names: &mut Interner,
    histories: &mut Vec<History>,
    file: usize,
    sink: &mut impl Sink,
) -> Result<FileRead, LoadError> {
    let options = ReadOptions {
        dictionary: STRING_COLUMNS.to_vec(),
        skip: sink.skips().to_vec(),
        ..ReadOptions::default()
    };
    let trace = TraceFile::open_with(path, &options)?;
    let mut info = trace.info().clone();
    // JSON Lines stream in: their number of rows is known once read.
    let tally = trace.tally();
    let first_history = histories.len();
    // JSON Lines stream in: their number of rows is known only at their end.
    let known_rows = (info.encoding != Encoding::JsonLines).then_some(info.rows);
    let mut state = FileState {
        groups: Groups {
            rows: info.rows,
            file,
            first_history,
            reserve: sink.keeps_rows(),
            map: FastMap::default(),
            last: None,
        },
        unknown: BTreeMap::new(),
    };
    // Three stages, each a few batches ahead of the next: reading the string columns and
    // interning each new dictionary's values; reading the other columns and building the rows,
    // their strings named by id; and here the rows handed on in order. For a Parquet file each
    // is a thread of its own (see `decode`); any other input is read on one thread.
    let spent = Spent::default();
    let mut dictionaries = Dictionaries::default();
    let mut expect = Expect::new(names.len(), known_rows);
    let stages = Stages {
        first_columns: &NAMED_COLUMNS,
        first: |batch: &RecordBatch| {
            expect.batch(batch.num_rows(), dictionaries.fresh(batch), names);
            dictionaries.name(batch, names)
        },
        second: |batch, named| Built::of(batch, named, &spent),
    };
    std::thread::scope(|scope| -> Result<(), LoadError> {
        // On an early return the decoders stop at their next send.
        let mut meter = progress::Meter::new(path, known_rows);
        for built in Ordered::start(scope, path, trace, options, stages) {
            let built = built?;
            meter.add(built.rows.len() as u64);
            let rows = outbox_trace::guarded(|| Ok(state.batch(built, histories, sink)))??;
            spent.give(rows);
        }
        Ok(())
    })?;
    tally.fill(&mut info);
    for h in &mut histories[first_history..] {
        h.seq_from_clocks = info.seq_from_clocks;
    }
    Ok(FileRead {
        info,
        unknown: state.unknown,
    })
}

/// Fails if a run of one file repeats a `seq`: histories are sorted by then, so a run held by one
/// history needs a linear scan; a run spread over several scenarios, or with rows of unknown
/// kinds (`unknown_seqs`), is sorted as a whole.
fn check_seqs(
    histories: &[History],
    unknown_seqs: Vec<(Id, u64)>,
    names: &Interner,
) -> Result<(), LoadError> {
    let mut runs: BTreeMap<Id, Vec<&History>> = BTreeMap::new();
    for h in histories {
        runs.entry(h.run_id).or_default().push(h);
    }
    for (run, hs) in runs {
        let unknown = unknown_seqs.iter().filter(|(r, _)| *r == run);
        let repeated = if hs.len() == 1 && unknown.clone().next().is_none() {
            hs[0]
                .rows
                .windows(2)
                .find(|w| w[0].seq == w[1].seq)
                .map(|w| w[0].seq)
        } else {
            let mut seqs: Vec<u64> = hs
                .iter()
                .flat_map(|h| h.rows.iter().map(|r| r.seq))
                .chain(unknown.map(|(_, s)| *s))
                .collect();
            seqs.sort_unstable();
            seqs.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
        };
        if let Some(seq) = repeated {
            let run_id = names.name(run).to_string();
            return Err(TraceError::DuplicateSeq { run_id, seq }.into());
        }
    }
    Ok(())
}
