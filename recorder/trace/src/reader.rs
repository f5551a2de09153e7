//! Reading any `outbox-trace/1` Parquet file: the recorder's own, or one written by pyarrow, DuckDB
//! or pandas. Columns are validated and normalised to the canonical types batch by batch, so a large
//! file streams in bounded memory.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, SchemaRef};
use arrow_schema::{Field, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::input::{open, open_stream, read_all, Encoding, Opened, Stream, Tally};
use crate::schema::{
    batch_events, ColumnType, COLUMNS, META_RUN, META_SCHEMA_VERSION, META_SEQ_SOURCE,
    SCHEMA_VERSION, SEQ_FROM_SPAN_CLOCKS,
};
use crate::spool::is_stdin;
use crate::{Event, TraceError};

/// Rows per batch handed out by [`TraceFile::batches`].
const BATCH_ROWS: usize = 16 * 1024;

/// What the file says about itself, learned before any row is read.
#[derive(Debug, Clone, Default)]
pub struct FileInfo {
    /// The path opened: one file, or a partitioned directory read as one trace.
    pub path: PathBuf,
    /// False when the file carries no `outbox_trace.schema_version` key (read as version 1).
    pub version_declared: bool,
    /// The recorder's configuration (`outbox_trace.run`), if present.
    pub run_json: Option<String>,
    /// Number of rows. JSON Lines are decoded as they stream: until their batches have been
    /// read to the end this counts the rows of the first batch only (see [`TraceFile::tally`]).
    pub rows: u64,
    /// Columns the contract does not define (ignored); for JSON Lines, as far as they have been
    /// read (see [`TraceFile::tally`]).
    pub extra_columns: Vec<String>,
    /// Number of Parquet row groups (see [`ReadOptions::row_groups`]); 1 for a text encoding.
    pub row_groups: usize,
    /// The encoding the file was in (told by its content).
    pub encoding: Encoding,
    /// Whether `seq` was derived from span times taken on separate clocks (OpenTelemetry spans
    /// without `outbox.seq`): an order across processes then rests on those clocks. A Parquet
    /// file says so with the metadata key `outbox_trace.seq_source` = `span-clocks` (see
    /// [`crate::Metadata`]), so a converted trace keeps the note.
    pub seq_from_clocks: bool,
}

impl Tally {
    /// Writes the rows and extra columns counted so far into `info` (once the batches are read
    /// to their end, they are the file's).
    pub fn fill(&self, info: &mut FileInfo) {
        info.rows = self.rows();
        info.extra_columns = self.extra_columns();
    }
}

impl FileInfo {
    /// What the file said about itself, to write it on (as `analyzer import` does).
    pub fn metadata(&self) -> crate::Metadata {
        crate::Metadata {
            run_json: self.run_json.clone(),
            seq_from_clocks: self.seq_from_clocks,
        }
    }
}

/// Opt-in ways to read a trace faster than the default [`TraceFile::open`]. The validation is the
/// same; only the shape of the batches and the part of the file read differ.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// String columns to hand out as `Dictionary(Int32, Utf8)` arrays instead of `Utf8`: a column
    /// stored dictionary-encoded (as the recorder writes them) is then decoded to keys plus one
    /// shared dictionary per row group, so a reader can handle each distinct value once rather than
    /// each row. Names that are not string columns of the contract are ignored.
    pub dictionary: Vec<&'static str>,
    /// Read only these row groups (indices into the file's row groups, in the order given), so
    /// several readers can decode one file in parallel. `None` reads them all.
    pub row_groups: Option<Vec<usize>>,
    /// Columns not to decode, for a reader that never looks at them: each is still checked
    /// against the contract (present, of a string or integer type) but handed out as an all-null
    /// array of the type [`TraceFile::schema`] gives it, required column or not. A Parquet file's
    /// skipped columns are not read at all. Names that are not columns of the contract are
    /// ignored.
    pub skip: Vec<&'static str>,
}

/// The Arrow type of the dictionary-encoded string columns of [`ReadOptions::dictionary`].
pub fn dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// An opened and validated trace file.
pub struct TraceFile {
    info: FileInfo,
    reader: Source,
    /// For each canonical column, its index in the projected batches.
    order: Vec<usize>,
    /// For each canonical column, the type batches hand out.
    types: Vec<DataType>,
    /// Values of columns the file lacks, filled from a partitioned directory's path (or null, for
    /// an optional column): appended to each decoded batch as constant text columns (`order`
    /// points past the file's columns).
    fills: Vec<Option<String>>,
    /// For each canonical column, whether it is skipped (see [`ReadOptions::skip`]).
    skipped: Vec<bool>,
    /// The rows and extra columns, complete once the batches are read.
    tally: Tally,
}

