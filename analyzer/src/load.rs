//! Loading trace files into compact histories: each file is streamed batch by batch through the
//! contract crate's validating reader, strings are interned, and rows are grouped by
//! `(run_id, scenario)`. Memory is one small [`Row`] per event of a known kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::types::{Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
use outbox_trace::{Kind, SeqCheck, TraceError, TraceFile};

use crate::history::{keeps_detail, History, Numbers, Row};
use crate::intern::{FastMap, Id, InternError, Interner};

/// Why a file could not be loaded. Displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The contract reader rejected the file.
    #[error("{}", one_line(.0))]
    Trace(#[from] TraceError),
    /// A batch did not have the canonical types the reader promises.
    #[error("column `{0}` is not in the canonical type after normalisation")]
    Canonical(&'static str),
    /// A string could not be interned.
    #[error(transparent)]
    Names(#[from] InternError),
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
            last_run: String::new(),
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
            h.finish();
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
    /// The last `(run_id, scenario)` seen and their history: rows of one scenario come
    /// together, so most rows skip the map.
    last: Option<(Vec<u8>, Vec<u8>, usize)>,
    /// The `run_id` of `last`, as text for [`SeqCheck`].
    last_run: String,
    seqs: SeqCheck,
    unknown: BTreeMap<String, u64>,
}

/// A string column of a batch, read without per-value checks: offsets and bytes are taken once.
struct Text<'a> {
    offsets: &'a [i32],
    data: &'a [u8],
    nulls: Option<&'a NullBuffer>,
}

impl<'a> Text<'a> {
    fn of(batch: &'a RecordBatch, i: usize, name: &'static str) -> Result<Self, LoadError> {
        let a = batch
            .column(i)
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical(name))?;
        Ok(Text {
            offsets: a.value_offsets(),
            data: a.value_data(),
            nulls: a.nulls(),
        })
    }

    /// The bytes of row `i` (empty if the offsets were out of range, which Arrow rules out).
    #[inline]
    fn get(&self, i: usize) -> &'a [u8] {
        let at = |j: usize| self.offsets.get(j).map_or(0, |&o| o.max(0) as usize);
        self.data.get(at(i)..at(i + 1)).unwrap_or(&[])
    }

    #[inline]
    fn opt(&self, i: usize) -> Option<&'a [u8]> {
        self.nulls
            .is_none_or(|n| n.is_valid(i))
            .then(|| self.get(i))
    }
}

/// A numeric column of a batch, read as a slice.
struct Nums<'a, T: ArrowPrimitiveType> {
    values: &'a [T::Native],
    nulls: Option<&'a NullBuffer>,
}

