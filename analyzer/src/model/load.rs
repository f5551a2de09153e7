//! Loading trace files into compact histories: each file is streamed batch by batch through the
//! contract crate's validating reader, strings are interned, and rows are grouped by
//! `(run_id, scenario)`. Memory is one small [`Row`] per event of a known kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch};
use arrow_buffer::NullBuffer;
use outbox_trace::input::Encoding;
use outbox_trace::schema::column;
use outbox_trace::{Field, Kind, ReadOptions, TraceError, TraceFile};

use crate::model::decode::{Ordered, Stages};
use crate::model::history::{keeps_detail, History};
use crate::model::intern::{FastMap, Id, InternError, Interner};
use crate::model::row::{Columns, Present, Row};

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
    /// A run's rows are not in ascending `seq` order, so the file cannot be checked as it
    /// streams (it is then loaded whole and sorted instead).
    #[error("the rows of a run are not in ascending seq order")]
    NotInSeqOrder,
}

/// A load error together with the file it concerns: `<path>: <reason>`, one line. The reason is
/// part of the message rather than a chained source, so `{:#}` does not repeat it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct FileError {
    /// The file that broke the contract, as given.
    pub path: PathBuf,
    /// How the file breaks the contract (the line after the path).
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

/// Where the loader puts each row it decodes.
pub(crate) trait Sink {
    /// Takes a row of known kind for history `h`, with its `detail` text when the analyzer keeps
    /// that kind's details.
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError>;

    /// Takes the `(run_id, seq)` of a row of a kind the contract lacks (its `seq` still counts).
    fn unknown(&mut self, run: Id, seq: u64) -> Result<(), LoadError>;

    /// Whether the sink keeps (nearly) every row, so a history should reserve room for them.
    fn keeps_rows(&self) -> bool {
        true
    }