/// Batches decoded from a text encoding.
type Batches = Box<dyn Iterator<Item = Result<RecordBatch, TraceError>> + Send>;

/// Where a file's batches come from.
enum Source {
    /// A Parquet decoder, and the file it reads (to tell which page a checksum failed in).
    Parquet(ParquetRecordBatchReader, Option<File>),
    /// Batches decoded from a text encoding, in the canonical schema with plain strings: as the
    /// text streams in (JSON Lines), or from the whole file (OTLP spans).
    Decoded(Batches),
    /// The files of a partitioned directory, one after the other, each in canonical order.
    Many(Many),
}

/// The files of a partitioned directory still to read, and the one being read.
struct Many {
    parts: std::collections::VecDeque<(crate::partitioned::Part, Option<Vec<usize>>)>,
    options: ReadOptions,
    current: Option<Box<dyn Iterator<Item = Result<RecordBatch, TraceError>> + Send>>,
}

impl Iterator for Many {
    type Item = Result<RecordBatch, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(batch) = self.current.as_mut().and_then(Iterator::next) {
                return Some(batch);
            }
            let (part, row_groups) = self.parts.pop_front()?;
            let options = ReadOptions {
                row_groups,
                ..self.options.clone()
            };
            match TraceFile::open_parquet(&part.path, &options, &part.fills) {
                Ok(file) => self.current = Some(Box::new(file.batches())),
                Err(e) => {
                    self.parts.clear();
                    return Some(Err(in_file(&part.path, e)));
                }
            }
        }
    }
}

impl Iterator for Source {
    type Item = Result<RecordBatch, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Source::Parquet(r, file) => r.next().map(|b| {
                b.map_err(|e| match file {
                    Some(f) if crate::checksum::is_mismatch(&e) => crate::checksum::locate(f),
                    _ => TraceError::from(e),
                })
            }),
            Source::Decoded(batches) => batches.next(),
            Source::Many(files) => files.next(),
        }
    }
}

