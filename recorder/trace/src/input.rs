//! Which encoding a trace is in, told by its content rather than its name, and the decoded
//! stream to read it from.
//!
//! - Parquet: the magic `PAR1`.
//! - Compression: gzip (magic `1f 8b`) or zstd (magic `28 b5 2f fd`), around any of the others
//!   but Parquet; what follows is told from the decompressed bytes.
//! - OTLP protobuf: the first byte is `0a` (field 1, length-delimited: `TracesData` and
//!   `ExportTraceServiceRequest` start so) and the first non-blank byte is not `{` or `[` (a text
//!   file may start with a blank line, which is also `0a`); the whole message must then decode.
//! - Text: the first non-blank line is a JSON object. With a `resourceSpans` key it is OTLP JSON
//!   Lines, else JSON Lines. A first line that is not a whole JSON value but opens an object
//!   whose first key is `resourceSpans` starts one OTLP JSON document (a `TracesData` object spread
//!   over lines); any other document spread over lines is refused with a line saying how to turn
//!   it into JSON Lines.
//!
//! The path `-` is standard input, read once: Parquet is spooled to an anonymous temporary file
//! (its footer is at the end), every other encoding is decoded as it streams in.
//!
//! The text encodings are decoded into canonical batches (see the `jsonl` module and
//! [`crate::otlp`]), so every reader of a trace sees one shape whatever the file was.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

use arrow_array::RecordBatch;

use crate::writer::batch_with_kinds;
use crate::{Event, TraceError};

/// Rows per decoded batch.
pub(crate) const CHUNK_ROWS: usize = 64 * 1024;

/// The longest first line looked at to tell JSON Lines from OTLP JSON Lines.
const SNIFF_LINE: u64 = 64 << 20;

/// The path that names standard input.
pub const STDIN: &str = "-";

/// The encodings a trace may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encoding {
    /// Apache Parquet, the reference encoding.
    #[default]
    Parquet,
    /// One event per line, keys = the contract's column names.
    JsonLines,
    /// OpenTelemetry spans: one OTLP `TracesData` JSON object per line.
    OtlpJsonLines,
    /// OpenTelemetry spans: one OTLP `TracesData` JSON object, spread over lines.
    OtlpJson,
    /// OpenTelemetry spans: one OTLP protobuf `TracesData` (or `ExportTraceServiceRequest`)
    /// message.
    OtlpProtobuf,
}

impl Encoding {
    /// A short name for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Parquet => "Parquet",
            Encoding::JsonLines => "JSON Lines",
            Encoding::OtlpJsonLines => "OTLP JSON Lines",
            Encoding::OtlpJson => "OTLP JSON",
            Encoding::OtlpProtobuf => "OTLP protobuf",
        }
    }
}

/// How the bytes of a trace are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip, told by the magic bytes `1f 8b`.
    Gzip,
    /// Zstandard, told by the magic bytes `28 b5 2f fd`.
    Zstd,
}

impl Compression {
    fn prefix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => "gzip: ",
            Compression::Zstd => "zstd: ",
        }
    }
}

/// A byte stream to read once, buffered.
pub(crate) type Stream = Box<dyn BufRead + Send>;

/// A trace told apart: its encoding, its compression, and its decompressed bytes from the start
/// (nothing the sniffing read is lost).
pub(crate) struct Opened {
    pub encoding: Encoding,
    pub compression: Compression,
    pub stream: Stream,
}

/// Tells the encoding of `path` (`-`: standard input, which is then used up) from its first
/// bytes (and, for text, its first non-blank line). An empty file, or one whose text has no
/// line, is [`TraceError::EmptyFile`] or [`TraceError::Empty`].
pub fn sniff(path: &Path) -> Result<(Encoding, Compression), TraceError> {
    let opened = open(path)?;
    Ok((opened.encoding, opened.compression))
}

