//! What a reader is asked and what a file says about itself: the opt-in read options, the file's
//! information learned before any row is read, the batch size, and a file's stem (the default
//! `run_id` of spans).

use std::path::{Path, PathBuf};

use arrow_schema::DataType;

use crate::input::{Encoding, Tally};
use crate::spool::is_stdin;

/// Rows per batch handed out by [`TraceFile::batches`].
pub(super) const BATCH_ROWS: usize = 16 * 1024;

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