impl TraceFile {
    /// Opens `path` and checks the metadata and the columns against the contract. `path` may be
    /// a file in any encoding of [`Encoding`], a partitioned directory, or `-` for standard input
    /// (read once).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        Self::open_with(path, &ReadOptions::default())
    }

    /// Opens `path` like [`TraceFile::open`], reading as `options` say.
    pub fn open_with(path: &Path, options: &ReadOptions) -> Result<Self, TraceError> {
        guarded(|| Self::open_unguarded(path, options))
    }

    fn open_unguarded(path: &Path, options: &ReadOptions) -> Result<Self, TraceError> {
        if path.is_dir() {
            return Self::open_dir(path, options);
        }
        // Standard input and a FIFO are read through their spool (never opened twice).
        let opened = open(path)?;
        if opened.encoding == Encoding::Parquet {
            drop(opened);
            let file = crate::spool::whole_file(path)?;
            return Self::open_parquet_file(file, path, options, &[]);
        }
        Self::open_decoded(opened, path, options)
    }

    /// A trace read once from `reader` (a pipe, say; `name` stands for it in messages and gives
    /// OTLP spans their default `run_id`), in any encoding a file may have: Parquet is spooled to
    /// an anonymous temporary file, every other encoding is decoded as it streams in.
    pub fn open_reader(
        reader: impl std::io::Read + Send + 'static,
        name: &Path,
        options: &ReadOptions,
    ) -> Result<Self, TraceError> {
        let stream: Stream = Box::new(std::io::BufReader::with_capacity(1 << 20, reader));
        guarded(|| Self::open_decoded(open_stream(stream, name)?, name, options))
    }

    /// A trace read from the stream `opened`: Parquet is spooled to an anonymous temporary file
    /// (its footer is at the end), the other encodings are decoded as they stream in.
    fn open_decoded(
        opened: Opened,
        path: &Path,
        options: &ReadOptions,
    ) -> Result<Self, TraceError> {
        let (encoding, compression, stream) = (opened.encoding, opened.compression, opened.stream);
        let stem = file_stem(path);
        let (whole, stream) = match encoding {
            Encoding::Parquet => {
                let mut spool = tempfile::tempfile().map_err(|e| TraceError::io(path, e))?;
                let mut stream = stream;
                std::io::copy(&mut stream, &mut spool).map_err(|e| TraceError::io(path, e))?;
                return Self::open_parquet_file(spool, path, options, &[]);
            }
            Encoding::JsonLines => (None, Some(stream)),
            Encoding::OtlpJsonLines => (Some(crate::otlp::decode_json_lines(stream, &stem)?), None),
            Encoding::OtlpJson => (
                Some(crate::otlp::decode_json_document(stream, &stem)?),
                None,
            ),
            Encoding::OtlpProtobuf => {
                let bytes = read_all(stream, compression)?;
                (Some(crate::otlp::decode_protobuf(&bytes, &stem)?), None)
            }
        };
        let (header, tally, batches): (_, _, Batches) = match (whole, stream) {
            (Some(decoded), _) => (
                decoded.header,
                Tally::known(decoded.rows, Vec::new()),
                decoded.batches,
            ),
            (None, stream) => {
                // JSON Lines: a batch at a time as the text streams in.
                let stream = stream.ok_or(TraceError::Empty)?;
                let decoder = crate::jsonl::Decoder::new(stream)?;
                (decoder.header().clone(), decoder.tally(), Box::new(decoder))
            }
        };
        let batches: Batches = match &options.row_groups {
            Some(groups) if !groups.contains(&0) => Box::new(std::iter::empty()),
            _ => batches,
        };
        let mut info = FileInfo {
            path: path.to_path_buf(),
            version_declared: header.version_declared,
            run_json: header.run_json,
            rows: 0,
            extra_columns: Vec::new(),
            row_groups: 1,
            encoding,
            seq_from_clocks: header.seq_from_clocks,
        };
        tally.fill(&mut info);
        Ok(TraceFile {
            info,
            tally,
            reader: Source::Decoded(batches),
            order: (0..COLUMNS.len()).collect(),
            types: requested_types(options),
            fills: Vec::new(),
            skipped: skipped(options),
        })
    }

    /// A partitioned directory (see [`crate::partitioned`]): every file is opened and checked
    /// here, then read in turn; the batches have one type per column whatever each file's.
    fn open_dir(dir: &Path, options: &ReadOptions) -> Result<Self, TraceError> {
        let parts = crate::partitioned::parts(dir)?;
        let mut info = FileInfo {
            path: dir.to_path_buf(),
            version_declared: true,
            encoding: Encoding::Parquet,
            ..FileInfo::default()
        };
        // Row groups are numbered across the files in path order.
        let mut queue = std::collections::VecDeque::new();
        for part in parts {
            let file = Self::open_parquet(&part.path, &ReadOptions::default(), &part.fills)
                .map_err(|e| in_file(&part.path, e))?;
            let f = file.info();
            info.version_declared &= f.version_declared;
            info.run_json = info.run_json.take().or_else(|| f.run_json.clone());
            info.seq_from_clocks |= f.seq_from_clocks;
            info.rows += f.rows;
            for c in &f.extra_columns {
                if !info.extra_columns.contains(c) {
                    info.extra_columns.push(c.clone());
                }
            }
            let first = info.row_groups;
            info.row_groups += f.row_groups;
            let groups = options.row_groups.as_ref().map(|wanted| {
                wanted
                    .iter()
                    .filter(|&&g| g >= first && g < info.row_groups)
                    .map(|g| g - first)
                    .collect::<Vec<usize>>()
            });
            if groups.as_ref().is_none_or(|g| !g.is_empty()) {
                queue.push_back((part, groups));
            }
        }
        Ok(TraceFile {
            tally: Tally::known(info.rows, info.extra_columns.clone()),
            info,
            reader: Source::Many(Many {
                parts: queue,
                options: ReadOptions {
                    row_groups: None,
                    ..options.clone()
                },
                current: None,
            }),
            order: (0..COLUMNS.len()).collect(),
            types: requested_types(options),
            fills: Vec::new(),
            skipped: skipped(options),
        })
    }

    fn open_parquet(
        path: &Path,
        options: &ReadOptions,
        partition: &[(&'static str, String)],
    ) -> Result<Self, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
        Self::open_parquet_file(file, path, options, partition)
    }

    /// A Parquet file already open (`path` names it in messages).
    fn open_parquet_file(
        file: File,
        path: &Path,
        options: &ReadOptions,
        partition: &[(&'static str, String)],
    ) -> Result<Self, TraceError> {
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())?;
        let meta = metadata.metadata().file_metadata().clone();
        let kv = |key: &str| {
            meta.key_value_metadata()
                .and_then(|kvs| kvs.iter().find(|kv| kv.key == key))
                .and_then(|kv| kv.value.clone())
        };
        let version = kv(META_SCHEMA_VERSION);
        let run_json = kv(META_RUN);
        let seq_from_clocks =
            kv(META_SEQ_SOURCE).as_deref().map(str::trim) == Some(SEQ_FROM_SPAN_CLOCKS);
        if let Some(v) = &version {
            if v.trim() != SCHEMA_VERSION {
                return Err(TraceError::SchemaVersion(v.clone()));
            }
        }
        let rows = u64::try_from(meta.num_rows()).unwrap_or(0);
        if rows == 0 {
            return Err(TraceError::Empty);
        }
        let file_schema = metadata.schema().clone();
        let skipped = skipped(options);
        let mut roots = Vec::with_capacity(COLUMNS.len());
        // Columns the file lacks, filled from its partition path or (an optional column) with
        // nulls: `(canonical index, value)`.
        let mut filled: Vec<(usize, Option<String>)> = Vec::new();
        for (i, column) in COLUMNS.iter().enumerate() {
            let Some((index, field)) = file_schema.column_with_name(column.name) else {
                // A partition path's value, else null for a column a file may lack.
                let value = match partition.iter().find(|(c, _)| *c == column.name) {
                    Some((_, value)) => Some(value.clone()),
                    None if column.optional => None,
                    None => return Err(TraceError::MissingColumn(column.name)),
                };
                if !skipped[i] {
                    filled.push((i, value));
                }
                continue;
            };
            check_type(column.name, column.data_type, field.data_type())?;
            if !skipped[i] {
                roots.push(index);
            }
        }
        let extra_columns: Vec<String> = file_schema
            .fields()
            .iter()
            .filter(|f| !COLUMNS.iter().any(|c| c.name == f.name()))
            .map(|f| f.name().clone())
            .collect();
        // Projected batches keep file order; remember where each canonical column lands (a
        // skipped column lands nowhere: its entry is never used).
        let mut sorted = roots.clone();
        sorted.sort_unstable();
        let mut present = roots
            .iter()
            .map(|r| sorted.binary_search(r).expect("present"));
        let order: Vec<usize> = (0..COLUMNS.len())
            .map(|i| match filled.iter().position(|(c, _)| *c == i) {
                Some(k) => sorted.len() + k,
                None if skipped[i] => 0,
                None => present.next().unwrap_or_default(),
            })
            .collect();
        // Canonical positions of the columns read from the file, for the dictionary hint.
        let read: Vec<usize> = (0..COLUMNS.len())
            .filter(|&i| !skipped[i] && !filled.iter().any(|(c, _)| *c == i))
            .collect();
        let row_groups = metadata.metadata().num_row_groups();
        let mut types: Vec<DataType> = COLUMNS
            .iter()
            .zip(requested_types(options))
            .zip(&skipped)
            .map(|((c, requested), &skip)| if skip { requested } else { c.data_type.arrow() })
            .collect();
        let dictionary: Vec<usize> = COLUMNS
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                c.data_type == ColumnType::Utf8
                    && options.dictionary.contains(&c.name)
                    && read.contains(i)
            })
            .map(|(i, _)| read.iter().position(|r| *r == i).unwrap_or_default())
            .collect();
        let metadata = match dictionary_hint(&metadata, &roots, &dictionary) {
            Some(hinted) => {
                for &i in &dictionary {
                    types[read[i]] = dictionary_type();
                }
                hinted
            }
            None => metadata,
        };
        // A second handle, read only to tell which page a checksum failed in.
        let pages = file.try_clone().ok();
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata);
        let mask = ProjectionMask::roots(builder.parquet_schema(), sorted);
        let mut builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
        if let Some(groups) = &options.row_groups {
            builder = builder.with_row_groups(groups.clone());
        }
        let reader = builder.build()?;
        Ok(TraceFile {
            tally: Tally::known(rows, extra_columns.clone()),
            info: FileInfo {
                path: path.to_path_buf(),
                version_declared: version.is_some(),
                run_json,
                rows,
                extra_columns,
                row_groups,
                encoding: Encoding::Parquet,
                seq_from_clocks,
            },
            reader: Source::Parquet(reader, pages),
            order,
            types,
            fills: filled.into_iter().map(|(_, v)| v).collect(),
            skipped,
        })
    }

    /// What the file says about itself.
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// The number of rows and the extra columns, counted as the batches are read (JSON Lines
    /// stream in, so only their end tells): [`Tally::fill`] completes a [`FileInfo`] once
    /// [`TraceFile::batches`] has been read to its end. For any other encoding it is known at
    /// once.
    pub fn tally(&self) -> Tally {
        self.tally.clone()
    }

    /// The rows, as batches in the canonical schema with required columns free of nulls.
    /// With [`ReadOptions::dictionary`], the columns named there are `Dictionary(Int32, Utf8)`
    /// instead, and the columns of [`ReadOptions::skip`] are all null (see
    /// [`TraceFile::schema`]).
    ///
    /// A decoder that panics on a corrupt page ends the iteration with
    /// [`TraceError::Corrupt`].
    pub fn batches(self) -> impl Iterator<Item = Result<RecordBatch, TraceError>> {
        let (order, types, fills) = (self.order, self.types, self.fills);
        let schema = batch_schema(&types, &self.skipped);
        let mut skipped = Skipped::new(&self.skipped, &types);
        let mut reader = Some(self.reader);
        std::iter::from_fn(move || {
            let mut current = reader.take()?;
            let next = guarded(|| {
                current
                    .next()
                    .map(|batch| {
                        let batch = with_fills(batch?, &fills)?;
                        normalise(&batch, &order, &types, &schema, &mut skipped)
                    })
                    .transpose()
            });
            match next {
                Ok(Some(batch)) => {
                    reader = Some(current);
                    Some(Ok(batch))
                }
                Ok(None) => None,
                // After an error (or a caught panic) the decoder's state is not trusted again.
                Err(e) => Some(Err(e)),
            }
        })
    }

    /// The schema of the batches [`TraceFile::batches`] hands out (a column of
    /// [`ReadOptions::skip`] is nullable there).
    pub fn schema(&self) -> SchemaRef {
        batch_schema(&self.types, &self.skipped)
    }

    /// Reads every row into events, skipping (and counting) kinds this contract does not define,
    /// and rejecting a `seq` repeated within a run.
    pub fn read_all(self) -> Result<Trace, TraceError> {
        let mut info = self.info.clone();
        let tally = self.tally.clone();
        let mut events = Vec::with_capacity(usize::try_from(info.rows).unwrap_or(0));
        let mut unknown_kinds = BTreeMap::new();
        let mut seqs = SeqCheck::default();
        for batch in self.batches() {
            let batch = batch?;
            for event in batch_events(&batch, &mut unknown_kinds) {
                seqs.push(&event.run_id, event.seq);
                events.push(event);
            }
        }
        seqs.finish()?;
        tally.fill(&mut info);
        Ok(Trace {
            info,
            events,
            unknown_kinds,
        })
    }
}