    /// Columns the sink never reads, left undecoded (their values in the rows are zero or
    /// absent).
    fn skips(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Keeps every row in its history.
#[derive(Default)]
struct Keep {
    /// `(run_id, seq)` of rows of unknown kinds.
    unknown_seqs: Vec<(Id, u64)>,
}

impl Sink for Keep {
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError> {
        let history = &mut histories[h];
        let mut row = row.clone();
        if let Some(text) = detail {
            history.attach_detail(&mut row, text);
        }
        history.push(row);
        Ok(())
    }

    fn unknown(&mut self, run: Id, seq: u64) -> Result<(), LoadError> {
        self.unknown_seqs.push((run, seq));
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
        for built in Ordered::start(scope, path, trace, options, stages) {
            let built = built?;
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

/// How many names a file will have interned by its end, told to the interner as the rows come:
/// the names so far, scaled by the rows still to come. Told only as a batch with new
/// dictionaries comes (a row group's first), when the names so far are those of the rows
/// before it (a row group's dictionaries are interned whole with its first batch), and once a
/// sixteenth of the file is read (a first row group dense in new names would otherwise make a
/// table for many more than come).
struct Expect {
    /// Names before the file.
    before: usize,
    /// Rows in the file, when known before its end.
    rows: Option<u64>,
    /// Rows read (as of the batch before the current one).
    read: u64,
}

impl Expect {
    fn new(before: usize, rows: Option<u64>) -> Self {
        Expect {
            before,
            rows,
            read: 0,
        }
    }

    /// A batch of `rows` is about to be interned, with new dictionaries when `fresh`.
    fn batch(&mut self, rows: usize, fresh: bool, names: &mut Interner) {
        if let Some(total) = self
            .rows
            .filter(|&total| fresh && self.read > 0 && self.read >= total / 16)
        {
            let seen = (names.len() - self.before) as u128;
            let expected = seen * u128::from(total) / u128::from(self.read);
            names.expect(self.before + usize::try_from(expected).unwrap_or(usize::MAX));
        }
        self.read += rows as u64;
    }
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

/// Per-file loading state.
struct FileState {
    groups: Groups,
    unknown: BTreeMap<String, u64>,
}

/// Which history each `(run_id, scenario)` of a file goes to.
struct Groups {
    /// Rows in the file: the first history reserves room for all of them (most files hold one
    /// scenario, and pages never touched cost nothing).
    rows: u64,
    file: usize,
    first_history: usize,
    /// Whether the first history reserves room for every row.
    reserve: bool,
    map: FastMap<(Id, Id), usize>,
    /// The last `(run_id, scenario)` seen and its history: rows of one scenario come together,
    /// so most rows skip the map.
    last: Option<(Id, Id, usize)>,
}

impl Groups {
    /// The history of `(run, scenario)`, opened with `backend` on its first row.
    fn history(
        &mut self,
        run: Id,
        scenario: Id,
        backend: Id,
        histories: &mut Vec<History>,
    ) -> usize {
        if let Some((r, s, h)) = self.last {
            if r == run && s == scenario {
                return h;
            }
        }
        let h = *self.map.entry((run, scenario)).or_insert_with(|| {
            let h = histories.len();
            let mut history = History::new(self.file, run, scenario, backend);
            if h == self.first_history && self.reserve {
                history
                    .rows
                    .reserve(usize::try_from(self.rows).unwrap_or(0));
            }
            histories.push(history);
            h
        });
        self.last = Some((run, scenario, h));
        h
    }
}

/// The ids of one dictionary's values, kept while batches share that dictionary (the Parquet
/// reader hands out one per row group for a column stored dictionary-encoded).
#[derive(Default)]
struct Dictionary {
    /// The values the ids are for; holding them keeps their address from being reused.
    values: Option<ArrayRef>,
    /// `ids[k]`: the id of value `k`.
    ids: Arc<[Id]>,
}

impl Dictionary {
    /// Whether `array`'s dictionary values are the ones held.
    fn holds(&self, array: &DictionaryArray<Int32Type>) -> bool {
        let values = array.values();
        self.values.as_ref().is_some_and(|v| Arc::ptr_eq(v, values))
    }

    /// The ids of `array`'s dictionary values, interned unless they are the ones already held.
    fn ids(
        &mut self,
        array: &DictionaryArray<Int32Type>,
        names: &mut Interner,
    ) -> Result<Arc<[Id]>, LoadError> {
        if !self.holds(array) {
            let values = array.values();
            let text = values
                .as_string_opt::<i32>()
                .ok_or(LoadError::Canonical("dictionary"))?;
            self.ids = names.intern_all(text.iter())?.into();
            self.values = Some(values.clone());
        }
        Ok(self.ids.clone())
    }
}

/// The dictionaries of the string columns, by position in [`STRING_COLUMNS`].
#[derive(Default)]
struct Dictionaries([Dictionary; 8]);

impl Dictionaries {
    /// Whether `batch` brings a dictionary not held yet (it is a row group's first batch).
    fn fresh(&self, batch: &RecordBatch) -> bool {
        STRING_COLUMNS
            .iter()
            .zip(&self.0)
            .any(|(name, dict)| dictionary(batch, name).is_ok_and(|a| !dict.holds(a)))
    }

    /// The ids of `batch`'s string columns, its dictionaries interned where new.
    fn name(&mut self, batch: &RecordBatch, names: &mut Interner) -> Result<Named, LoadError> {
        let mut new = 0;
        for (name, dict) in STRING_COLUMNS.iter().zip(&self.0) {
            let array = dictionary(batch, name)?;
            if !dict.holds(array) {
                new += array.values().len();
            }
        }
        names.reserve(new)?;
        let mut ids = Vec::with_capacity(STRING_COLUMNS.len());
        for (name, dict) in STRING_COLUMNS.iter().zip(&mut self.0) {
            ids.push(dict.ids(dictionary(batch, name)?, names)?);
        }
        // `counter_key` (an optional column, plain text): interned where set, which is rare, on
        // the rows that are built (of a known kind, with an actor) only.
        let keys = batch.column(column("counter_key")).as_string_opt::<i32>();
        let counter_keys = match keys {
            Some(keys) if keys.null_count() < keys.len() => {
                let (kind, actor) = (dictionary(batch, "kind")?, dictionary(batch, "actor")?);
                let known: Vec<bool> = kind
                    .values()
                    .as_string_opt::<i32>()
                    .ok_or(LoadError::Canonical("kind"))?
                    .iter()
                    .map(|k| k.is_some_and(|k| k.parse::<Kind>().is_ok()))
                    .collect();
                let built = |i: usize| {
                    let key = usize::try_from(kind.keys().value(i)).unwrap_or(usize::MAX);
                    known.get(key).copied().unwrap_or(false) && actor.is_valid(i)
                };
                let ids = keys.iter().enumerate().map(|(i, key)| {
                    key.filter(|_| built(i))
                        .map(|key| names.intern(key))
                        .transpose()
                });
                Some(ids.collect::<Result<_, _>>()?)
            }
            _ => None,
        };
        Ok(Named { ids, counter_keys })
    }
}

/// What the names of a batch are as ids.
pub(crate) struct Named {
    /// The ids of each string column's dictionary values, by position in [`STRING_COLUMNS`].
    ids: Vec<Arc<[Id]>>,
    /// Each row's `counter_key`, unless none is set.
    counter_keys: Option<Vec<Option<Id>>>,
}

/// A decoded batch with its rows built.
pub(crate) struct Built {
    batch: RecordBatch,
    /// The ids of each string column's dictionary values, by position in [`STRING_COLUMNS`].
    ids: Vec<Arc<[Id]>>,
    /// The kind of each value of the `kind` dictionary (`None`: a kind the contract lacks).
    kinds: Vec<Option<Kind>>,
    rows: Vec<Option<Row>>,
    /// Positions of the rows lacking a field their kind requires, ascending.
    incomplete: Vec<u32>,
}

impl Built {
    /// Builds the rows of `batch`, whose names are `named`, in a buffer from `spent`.
    fn of(batch: RecordBatch, named: Named, spent: &Spent) -> Result<Self, LoadError> {
        let kind_names = dictionary(&batch, "kind")?
            .values()
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("kind"))?;
        // Kinds by dictionary value: parsed once per value, not per row.
        let kinds: Vec<Option<Kind>> = kind_names.iter().map(|k| k?.parse().ok()).collect();
        let needs: Vec<u16> = kinds.iter().map(|k| k.map_or(0, needs)).collect();
        let Named { ids, counter_keys } = named;
        let (mut rows, incomplete) = build_rows(&batch, &ids, &kinds, &needs, spent.take())?;
        if let Some(keys) = counter_keys {
            for (row, key) in rows.iter_mut().zip(keys) {
                if let Some(row) = row {
                    row.counter_key = key;
                }
            }
        }
        Ok(Built {
            batch,
            ids,
            kinds,
            rows,
            incomplete,
        })
    }
}

/// Which of a row's columns are not null, a bit per column ([`Carried`]), read from the null
/// bitmaps 64 rows at a time. The numbers come first, in the order of [`Present`]'s bits.
///
/// [`Present`]: crate::model::row::Present
struct Carried;

impl Carried {
    const AGGREGATE_SEQ: u16 = Present::AGGREGATE_SEQ as u16;
    const ATTEMPT: u16 = Present::ATTEMPT as u16;
    const BROKER_SEQ: u16 = Present::BROKER_SEQ as u16;
    const STORE_REV: u16 = Present::STORE_REV as u16;
    const AMOUNT: u16 = Present::AMOUNT as u16;
    const COUNTER: u16 = Present::COUNTER as u16;
    const TASK: u16 = 1 << 6;
    const EVENT: u16 = 1 << 7;
    const AGGREGATE: u16 = 1 << 8;
    const DETAIL: u16 = 1 << 9;
    const ACTOR: u16 = 1 << 10;

    /// The bit of `field`'s column.
    fn of(field: Field) -> u16 {
        match field {
            Field::TaskId => Carried::TASK,
            Field::EventId => Carried::EVENT,
            Field::StoreRev => Carried::STORE_REV,
            Field::Attempt => Carried::ATTEMPT,
            Field::BrokerSeq => Carried::BROKER_SEQ,
            Field::Amount => Carried::AMOUNT,
            Field::Counter => Carried::COUNTER,
            Field::Detail => Carried::DETAIL,
        }
    }

    /// Sets `bit` in `rows[i]` for every row `i` whose value in a column with `nulls` is set.
    fn mark(rows: &mut [u16], nulls: Option<&NullBuffer>, bit: u16) {
        match nulls {
            None => rows.iter_mut().for_each(|c| *c |= bit),
            Some(nulls) => {
                let words = nulls.inner().bit_chunks().iter_padded();
                for (rows, mut word) in rows.chunks_mut(64).zip(words) {
                    // Only the rows set, lowest first.
                    while word != 0 {
                        if let Some(c) = rows.get_mut(word.trailing_zeros() as usize) {
                            *c |= bit;
                        }
                        word &= word - 1;
                    }
                }
            }
        }
    }
}

/// The columns a row of `kind` must carry, as [`Carried`] bits: its required fields, `detail`
/// only where the analyzer keeps it.
fn needs(kind: Kind) -> u16 {
    kind.required_fields()
        .iter()
        .filter(|&&f| f != Field::Detail || keeps_detail(kind))
        .fold(0, |set, &f| set | Carried::of(f))
}

/// Row buffers handed on and emptied, back for the next batch (fresh ones would cost a page
/// fault per page each).
#[derive(Default)]
pub(crate) struct Spent(std::sync::Mutex<Vec<Vec<Option<Row>>>>);

impl Spent {
    fn take(&self) -> Vec<Option<Row>> {
        let mut spent = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spent.pop().unwrap_or_default()
    }

    fn give(&self, rows: Vec<Option<Row>>) {
        let mut spent = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if spent.len() < 8 {
            spent.push(rows);
        }
    }
}

/// A string column of a batch, as ids.
struct Ids<'a> {
    keys: &'a [i32],
    nulls: Option<&'a NullBuffer>,
    ids: &'a [Id],
}

impl<'a> Ids<'a> {
    /// Whether every row holds the same value (none null).
    fn uniform(&self) -> bool {
        let no_nulls = self.nulls.is_none_or(|n| n.null_count() == 0);
        no_nulls
            && self
                .keys
                .first()
                .is_none_or(|k| self.keys.iter().all(|x| x == k))
    }

    /// The id of row `i`, absent for a null (or a key out of range, which Arrow rules out).
    #[inline(always)]
    fn opt(&self, i: usize) -> Option<Id> {
        if self.nulls.is_some_and(|n| n.is_null(i)) {
            return None;
        }
        let key = usize::try_from(*self.keys.get(i)?).ok()?;
        self.ids.get(key).copied()
    }
}

/// A `Dictionary(Int32, Utf8)` column of a batch.
fn dictionary<'a>(
    batch: &'a RecordBatch,
    name: &'static str,
) -> Result<&'a DictionaryArray<Int32Type>, LoadError> {
    batch
        .column(column(name))
        .as_dictionary_opt::<Int32Type>()
        .ok_or(LoadError::Canonical(name))
}

/// A numeric column of a batch, read as a slice.
struct Nums<'a, T: ArrowPrimitiveType> {
    values: &'a [T::Native],
    nulls: Option<&'a NullBuffer>,
}

impl<'a, T: ArrowPrimitiveType> Nums<'a, T> {
    fn of(batch: &'a RecordBatch, name: &'static str) -> Result<Self, LoadError> {
        let a = batch
            .column(column(name))
            .as_primitive_opt::<T>()
            .ok_or(LoadError::Canonical(name))?;
        Ok(Nums {
            values: a.values(),
            nulls: a.nulls(),
        })
    }

