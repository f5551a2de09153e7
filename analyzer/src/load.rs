//! Loading trace files into compact histories: each file is streamed batch by batch through the
//! contract crate's validating reader, strings are interned, and rows are grouped by
//! `(run_id, scenario)`. Memory is one small [`Row`] per event of a known kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, PrimitiveArray, RecordBatch, StringArray};
use outbox_trace::{Kind, SeqCheck, TraceError, TraceFile};

use crate::history::{keeps_detail, History, Numbers, Row};
use crate::intern::{FastMap, Id, Interner, TooManyNames};

/// Why a file could not be loaded. Displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The contract reader rejected the file.
    #[error("{}", one_line(.0))]
    Trace(#[from] TraceError),
    /// A batch did not have the canonical types the reader promises.
    #[error("column `{0}` is not in the canonical type after normalisation")]
    Canonical(&'static str),
    /// Too many distinct strings to intern.
    #[error(transparent)]
    Names(#[from] TooManyNames),
}

/// A load error together with the file it concerns: `<path>: <reason>`, one line. The reason is
/// part of the message rather than a chained source, so `{:#}` does not repeat it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct FileError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub error: LoadError,
}

fn one_line(e: &TraceError) -> String {
    let text = match e {
        // The path is printed by `FileError`; keep only the operating system's reason.
        TraceError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

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
        let file = TraceFile::open(path)?;
        let info = file.info().clone();
        let file_index = self.files.len();
        let first_history = self.histories.len();
        let mut state = FileState {
            rows: info.rows,
            file: file_index,
            first_history,
            groups: FastMap::default(),
            last: None,
            seqs: SeqCheck::default(),
            unknown: BTreeMap::new(),
        };
        // Decoding (decompression, normalisation) runs on its own thread, one batch ahead of
        // the indexing here.
        let (names, histories) = (&mut self.names, &mut self.histories);
        std::thread::scope(|scope| -> Result<(), LoadError> {
            let (tx, rx) = std::sync::mpsc::sync_channel(2);
            scope.spawn(move || {
                for batch in file.batches() {
                    let failed = batch.is_err();
                    if tx.send(batch).is_err() || failed {
                        break;
                    }
                }
            });
            // On an early return `rx` is dropped, so the decoder stops at its next send.
            for batch in rx {
                state.batch(&batch?, names, histories)?;
            }
            Ok(())
        })?;
        state.seqs.finish()?;
        for h in &mut self.histories[first_history..] {
            h.sort();
        }
        let mut notes = Vec::new();
        if !info.version_declared {
            notes.push(FileNote::NoSchemaVersion);
        }
        if !info.extra_columns.is_empty() {
            notes.push(FileNote::ExtraColumns(info.extra_columns.clone()));
        }
        for (kind, rows) in state.unknown {
            notes.push(FileNote::UnknownKind { kind, rows });
        }
        self.files.push(LoadedFile {
            path: path.to_path_buf(),
            rows: info.rows,
            notes,
        });
        Ok(())
    }
}

/// Per-file loading state.
struct FileState {
    /// Rows in the file: the first history reserves room for all of them (most files hold one
    /// scenario, and pages never touched cost nothing).
    rows: u64,
    file: usize,
    first_history: usize,
    groups: FastMap<(Id, Id), usize>,
    /// The last `(run_id, scenario)` strings seen and their history: rows of one scenario come
    /// together, so most rows skip the map.
    last: Option<(String, String, usize)>,
    seqs: SeqCheck,
    unknown: BTreeMap<String, u64>,
}

fn strings<'a>(
    batch: &'a RecordBatch,
    i: usize,
    name: &'static str,
) -> Result<&'a StringArray, LoadError> {
    batch
        .column(i)
        .as_string_opt::<i32>()
        .ok_or(LoadError::Canonical(name))
}

fn numbers<'a, T: arrow_array::types::ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    i: usize,
    name: &'static str,
) -> Result<&'a PrimitiveArray<T>, LoadError> {
    batch
        .column(i)
        .as_primitive_opt::<T>()
        .ok_or(LoadError::Canonical(name))
}

fn opt<T: arrow_array::types::ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    i: usize,
) -> Option<T::Native> {
    a.is_valid(i).then(|| a.value(i))
}

/// Interns an optional string column value, reusing `last` (this column's previous row) when the
/// value repeats, as it mostly does: the rows of one event come close together.
fn intern_opt(
    names: &mut Interner,
    a: &StringArray,
    i: usize,
    last: &mut Option<(usize, Id)>,
) -> Result<Option<Id>, LoadError> {
    if !a.is_valid(i) {
        return Ok(None);
    }
    let value = a.value(i);
    if let Some((j, id)) = *last {
        if a.value(j) == value {
            *last = Some((i, id));
            return Ok(Some(id));
        }
    }
    let id = names.intern(value)?;
    *last = Some((i, id));
    Ok(Some(id))
}

