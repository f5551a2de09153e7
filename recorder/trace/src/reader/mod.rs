//! Reading any `outbox-trace/1` Parquet file: the recorder's own, or one written by pyarrow, DuckDB
//! or pandas. Columns are validated and normalised to the canonical types batch by batch, so a large
//! file streams in bounded memory.
//!
//! A trace opens by what it is (`parquet_file`, `decoded` for the text encodings and streams,
//! `dir` for a partitioned directory); its batches come from a `source` and leave `normalise`d
//! to the canonical schema. `guard` turns a decoder's panic into an error, and `seq` checks that
//! no `seq` repeats within a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};

use crate::input::{open, open_stream, Encoding, Stream, Tally};
use crate::schema::batch_events;
use crate::spool::is_stdin;
use crate::{Event, TraceError};

mod decoded;
mod dir;
mod guard;
mod normalise;
mod parquet_file;
mod seq;
mod source;
#[cfg(test)]
mod tests;

pub use guard::guarded;
pub use seq::SeqCheck;

use normalise::{batch_schema, normalise, with_fills, Skipped};
use source::Source;

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
