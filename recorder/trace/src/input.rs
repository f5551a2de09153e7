//! Which encoding a trace file is in, told by its content rather than its name: Parquet (magic
//! `PAR1`), JSON Lines or OTLP JSON Lines, each plain, gzip (magic `1f 8b`) or zstd (magic
//! `28 b5 2f fd`). The text encodings are decoded into canonical batches (see the `jsonl` module and
//! [`crate::otlp`]), so every reader of a trace sees one shape whatever the file was.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use arrow_array::RecordBatch;

use crate::writer::batch_with_kinds;
use crate::{Event, TraceError};

/// Rows per decoded batch.
pub(crate) const CHUNK_ROWS: usize = 64 * 1024;

/// The longest first line looked at to tell JSON Lines from OTLP JSON Lines.
const SNIFF_LINE: u64 = 64 << 20;

/// The encodings a trace file may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Apache Parquet, the reference encoding.
    #[default]
    Parquet,
    /// One event per line, keys = the contract's column names.
    JsonLines,
    /// OpenTelemetry spans: one OTLP `TracesData` JSON object per line.
    OtlpJsonLines,
}

impl Encoding {
    /// A short name for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Parquet => "Parquet",
            Encoding::JsonLines => "JSON Lines",
            Encoding::OtlpJsonLines => "OTLP JSON Lines",
        }
    }
}

/// How the text of a JSON Lines file is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip, told by the magic bytes `1f 8b`.
    Gzip,
    /// Zstandard, told by the magic bytes `28 b5 2f fd`.
    Zstd,
}

/// Tells the encoding of `path` from its first bytes (and, for text, its first non-blank line).
/// An empty file, or one whose text has no line, is [`TraceError::Empty`].
pub fn sniff(path: &Path) -> Result<(Encoding, Compression), TraceError> {
    let mut file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    let mut magic = [0u8; 4];
    let mut got = 0;
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TraceError::io(path, e)),
        }
    }
    let magic = &magic[..got];
    if magic.is_empty() {
        return Err(TraceError::EmptyFile);
    }
    if magic == b"PAR1" {
        return Ok((Encoding::Parquet, Compression::None));
    }
    let compression = if magic.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        Compression::Zstd
    } else {
        Compression::None
    };
    let mut text = open_text(path, compression)?;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut text)
            .take(SNIFF_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| not_a_trace(compression, &e.to_string()))?;
        if n == 0 {
            return Err(TraceError::Empty);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: serde_json::Value = serde_json::from_slice(&line)
            .map_err(|e| not_a_trace(compression, &format!("line 1: {e}")))?;
        let Some(object) = value.as_object() else {
            return Err(not_a_trace(
                compression,
                "the first line is not a JSON object",
            ));
        };
        let encoding = if object.contains_key("resourceSpans") {
            Encoding::OtlpJsonLines
        } else {
            Encoding::JsonLines
        };
        return Ok((encoding, compression));
    }
}

fn not_a_trace(compression: Compression, reason: &str) -> TraceError {
    let how = match compression {
        Compression::None => "",
        Compression::Gzip => "gzip: ",
        Compression::Zstd => "zstd: ",
    };
    TraceError::NotATrace(format!("{how}{reason}"))
}

/// The decompressed text of `path`, buffered.
pub(crate) fn open_text(
    path: &Path,
    compression: Compression,
) -> Result<Box<dyn BufRead + Send>, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    Ok(match compression {
        Compression::None => Box::new(BufReader::with_capacity(1 << 20, file)),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(BufReader::new(file)),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            1 << 20,
            zstd::stream::read::Decoder::new(file).map_err(|e| TraceError::io(path, e))?,
        )),
    })
}

/// Reads `text` line by line, calling `each` with the 1-based line number and every non-blank
/// line. Errors name the line.
pub(crate) fn lines(
    mut text: impl BufRead,
    mut each: impl FnMut(u64, &str) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        buf.clear();
        let n = text
            .read_until(b'\n', &mut buf)
            .map_err(|e| TraceError::Line {
                line: number + 1,
                reason: format!("cannot read: {e}"),
            })?;
        if n == 0 {
            return Ok(());
        }
        number += 1;
        let line = std::str::from_utf8(&buf).map_err(|_| TraceError::Line {
            line: number,
            reason: "not UTF-8 text".into(),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        each(number, line)?;
    }
}

/// A trace decoded from a text encoding: canonical batches (plain Utf8 strings) plus what the
/// file said about itself.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The rows, in chunks of at most [`CHUNK_ROWS`].
    pub batches: Vec<RecordBatch>,
    /// Number of rows.
    pub rows: u64,
    /// Whether the file declared `schema_version` `1`.
    pub version_declared: bool,
    /// The `run` object of the optional `outbox_trace` metadata line, as JSON text.
    pub run_json: Option<String>,
    /// Keys that are not columns of the contract.
    pub extra_columns: Vec<String>,
    /// Whether `seq` was derived from span times on separate clocks.
    pub seq_from_clocks: bool,
}

/// Collects rows and turns them into batches every [`CHUNK_ROWS`] rows. A row of a kind the
/// contract does not define keeps its kind's name, so readers count it as they do in Parquet.
#[derive(Default)]
pub(crate) struct Chunker {
    events: Vec<Event>,
    /// The name of each event's kind when it is not one of the contract's.
    unknown: Vec<Option<String>>,
    batches: Vec<RecordBatch>,
    rows: u64,
}

impl Chunker {
    pub fn push(&mut self, event: Event, unknown_kind: Option<String>) -> Result<(), TraceError> {
        self.events.push(event);
        self.unknown.push(unknown_kind);
        self.rows += 1;
        if self.events.len() >= CHUNK_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TraceError> {
        if self.events.is_empty() {
            return Ok(());
        }
        let (events, unknown) = (&self.events, &self.unknown);
        let batch = batch_with_kinds(events, &|i| {
            unknown[i]
                .as_deref()
                .unwrap_or_else(|| events[i].kind.as_str())
        })?;
        self.batches.push(batch);
        self.events.clear();
        self.unknown.clear();
        Ok(())
    }

    /// The batches and the number of rows; [`TraceError::Empty`] when there is none.
    pub fn finish(mut self) -> Result<(Vec<RecordBatch>, u64), TraceError> {
        self.flush()?;
        if self.rows == 0 {
            return Err(TraceError::Empty);
        }
        Ok((self.batches, self.rows))
    }
}