impl<'a, T: ArrowPrimitiveType> Nums<'a, T> {
    fn of(batch: &'a RecordBatch, i: usize, name: &'static str) -> Result<Self, LoadError> {
        let a = batch
            .column(i)
            .as_primitive_opt::<T>()
            .ok_or(LoadError::Canonical(name))?;
        Ok(Nums {
            values: a.values(),
            nulls: a.nulls(),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> T::Native {
        self.values.get(i).copied().unwrap_or_default()
    }

    #[inline]
    fn opt(&self, i: usize) -> Option<T::Native> {
        self.nulls
            .is_none_or(|n| n.is_valid(i))
            .then(|| self.get(i))
    }
}

/// Interns an optional string value, reusing `last` (this column's previous value) when it
/// repeats, as it mostly does: the rows of one event come close together.
#[inline]
fn intern_opt<'a>(
    names: &mut Interner,
    value: Option<&'a [u8]>,
    last: &mut Option<(&'a [u8], Id)>,
) -> Result<Option<Id>, LoadError> {
    let Some(value) = value else { return Ok(None) };
    if let Some((prev, id)) = *last {
        if prev == value {
            return Ok(Some(id));
        }
    }
    let id = names.intern_bytes(value)?;
    *last = Some((value, id));
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
        let run = Text::of(batch, 0, "run_id")?;
        let scenario = Text::of(batch, 1, "scenario")?;
        let seq = Nums::<UInt64Type>::of(batch, 2, "seq")?;
        let backend = Text::of(batch, 4, "backend")?;
        let actor = Text::of(batch, 5, "actor")?;
        let inc = Nums::<UInt32Type>::of(batch, 6, "incarnation")?;
        let kind = Text::of(batch, 7, "kind")?;
        let task = Text::of(batch, 8, "task_id")?;
        let event = Text::of(batch, 9, "event_id")?;
        let agg = Text::of(batch, 10, "aggregate_id")?;
        let agg_seq = Nums::<UInt64Type>::of(batch, 11, "aggregate_seq")?;
        let attempt = Nums::<UInt32Type>::of(batch, 12, "attempt")?;
        let broker = Nums::<UInt64Type>::of(batch, 13, "broker_seq")?;
        let rev = Nums::<Int64Type>::of(batch, 14, "store_rev")?;
        let amount = Nums::<Int64Type>::of(batch, 15, "amount")?;
        let counter = Nums::<Int64Type>::of(batch, 16, "counter")?;
        let detail = Text::of(batch, 17, "detail")?;
        // Names repeat from row to row; remember each column's last one to skip most lookups.
        let (mut last_actor, mut last_task, mut last_event, mut last_agg) =
            (None, None, None, None);
        let mut last_kind: Option<(&[u8], Kind)> = None;
        for i in 0..batch.num_rows() {
            let kind_bytes = kind.get(i);
            let k = match last_kind {
                Some((prev, k)) if prev == kind_bytes => k,
                _ => match std::str::from_utf8(kind_bytes)
                    .ok()
                    .and_then(|s| s.parse().ok())
                {
                    Some(k) => {
                        last_kind = Some((kind_bytes, k));
                        k
                    }
                    None => {
                        let name = String::from_utf8_lossy(kind_bytes).into_owned();
                        *self.unknown.entry(name).or_default() += 1;
                        // Its seq still counts: a run must not repeat one.
                        self.seqs
                            .push(&String::from_utf8_lossy(run.get(i)), seq.get(i));
                        continue;
                    }
                },
            };
            let h = self.history(
                run.get(i),
                scenario.get(i),
                backend.get(i),
                names,
                histories,
            )?;
            self.seqs.push(&self.last_run, seq.get(i));
            let actor_id = intern_opt(names, Some(actor.get(i)), &mut last_actor)?
                .ok_or(LoadError::Canonical("actor"))?;
            let history = &mut histories[h];
            let backend_name = backend.get(i);
            if backend_name != names.bytes(history.backend) {
                let id = names.intern_bytes(backend_name)?;
                if !history.other_backends.contains(&id) {
                    history.other_backends.push(id);
                }
            }
            let mut row = Row::new(seq.get(i), k, actor_id, inc.get(i)).with_numbers(Numbers {
                aggregate_seq: agg_seq.opt(i),
                attempt: attempt.opt(i),
                broker_seq: broker.opt(i),
                store_rev: rev.opt(i),
                amount: amount.opt(i),
                counter: counter.opt(i),
            });
            row.task = intern_opt(names, task.opt(i), &mut last_task)?;
            row.event = intern_opt(names, event.opt(i), &mut last_event)?;
            row.aggregate = intern_opt(names, agg.opt(i), &mut last_agg)?;
            if keeps_detail(k) {
                if let Some(d) = detail.opt(i) {
                    row.detail = u32::try_from(history.details.len()).ok();
                    history.details.push(String::from_utf8_lossy(d).into());
                }
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
        run: &[u8],
        scenario: &[u8],
        backend: &[u8],
        names: &mut Interner,
        histories: &mut Vec<History>,
    ) -> Result<usize, LoadError> {
        if let Some((r, s, h)) = &self.last {
            if r == run && s == scenario {
                return Ok(*h);
            }
        }
        let key = (names.intern_bytes(run)?, names.intern_bytes(scenario)?);
        let h = match self.groups.get(&key) {
            Some(&h) => h,
            None => {
                let h = histories.len();
                let backend = names.intern_bytes(backend)?;
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
        self.last = Some((run.to_vec(), scenario.to_vec(), h));
        self.last_run = names.name(key.0).to_string();
        Ok(h)
    }
}