/// Runs `work`, turning a panic inside it (the Parquet and Arrow decoders can panic on corrupt
/// pages) into [`TraceError::Corrupt`]. The panic is not printed: the error says what happened.
pub fn guarded<T>(work: impl FnOnce() -> Result<T, TraceError>) -> Result<T, TraceError> {
    quiet_panics::install();
    let _quiet = quiet_panics::Quiet::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the decoder gave up".to_string());
            Err(TraceError::Corrupt(reason))
        }
    }
}

/// A panic hook that stays silent on threads inside [`guarded`] and defers to the hook it
/// replaced everywhere else.
mod quiet_panics {
    use std::cell::Cell;
    use std::sync::Once;

    thread_local! {
        static QUIET: Cell<u32> = const { Cell::new(0) };
    }

    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if QUIET.with(Cell::get) == 0 {
                    previous(info);
                }
            }));
        });
    }

    /// Silences panics on this thread while alive.
    pub struct Quiet;

    impl Quiet {
        pub fn enter() -> Quiet {
            QUIET.with(|q| q.set(q.get() + 1));
            Quiet
        }
    }

    impl Drop for Quiet {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(q.get().saturating_sub(1)));
        }
    }
}

/// A whole trace in memory, as [`read_trace`] returns it; a reader of traces too big for memory
/// takes [`TraceFile`]'s batches one at a time instead.
#[derive(Debug, Clone)]
pub struct Trace {
    /// What the file said about itself.
    pub info: FileInfo,
    /// The events of known kinds, in file order.
    pub events: Vec<Event>,
    /// Kinds the contract does not define, with how many rows had each (ignored).
    pub unknown_kinds: BTreeMap<String, u64>,
}

