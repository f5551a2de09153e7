//! Why a trace could not be written or read.

use std::path::{Path, PathBuf};

/// Everything that can go wrong with a trace file. Each message fits on one line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened, created or read.
    #[error("{path}: {source}")]
    Io {
        /// The path that could not be opened, created or read.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The bytes are not a readable Parquet file (not Parquet at all, truncated, or corrupt).
    #[error("not a readable Parquet file: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow could not build or convert a batch.
    #[error("bad column data: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The file declares a schema version this reader does not know.
    #[error("schema version `{0}` is not supported (this reader reads outbox-trace/1)")]
    SchemaVersion(String),
    /// A required column is absent.
    #[error("required column `{0}` is missing")]
    MissingColumn(&'static str),
    /// A column has a type the contract does not allow.
    #[error("column `{column}` has type {found}, expected {expected}")]
    WrongType {
        /// The column's name, as the contract spells it.
        column: &'static str,
        /// The column's type in the file, as Arrow prints it.
        found: String,
        /// The types the contract allows there, in words.
        expected: &'static str,
    },
    /// A value does not fit the contract's type (a negative `seq`, say).
    #[error("column `{column}` holds a value that does not fit {expected}: {reason}")]
    OutOfRange {
        /// The column's name, as the contract spells it.
        column: &'static str,
        /// The type the value must fit, in words.
        expected: &'static str,
        /// Arrow's explanation.
        reason: String,
    },
    /// A column that must not be null has a null.
    #[error("column `{column}` must not be null but has {nulls} null value(s)")]
    NullInRequired {
        /// The column's name, as the contract spells it.
        column: &'static str,
        /// How many nulls were found in the offending batch.
        nulls: usize,
    },
    /// Two rows of one run share a `seq`.
    #[error("run `{run_id}` repeats seq {seq}")]
    DuplicateSeq {
        /// The run whose rows share the `seq`.
        run_id: String,
        /// The first `seq` found twice; later repeats are not looked for.
        seq: u64,
    },
    /// A `detail` value, or the run metadata, is not valid JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The decoder failed on corrupt data (a panic inside the Parquet or Arrow decoder, caught).
    #[error("corrupt file: the decoder failed ({0})")]
    Corrupt(String),
    /// A Parquet page's CRC32 checksum does not match its bytes (the text says where).
    #[error("corrupt file: a page checksum (CRC32) does not match {0}")]
    PageChecksum(String),
    /// The file holds no rows.
    #[error("the file holds no events")]
    Empty,
    /// A directory given as a trace holds no `*.parquet` file.
    #[error("the directory holds no .parquet file, at any depth")]
    NoParquetFiles(PathBuf),
    /// A directory given as a trace holds a FIFO, a socket or a device file, which a walk never
    /// opens (a FIFO would wait for a writer).
    #[error("{}: {what} in the directory: name it on its own to read it (once), or move it out", path.display())]
    SpecialFile {
        /// The special file, below the directory given.
        path: PathBuf,
        /// What it is, in words ("a FIFO", "a socket", "a device file").
        what: &'static str,
    },
    /// A file of a partitioned directory breaks the contract.
    #[error("{}: {error}", path.display())]
    InFile {
        /// The file inside the directory.
        path: PathBuf,
        /// The error the file gives when read on its own.
        error: Box<TraceError>,
    },
    /// The file has no bytes at all (or none once decompressed: the text says which).
    #[error("the file is empty ({0}): no events")]
    EmptyFile(&'static str),
    /// The bytes are neither Parquet, nor JSON Lines, nor OTLP spans (plain, gzip or zstd).
    #[error("not a readable Parquet file, nor JSON Lines, nor OTLP spans: {0}")]
    NotATrace(String),
    /// OpenTelemetry spans that cannot be read or mapped (not an OTLP message, a time that is
    /// not a number, an attribute that does not fit its column).
    #[error("bad OTLP spans: {0}")]
    Otlp(String),
    /// The span events an OTLP file spills to a temporary file (see `otlp::file`) could not be
    /// written there (a full disk, say) or read back.
    #[error("cannot {what} the span events spilled to a temporary file (TMPDIR): {source}")]
    Spill {
        /// "write" or "read back".
        what: &'static str,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A line of a JSON Lines or OTLP JSON Lines file breaks the contract.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based line number (of the decompressed text).
        line: u64,
        /// Why the line was rejected (not UTF-8, not a JSON object, a wrong-typed column, ...).
        reason: String,
    },
}

impl TraceError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        TraceError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