/// Opens `path` (`-`: standard input) and tells its encoding.
pub(crate) fn open(path: &Path) -> Result<Opened, TraceError> {
    if is_stdin(path) {
        let stdin: Stream = Box::new(BufReader::with_capacity(1 << 20, std::io::stdin()));
        return open_stream(stdin, path);
    }
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    open_stream(Box::new(BufReader::with_capacity(1 << 20, file)), path)
}

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Tells the encoding of `raw`, the bytes of `path`.
pub(crate) fn open_stream(mut raw: Stream, path: &Path) -> Result<Opened, TraceError> {
    let magic = read_prefix(&mut raw, 4).map_err(|e| TraceError::io(path, e))?;
    if magic.is_empty() {
        // A Parquet file by name would hold its footer at the end: say what is missing.
        let parquet_name = path.extension().is_some_and(|e| e == "parquet");
        return Err(TraceError::EmptyFile(if parquet_name {
            "0 bytes, no Parquet footer"
        } else {
            "0 bytes"
        }));
    }
    let compression = if magic.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if magic == [0x28, 0xb5, 0x2f, 0xfd] {
        Compression::Zstd
    } else {
        Compression::None
    };
    let parquet = magic == b"PAR1";
    let raw: Stream = Box::new(Cursor::new(magic).chain(raw));
    if parquet {
        return Ok(Opened {
            encoding: Encoding::Parquet,
            compression,
            stream: raw,
        });
    }
    let mut text: Stream = match compression {
        Compression::None => raw,
        Compression::Gzip => Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(raw),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            1 << 20,
            zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| TraceError::io(path, e))?,
        )),
    };
    let first = text
        .fill_buf()
        .map_err(|e| not_a_trace(compression, &e.to_string()))?
        .first()
        .copied();
    let Some(first) = first else {
        return Err(TraceError::EmptyFile(match compression {
            Compression::None => "0 bytes",
            Compression::Gzip => "0 bytes after gzip decompression",
            Compression::Zstd => "0 bytes after zstd decompression",
        }));
    };
    // The lines read to tell the encoding, handed back in front of the rest.
    let mut seen = Vec::new();
    let encoding = sniff_text(&mut text, &mut seen, compression, first)?;
    Ok(Opened {
        encoding,
        compression,
        stream: Box::new(Cursor::new(seen).chain(text)),
    })
}

/// Reads up to `n` bytes (fewer only at the end of the stream).
fn read_prefix(raw: &mut Stream, n: usize) -> std::io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(n);
    Read::take(&mut **raw, n as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// Tells a decompressed stream's encoding from its first non-blank line, keeping every byte read
/// in `seen`.
fn sniff_text(
    text: &mut Stream,
    seen: &mut Vec<u8>,
    compression: Compression,
    first: u8,
) -> Result<Encoding, TraceError> {
    let line = loop {
        let from = seen.len();
        let n = Read::take(&mut **text, SNIFF_LINE)
            .read_until(b'\n', seen)
            .map_err(|e| not_a_trace(compression, &e.to_string()))?;
        if n == 0 {
            return Err(TraceError::Empty);
        }
        if !seen[from..].iter().all(u8::is_ascii_whitespace) {
            break from;
        }
    };
    let opening = seen[line..]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    if first == 0x0a && !matches!(opening, Some(b'{' | b'[')) {
        return Ok(Encoding::OtlpProtobuf);
    }
    match serde_json::from_slice::<serde_json::Value>(&seen[line..]) {
        Ok(serde_json::Value::Object(object)) => Ok(if object.contains_key("resourceSpans") {
            Encoding::OtlpJsonLines
        } else {
            Encoding::JsonLines
        }),
        Ok(_) => Err(not_a_trace(
            compression,
            "the first line is not a JSON object",
        )),
        Err(_) if matches!(opening, Some(b'{' | b'[')) => {
            if opening == Some(b'{') && opens_traces_data(text, seen, line, compression)? {
                Ok(Encoding::OtlpJson)
            } else if first == 0x0a {
                // Protobuf whose first bytes happen to read as blank lines and a brace.
                Ok(Encoding::OtlpProtobuf)
            } else {
                Err(not_a_trace(compression, SPREAD_DOCUMENT))
            }
        }
        Err(e) => Err(not_a_trace(compression, &format!("line 1: {e}"))),
    }
}

/// Why a JSON document spread over lines is refused, and how to fix it.
const SPREAD_DOCUMENT: &str = "one JSON document spread over several lines: \
    readers take JSON Lines or OTLP JSON Lines (one JSON object per line), or one OTLP \
    TracesData object; write one object per line, e.g. `jq -c '.[]' FILE` for an array of rows \
    or `jq -c . FILE` for one object";

/// Whether the object opened at `seen[from..]` has `resourceSpans` as its first key, reading
/// more lines into `seen` as needed.
fn opens_traces_data(
    text: &mut Stream,
    seen: &mut Vec<u8>,
    from: usize,
    compression: Compression,
) -> Result<bool, TraceError> {
    const KEY: &[u8] = b"{\"resourceSpans\"";
    loop {
        let squeezed: Vec<u8> = seen[from..]
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .take(KEY.len())
            .collect();
        if squeezed.len() >= KEY.len() {
            return Ok(squeezed == KEY);
        }
        let n = Read::take(&mut **text, SNIFF_LINE)
            .read_until(b'\n', seen)
            .map_err(|e| not_a_trace(compression, &e.to_string()))?;
        if n == 0 {
            return Ok(false);
        }
    }
}

fn not_a_trace(compression: Compression, reason: &str) -> TraceError {
    TraceError::NotATrace(format!("{}{reason}", compression.prefix()))
}

/// Reads the rest of a stream into memory (an OTLP protobuf message is decoded whole).
pub(crate) fn read_all(
    mut stream: Stream,
    compression: Compression,
) -> Result<Vec<u8>, TraceError> {
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .map_err(|e| not_a_trace(compression, &e.to_string()))?;
    Ok(bytes)
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