/// The file's name without its encoding's extensions (`run.otlp.jsonl.gz` gives `run`; `-`,
/// standard input, gives `stdin`): the default `run_id` of OpenTelemetry spans.
pub fn file_stem(path: &Path) -> String {
    if is_stdin(path) {
        return "stdin".to_string();
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stem = name.as_str();
    for ext in [
        ".gz",
        ".zst",
        ".zstd",
        ".jsonl",
        ".ndjson",
        ".json",
        ".pb",
        ".binpb",
        ".bin",
        ".protobuf",
        ".otlp",
    ] {
        stem = stem.strip_suffix(ext).unwrap_or(stem);
    }
    if stem.is_empty() {
        name
    } else {
        stem.to_string()
    }
}

/// Opens and reads a whole trace file (`-`: standard input).
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    TraceFile::open(path)?.read_all()
}

fn check_type(column: &'static str, want: ColumnType, found: &DataType) -> Result<(), TraceError> {
    let ok = match want {
        ColumnType::Utf8 => is_string(found),
        ColumnType::UInt64 | ColumnType::UInt32 | ColumnType::Int64 => found.is_integer(),
    };
    if ok {
        Ok(())
    } else {
        Err(TraceError::WrongType {
            column,
            found: found.to_string(),
            expected: expected_name(want),
        })
    }
}