    #[inline(always)]
    fn get(&self, i: usize) -> T::Native {
        self.values.get(i).copied().unwrap_or_default()
    }
}

/// The string columns the checks compare, read as dictionaries (each distinct value of a row
/// group is interned once, and a row costs an array lookup).
const STRING_COLUMNS: [&str; 8] = [
    "run_id",
    "scenario",
    "backend",
    "actor",
    "kind",
    "task_id",
    "event_id",
    "aggregate_id",
];

/// The columns the names are read from: the string columns and `counter_key`.
const NAMED_COLUMNS: [&str; STRING_COLUMNS.len() + 1] = {
    let mut named = [""; STRING_COLUMNS.len() + 1];
    let mut i = 0;
    while i < STRING_COLUMNS.len() {
        named[i] = STRING_COLUMNS[i];
        i += 1;
    }
    named[i] = "counter_key";
    named
};

impl FileState {
    /// Hands every row of `p` to `sink`; gives back the emptied row buffer.
    fn batch(
        &mut self,
        p: Built,
        histories: &mut Vec<History>,
        sink: &mut impl Sink,
    ) -> Result<Vec<Option<Row>>, LoadError> {
        let batch = &p.batch;
        let [run, scenario, backend, _, kind, ..] = &columns(batch, &p.ids)?[..] else {
            return Err(LoadError::Canonical("kind"));
        };
        let kind_names = dictionary(batch, "kind")?
            .values()
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("kind"))?;
        let seq = Nums::<UInt64Type>::of(batch, "seq")?;
        let detail = batch
            .column(column("detail"))
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("detail"))?;
        let required = |name| LoadError::Canonical(name);
        let mut incomplete = p.incomplete.iter().copied().peekable();
        // Rows of one scenario come together: `(run_id, scenario, backend)` keys repeat, and
        // then so does their history.
        let mut last_group: Option<([Option<&i32>; 3], usize)> = None;
        // Most batches hold one scenario only: then its history, once found, is every row's.
        let one_group = [run, scenario, backend].iter().all(|c| c.uniform());
        let mut rows = p.rows;
        for (i, row) in rows.iter_mut().enumerate() {
            let Some(row) = row else {
                let key = kind.keys.get(i).ok_or(required("kind"))?;
                if p.kinds.get(*key as usize).copied().flatten().is_some() {
                    // A known kind is built unless its actor is missing.
                    return Err(required("actor"));
                }
                let name = kind_names.value(*key as usize).to_string();
                *self.unknown.entry(name).or_default() += 1;
                let run_id = run.opt(i).ok_or(required("run_id"))?;
                sink.unknown(run_id, seq.get(i))?;
                continue;
            };
            let k = row.kind;
            let group = || [run.keys.get(i), scenario.keys.get(i), backend.keys.get(i)];
            let h = match last_group {
                Some((_, h)) if one_group => h,
                Some((keys, h)) if keys == group() => h,
                _ => {
                    let run_id = run.opt(i).ok_or(required("run_id"))?;
                    let scenario_id = scenario.opt(i).ok_or(required("scenario"))?;
                    let backend_id = backend.opt(i).ok_or(required("backend"))?;
                    let h = self
                        .groups
                        .history(run_id, scenario_id, backend_id, histories);
                    let history = &mut histories[h];
                    if backend_id != history.backend
                        && !history.other_backends.contains(&backend_id)
                    {
                        history.other_backends.push(backend_id);
                    }
                    last_group = Some((group(), h));
                    h
                }
            };
            let text = (keeps_detail(k) && detail.is_valid(i)).then(|| detail.value(i));
            if incomplete.next_if_eq(&(i as u32)).is_some() {
                let history = &mut histories[h];
                for field in k.required_fields() {
                    // A kept detail is attached by the sink.
                    let has = match field {
                        outbox_trace::Field::Detail => text.is_some(),
                        _ => row.has(*field),
                    };
                    if !has {
                        *history.missing.entry((k, field.column())).or_default() += 1;
                    }
                }
            }
            sink.row(histories, h, row, text)?;
        }
        rows.clear();
        Ok(rows)
    }
}