impl FileState {
    fn batch(
        &mut self,
        batch: &RecordBatch,
        names: &mut Interner,
        histories: &mut Vec<History>,
    ) -> Result<(), LoadError> {
        // Column order is the contract's (see `outbox_trace::schema::COLUMNS`).
        let run = strings(batch, 0, "run_id")?;
        let scenario = strings(batch, 1, "scenario")?;
        let seq = numbers::<UInt64Type>(batch, 2, "seq")?;
        let backend = strings(batch, 4, "backend")?;
        let actor = strings(batch, 5, "actor")?;
        let inc = numbers::<UInt32Type>(batch, 6, "incarnation")?;
        let kind = strings(batch, 7, "kind")?;
        let task = strings(batch, 8, "task_id")?;
        let event = strings(batch, 9, "event_id")?;
        let agg = strings(batch, 10, "aggregate_id")?;
        let agg_seq = numbers::<UInt64Type>(batch, 11, "aggregate_seq")?;
        let attempt = numbers::<UInt32Type>(batch, 12, "attempt")?;
        let broker = numbers::<UInt64Type>(batch, 13, "broker_seq")?;
        let rev = numbers::<Int64Type>(batch, 14, "store_rev")?;
        let amount = numbers::<Int64Type>(batch, 15, "amount")?;
        let counter = numbers::<Int64Type>(batch, 16, "counter")?;
        let detail = strings(batch, 17, "detail")?;
        // Names repeat from row to row; remember each column's last one to skip most lookups.
        let mut last_actor: Option<(usize, Id)> = None;
        let (mut last_task, mut last_event, mut last_agg) = (None, None, None);
        for i in 0..batch.num_rows() {
            let run_name = run.value(i);
            self.seqs.push(run_name, seq.value(i));
            let kind_name = kind.value(i);
            let Ok(k) = kind_name.parse::<Kind>() else {
                *self.unknown.entry(kind_name.to_string()).or_default() += 1;
                continue;
            };
            let h = self.history(
                run_name,
                scenario.value(i),
                backend.value(i),
                names,
                histories,
            )?;
            let actor_id = match last_actor {
                Some((j, id)) if actor.value(j) == actor.value(i) => id,
                _ => {
                    let id = names.intern(actor.value(i))?;
                    last_actor = Some((i, id));
                    id
                }
            };
            let history = &mut histories[h];
            let backend_name = backend.value(i);
            if backend_name != names.name(history.backend) {
                let id = names.intern(backend_name)?;
                if !history.other_backends.contains(&id) {
                    history.other_backends.push(id);
                }
            }
            let mut row = Row::new(seq.value(i), k, actor_id, inc.value(i)).with_numbers(Numbers {
                aggregate_seq: opt(agg_seq, i),
                attempt: opt(attempt, i),
                broker_seq: opt(broker, i),
                store_rev: opt(rev, i),
                amount: opt(amount, i),
                counter: opt(counter, i),
            });
            row.task = intern_opt(names, task, i, &mut last_task)?;
            row.event = intern_opt(names, event, i, &mut last_event)?;
            row.aggregate = intern_opt(names, agg, i, &mut last_agg)?;
            if keeps_detail(k) && detail.is_valid(i) {
                row.detail = u32::try_from(history.details.len()).ok();
                history.details.push(detail.value(i).into());
            }
            for field in k.required_fields() {
                if !row.has(*field) {
                    *history.missing.entry((k, field.column())).or_default() += 1;
                }
            }
            history.rows.push(row);
        }
        Ok(())
    }

    fn history(
        &mut self,
        run: &str,
        scenario: &str,
        backend: &str,
        names: &mut Interner,
        histories: &mut Vec<History>,
    ) -> Result<usize, LoadError> {
        if let Some((r, s, h)) = &self.last {
            if r == run && s == scenario {
                return Ok(*h);
            }
        }
        let key = (names.intern(run)?, names.intern(scenario)?);
        let h = match self.groups.get(&key) {
            Some(&h) => h,
            None => {
                let h = histories.len();
                let backend = names.intern(backend)?;
                let mut history = History::new(self.file, key.0, key.1, backend);
                if h == self.first_history {
                    history
                        .rows
                        .reserve(usize::try_from(self.rows).unwrap_or(0));
                }
                histories.push(history);
                self.groups.insert(key, h);
                h
            }
        };
        debug_assert!(h >= self.first_history);
        self.last = Some((run.to_string(), scenario.to_string(), h));
        Ok(h)
    }
}