fn is_string(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string(value),
        _ => false,
    }
}

fn expected_name(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Utf8 => "a string (Utf8)",
        ColumnType::UInt64 => "an integer that fits UInt64",
        ColumnType::UInt32 => "an integer that fits UInt32",
        ColumnType::Int64 => "an integer that fits Int64",
    }
}

/// The file's metadata with a schema hint that reads the canonical columns `dictionary` (positions
/// in [`COLUMNS`], found at file columns `roots`) as dictionaries; `None` when the file's columns
/// cannot be read that way (the caller then reads them as they are).
fn dictionary_hint(
    metadata: &ArrowReaderMetadata,
    roots: &[usize],
    dictionary: &[usize],
) -> Option<ArrowReaderMetadata> {
    if dictionary.is_empty() {
        return None;
    }
    // The hint must match the schema Parquet itself implies (not the embedded Arrow one).
    let plain = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let inferred = ArrowReaderMetadata::try_new(metadata.metadata().clone(), plain).ok()?;
    let mut fields: Vec<Field> = inferred
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for &i in dictionary {
        let field = fields.get_mut(*roots.get(i)?)?;
        *field = Field::new(field.name(), dictionary_type(), field.is_nullable());
    }
    let hint = ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields)));
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), hint).ok()
}

/// `batch` with a constant text column (all null for `None`) appended per value of `fills`.
fn with_fills(batch: RecordBatch, fills: &[Option<String>]) -> Result<RecordBatch, TraceError> {
    if fills.is_empty() {
        return Ok(batch);
    }
    let rows = batch.num_rows();
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns = batch.columns().to_vec();
    for (k, value) in fills.iter().enumerate() {
        fields.push(Field::new(
            format!("fill {k}"),
            DataType::Utf8,
            value.is_none(),
        ));
        columns.push(Arc::new(arrow_array::StringArray::from(vec![
            value
                .as_deref(
                );
            rows
        ])));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// An error of one file of a partitioned directory, naming the file.
fn in_file(path: &Path, e: TraceError) -> TraceError {
    match e {
        e @ TraceError::Io { .. } => e,
        other => TraceError::InFile {
            path: path.to_path_buf(),
            error: Box::new(other),
        },
    }
}

/// The canonical schema with `types`; a skipped column is nullable, required or not.
fn batch_schema(types: &[DataType], skipped: &[bool]) -> SchemaRef {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .zip(types)
            .zip(skipped)
            .map(|((c, t), &skip)| Field::new(c.name, t.clone(), c.nullable || skip))
            .collect::<Vec<_>>(),
    ))
}

/// The types of the canonical columns as `options` ask for them: a string column named in
/// [`ReadOptions::dictionary`] as a dictionary, every other column in its canonical type.
fn requested_types(options: &ReadOptions) -> Vec<DataType> {
    COLUMNS
        .iter()
        .map(|c| {
            if c.data_type == ColumnType::Utf8 && options.dictionary.contains(&c.name) {
                dictionary_type()
            } else {
                c.data_type.arrow()
            }
        })
        .collect()
}