/// The string columns of `batch` as ids, by position in [`STRING_COLUMNS`].
fn columns<'a>(batch: &'a RecordBatch, ids: &'a [Arc<[Id]>]) -> Result<Vec<Ids<'a>>, LoadError> {
    STRING_COLUMNS
        .iter()
        .zip(ids)
        .map(|(name, ids)| {
            let a = dictionary(batch, name)?;
            Ok(Ids {
                keys: a.keys().values(),
                nulls: a.nulls(),
                ids,
            })
        })
        .collect()
}

/// The rows of a batch (`None` for a row of a kind the contract lacks, or without an actor),
/// and the positions of the rows that lack a field their kind requires (`detail` included).
/// Their strings are named by `ids` (by position in [`STRING_COLUMNS`]); `counter_key` is left
/// unset.
fn build_rows(
    batch: &RecordBatch,
    ids: &[Arc<[Id]>],
    kinds: &[Option<Kind>],
    needs: &[u16],
    mut rows: Vec<Option<Row>>,
) -> Result<(Vec<Option<Row>>, Vec<u32>), LoadError> {
    let actor = dictionary(batch, "actor")?;
    let kind = dictionary(batch, "kind")?;
    let task = dictionary(batch, "task_id")?;
    let event = dictionary(batch, "event_id")?;
    let agg = dictionary(batch, "aggregate_id")?;
    let seq = Nums::<UInt64Type>::of(batch, "seq")?;
    let ts = Nums::<Int64Type>::of(batch, "ts_ns")?;
    let inc = Nums::<UInt32Type>::of(batch, "incarnation")?;
    let agg_seq = Nums::<UInt64Type>::of(batch, "aggregate_seq")?;
    let attempt = Nums::<UInt32Type>::of(batch, "attempt")?;
    let broker = Nums::<UInt64Type>::of(batch, "broker_seq")?;
    let rev = Nums::<Int64Type>::of(batch, "store_rev")?;
    let amount = Nums::<Int64Type>::of(batch, "amount")?;
    let counter = Nums::<Int64Type>::of(batch, "counter")?;
    let detail = batch.column(column("detail"));
    let n = batch.num_rows();
    let mut carried = vec![0u16; n];
    for (nulls, bit) in [
        (agg_seq.nulls, Carried::AGGREGATE_SEQ),
        (attempt.nulls, Carried::ATTEMPT),
        (broker.nulls, Carried::BROKER_SEQ),
        (rev.nulls, Carried::STORE_REV),
        (amount.nulls, Carried::AMOUNT),
        (counter.nulls, Carried::COUNTER),
        (task.nulls(), Carried::TASK),
        (event.nulls(), Carried::EVENT),
        (agg.nulls(), Carried::AGGREGATE),
        (detail.nulls(), Carried::DETAIL),
        (actor.nulls(), Carried::ACTOR),
    ] {
        Carried::mark(&mut carried, nulls, bit);
    }
    // Every column of a batch holds its number of rows (a null slot holds some value too).
    let [actor, kind, task, event, agg] =
        [actor, kind, task, event, agg].map(|a| &a.keys().values()[..n]);
    let (seq, ts, inc) = (&seq.values[..n], &ts.values[..n], &inc.values[..n]);
    let (agg_seq, attempt, broker) = (
        &agg_seq.values[..n],
        &attempt.values[..n],
        &broker.values[..n],
    );
    let (rev, amount, counter) = (&rev.values[..n], &amount.values[..n], &counter.values[..n]);
    rows.clear();
    rows.reserve(n);
    let mut incomplete = Vec::new();
    let [_, _, _, actor_ids, _, task_ids, event_ids, agg_ids] = ids else {
        return Err(LoadError::Canonical("kind"));
    };
    // The id of a key of a column named by `ids`, when the column is set (a key is in range:
    // Arrow checks dictionary keys).
    let id = |c: u16, bit: u16, ids: &[Id], key: i32| {
        (c & bit != 0)
            .then(|| ids.get(usize::try_from(key).ok()?).copied())
            .flatten()
    };
    for (i, &c) in carried.iter().enumerate() {
        let key = usize::try_from(kind[i]).unwrap_or(usize::MAX);
        let (Some(&Some(k)), Some(actor_key)) =
            (kinds.get(key), id(c, Carried::ACTOR, actor_ids, actor[i]))
        else {
            rows.push(None);
            continue;
        };
        let numbers = Columns {
            aggregate_seq: agg_seq[i],
            attempt: attempt[i],
            broker_seq: broker[i],
            store_rev: rev[i],
            amount: amount[i],
            counter: counter[i],
        };
        // The low bits of `c` are the numbers' `Present` bits.
        let mut row = Row::new(seq[i], k, actor_key, inc[i]).with_columns(c as u8, numbers);
        row.ts_ns = ts[i];
        row.task = id(c, Carried::TASK, task_ids, task[i]);
        row.event = id(c, Carried::EVENT, event_ids, event[i]);
        row.aggregate = id(c, Carried::AGGREGATE, agg_ids, agg[i]);
        if needs.get(key).is_some_and(|&needs| needs & !c != 0) {
            incomplete.push(i as u32);
        }
        rows.push(Some(row));
    }
    Ok((rows, incomplete))
}