/// For each canonical column, whether `options` skip it.
fn skipped(options: &ReadOptions) -> Vec<bool> {
    COLUMNS
        .iter()
        .map(|c| options.skip.contains(&c.name))
        .collect()
}

/// The all-null arrays handed out for skipped columns: one per column, as long as the longest
/// batch yet, sliced (without copying) to each batch's length.
struct Skipped {
    /// Per canonical column: its type when skipped, and its null array so far.
    columns: Vec<Option<(DataType, ArrayRef)>>,
}

impl Skipped {
    fn new(skipped: &[bool], types: &[DataType]) -> Self {
        let columns = skipped
            .iter()
            .zip(types)
            .map(|(&skip, t)| skip.then(|| (t.clone(), arrow_array::new_null_array(t, 0))))
            .collect();
        Skipped { columns }
    }

    /// The null array of column `i` for a batch of `rows`, if the column is skipped.
    fn column(&mut self, i: usize, rows: usize) -> Option<ArrayRef> {
        let (data_type, nulls) = self.columns.get_mut(i)?.as_mut()?;
        if nulls.len() < rows {
            *nulls = arrow_array::new_null_array(data_type, rows.max(BATCH_ROWS));
        }
        Some(nulls.slice(0, rows))
    }
}

fn normalise(
    batch: &RecordBatch,
    order: &[usize],
    types: &[DataType],
    schema: &SchemaRef,
    skipped: &mut Skipped,
) -> Result<RecordBatch, TraceError> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(COLUMNS.len());
    for (i, ((column, &at), target)) in COLUMNS.iter().zip(order).zip(types).enumerate() {
        if let Some(nulls) = skipped.column(i, batch.num_rows()) {
            columns.push(nulls);
            continue;
        }
        let array = batch.column(at);
        let array = if array.data_type() == target {
            array.clone()
        } else {
            cast_with_options(array, target, &strict).map_err(|e| TraceError::OutOfRange {
                column: column.name,
                expected: expected_name(column.data_type),
                reason: e.to_string(),
            })?
        };
        if !column.nullable && array.null_count() > 0 {
            return Err(TraceError::NullInRequired {
                column: column.name,
                nulls: array.null_count(),
            });
        }
        columns.push(array);
    }
    let rows = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &rows,
    )?)
}

/// Detects a `seq` repeated within a run, in linear time when rows come in `seq` order (as the
/// recorder writes them) and by sorting otherwise.
#[derive(Debug, Default)]
pub struct SeqCheck {
    runs: HashMap<String, RunSeqs>,
}

#[derive(Debug, Default)]
struct RunSeqs {
    last: Option<u64>,
    sorted: bool,
    seqs: Vec<u64>,
}

impl SeqCheck {
    /// Records one row's `(run_id, seq)`.
    pub fn push(&mut self, run_id: &str, seq: u64) {
        let run = match self.runs.get_mut(run_id) {
            Some(run) => run,
            None => self.runs.entry(run_id.to_string()).or_insert(RunSeqs {
                sorted: true,
                ..Default::default()
            }),
        };
        if run.sorted {
            match run.last {
                Some(last) if seq <= last => run.sorted = false,
                _ => {}
            }
            run.last = Some(seq);
        }
        run.seqs.push(seq);
    }

    /// Fails on the first repeated `seq`.
    pub fn finish(self) -> Result<(), TraceError> {
        for (run_id, mut run) in self.runs {
            if run.sorted {
                continue;
            }
            run.seqs.sort_unstable();
            if let Some(w) = run.seqs.windows(2).find(|w| w[0] == w[1]) {
                return Err(TraceError::DuplicateSeq { run_id, seq: w[0] });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, TraceWriter};
    use arrow_array::cast::AsArray;

    fn events(n: u64) -> Vec<Event> {
        (1..=n)
            .map(|seq| {
                let mut e = Event::new(if seq % 2 == 0 {
                    Kind::Acked
                } else {
                    Kind::Delivered
                });
                e.run_id = "run".into();
                e.scenario = "s".into();
                e.backend = "b".into();
                e.actor = "worker".into();
                e.seq = seq;
                e.event_id = Some(format!("evt-{}", seq / 2));
                e
            })
            .collect()
    }

    /// A Parquet file of `events` in a fresh directory (kept while the first value lives).
    fn written(events: &[Event]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let mut w = TraceWriter::create(&path, None).unwrap();
        w.write(events).unwrap();
        w.finish().unwrap();
        (dir, path)
    }

    #[test]
    fn dictionary_option_reads_the_same_values_as_dictionaries() {
        let (_dir, path) = written(&events(100));
        let options = ReadOptions {
            dictionary: vec!["kind", "event_id", "seq"],
            ..ReadOptions::default()
        };
        let file = TraceFile::open_with(&path, &options).unwrap();
        let schema = file.schema();
        assert_eq!(schema.field(7).data_type(), &dictionary_type());
        assert_eq!(schema.field(9).data_type(), &dictionary_type());
        // Not a string column: ignored.
        assert_eq!(schema.field(2).data_type(), &DataType::UInt64);
        let batches: Vec<RecordBatch> = file.batches().map(Result::unwrap).collect();
        let kinds = cast_with_options(
            batches[0].column(7),
            &DataType::Utf8,
            &CastOptions::default(),
        )
        .unwrap();
        assert_eq!(kinds.as_string::<i32>().value(1), "acked");
        let plain = read_trace(&path).unwrap();
        assert_eq!(plain.events, events(100));
        assert_eq!(file_rows(&batches), 100);
    }

    #[test]
    fn skip_option_hands_out_nulls_and_reads_the_rest() {
        let (_dir, path) = written(&events(100));
        let options = ReadOptions {
            dictionary: vec!["event_id"],
            skip: vec!["ts_ns", "event_id", "no_such_column"],
            ..ReadOptions::default()
        };
        let file = TraceFile::open_with(&path, &options).unwrap();
        let schema = file.schema();
        assert!(schema.field(3).is_nullable());
        assert_eq!(schema.field(3).data_type(), &DataType::Int64);
        assert_eq!(schema.field(9).data_type(), &dictionary_type());
        assert!(!schema.field(2).is_nullable());
        let batches: Vec<RecordBatch> = file.batches().map(Result::unwrap).collect();
        assert_eq!(file_rows(&batches), 100);
        let batch = &batches[0];
        assert_eq!(batch.schema(), schema);
        assert_eq!(batch.column(3).null_count(), batch.num_rows());
        assert_eq!(batch.column(9).null_count(), batch.num_rows());
        let seqs = batch
            .column(2)
            .as_primitive::<arrow_array::types::UInt64Type>();
        assert_eq!(seqs.value(0), 1);
        assert_eq!(seqs.null_count(), 0);
    }

    #[test]
    fn row_groups_option_reads_only_those() {
        let (_dir, path) = written(&events(10));
        let all = TraceFile::open_with(&path, &ReadOptions::default()).unwrap();
        assert_eq!(all.info().row_groups, 1);
        let none = ReadOptions {
            row_groups: Some(vec![]),
            ..ReadOptions::default()
        };
        let file = TraceFile::open_with(&path, &none).unwrap();
        assert_eq!(
            file_rows(&file.batches().map(Result::unwrap).collect::<Vec<_>>()),
            0
        );
    }

    #[test]
    fn a_file_without_the_optional_counter_key_reads_it_as_null() {
        let mut rows = events(4);
        rows[1].counter_key = Some("apple".into());
        let full = crate::to_batch(&rows).unwrap();
        let at = crate::schema::column("counter_key");
        let mut fields: Vec<Field> = full
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut columns = full.columns().to_vec();
        fields.remove(at);
        columns.remove(at);
        let without = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.parquet");
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).unwrap(),
            without.schema(),
            None,
        )
        .unwrap();
        w.write(&without).unwrap();
        w.close().unwrap();
        let back = read_trace(&path).unwrap();
        rows[1].counter_key = None;
        assert_eq!(back.events, rows);
        // With the column, its values come back.
        let (_dir, path) = written(&{
            let mut rows = events(4);
            rows[1].counter_key = Some("apple".into());
            rows
        });
        let back = read_trace(&path).unwrap();
        assert_eq!(back.events[1].counter_key.as_deref(), Some("apple"));
        // A required column is still required.
        let mut fields: Vec<Field> = full
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut columns = full.columns().to_vec();
        let event_id = crate::schema::column("run_id");
        fields.remove(event_id);
        columns.remove(event_id);
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(
            File::create(&path).unwrap(),
            batch.schema(),
            None,
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert!(matches!(
            read_trace(&path),
            Err(TraceError::MissingColumn("run_id"))
        ));
    }

    fn file_rows(batches: &[RecordBatch]) -> usize {
        batches.iter().map(RecordBatch::num_rows).sum()
    }
}
