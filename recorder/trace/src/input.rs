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
//! The path `-` is standard input and, like a FIFO named as a trace, is read once: its bytes are
//! spooled to an anonymous temporary file as they are first read, so a second reader of it reads
//! the spool (see [`crate::spool`]); Parquet is read from the spool once whole (its footer is at
//! the end), every other encoding is decoded as it streams in.
//!
//! The text encodings are decoded into canonical batches (see the `jsonl` module and
//! [`crate::otlp`]), so every reader of a trace sees one shape whatever the file was. No line is
//! read whole when it is longer than [`MAX_LINE_BYTES`]: such a line is bad input, said in one
//! line, and memory stays bounded whatever the file holds.

use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;

use crate::writer::batch_with_kinds;
use crate::{Event, TraceError};
use blank::skip_blank;
pub use blank::MAX_BLANK_BYTES;
mod blank;

/// Rows per decoded batch.
pub(crate) const CHUNK_ROWS: usize = 64 * 1024;

/// The longest line a text encoding may have (256 MiB): a longer line is bad input, found out
/// before it is read whole. The same cap bounds one OTLP JSON document and one OTLP protobuf
/// message, which are decoded whole.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// [`MAX_LINE_BYTES`] in words, for messages.
pub(crate) fn max_line_words() -> String {
    format!("{} MiB", MAX_LINE_BYTES >> 20)
}

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

/// Opens `path` (`-`: standard input; it and a FIFO are read through their spool, see
/// [`crate::spool`]) and tells its encoding.
pub(crate) fn open(path: &Path) -> Result<Opened, TraceError> {
    let raw = crate::spool::open(path)?;
    open_stream(Box::new(BufReader::with_capacity(1 << 20, raw)), path)
}

pub use crate::spool::{is_stdin, STDIN};

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
    let mut lines_seen = 0u64;
    let line = loop {
        // Blank lines are kept as they are (a protobuf message may start with such bytes), at
        // most MAX_BLANK_BYTES of them.
        lines_seen += skip_blank(&mut **text, Some(seen))
            .map_err(|e| not_a_trace(compression, &e.reason()))?
            .newlines;
        let from = seen.len();
        lines_seen += 1;
        let n = capped_line(&mut **text, seen)
            .map_err(|e| e.into_trace(lines_seen, |e| not_a_trace(compression, &e.to_string())))?;
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
    let lines_seen = &mut lines_seen;
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
            if opening == Some(b'{')
                && opens_traces_data(text, seen, line, compression, lines_seen)?
            {
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
    lines_seen: &mut u64,
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
        match skip_blank(&mut **text, Some(seen)) {
            Ok(skipped) => *lines_seen += skipped.newlines,
            // Too far from its first key to be the start of a TracesData.
            Err(blank::BlankError::TooLong { .. }) => return Ok(false),
            Err(e) => return Err(not_a_trace(compression, &e.reason())),
        }
        *lines_seen += 1;
        let n = capped_line(&mut **text, seen)
            .map_err(|e| e.into_trace(*lines_seen, |e| not_a_trace(compression, &e.to_string())))?;
        if n == 0 {
            return Ok(false);
        }
    }
}

fn not_a_trace(compression: Compression, reason: &str) -> TraceError {
    TraceError::NotATrace(format!("{}{reason}", compression.prefix()))
}

/// Why a line could not be read.
pub(crate) enum LineError {
    /// The line is longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// The stream failed.
    Io(std::io::Error),
}

impl LineError {
    /// The error for line `line`; `io` says what a failing stream means.
    pub(crate) fn into_trace(
        self,
        line: u64,
        io: impl FnOnce(std::io::Error) -> TraceError,
    ) -> TraceError {
        match self {
            LineError::TooLong => TraceError::Line {
                line,
                reason: format!(
                    "longer than {}, the most one line may hold (MAX_LINE_BYTES): one JSON object \
                     per line, one event (or one OTLP TracesData of a few spans) per object",
                    max_line_words()
                ),
            },
            LineError::Io(e) => io(e),
        }
    }
}

/// Appends one line (up to and with its `\n`) of `text` to `buf`, and its length; 0 at the end
/// of the stream. A line longer than [`MAX_LINE_BYTES`] is [`LineError::TooLong`] as soon as
/// that many bytes of it have been read, so no more than that is ever held.
pub(crate) fn capped_line(
    text: &mut (impl BufRead + ?Sized),
    buf: &mut Vec<u8>,
) -> Result<usize, LineError> {
    let mut n = 0usize;
    loop {
        let available = match text.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        if available.is_empty() {
            return Ok(n);
        }
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        // The newline does not count against the cap.
        if n + take > MAX_LINE_BYTES + usize::from(done) {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        text.consume(take);
        n += take;
        if done {
            return Ok(n);
        }
        if n > MAX_LINE_BYTES {
            return Err(LineError::TooLong);
        }
    }
}

/// Reads the rest of a stream into memory (an OTLP protobuf message is decoded whole), up to
/// [`MAX_LINE_BYTES`]: a longer message is bad input.
pub(crate) fn read_all(stream: Stream, compression: Compression) -> Result<Vec<u8>, TraceError> {
    let mut bytes = Vec::new();
    Read::take(stream, MAX_LINE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| not_a_trace(compression, &e.to_string()))?;
    if bytes.len() > MAX_LINE_BYTES {
        return Err(TraceError::Otlp(format!(
            "one OTLP protobuf message longer than {}, the most read whole (MAX_LINE_BYTES): \
             write spans as OTLP JSON Lines, one TracesData per line, to read any number",
            max_line_words()
        )));
    }
    Ok(bytes)
}

/// The non-blank lines of a text, one at a time, each at most [`MAX_LINE_BYTES`] long, at most
/// [`MAX_BLANK_BYTES`] of blank lines before each and after the last. Errors name the line.
pub(crate) struct Lines<R> {
    text: R,
    buf: Vec<u8>,
    number: u64,
}

impl<R: BufRead> Lines<R> {
    pub(crate) fn new(text: R) -> Self {
        Lines {
            text,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next non-blank line and its number; `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, &str)>, TraceError> {
        loop {
            self.buf.clear();
            if self.buf.capacity() > 4 << 20 {
                // One long line does not keep its buffer for the rest of the file.
                self.buf = Vec::new();
            }
            let blank = skip_blank(&mut self.text, None).map_err(|e| TraceError::Line {
                line: e.line(self.number),
                reason: e.reason(),
            })?;
            self.number += blank.newlines;
            let line = self.number + 1;
            let n = capped_line(&mut self.text, &mut self.buf).map_err(|e| {
                e.into_trace(line, |e| TraceError::Line {
                    line,
                    reason: format!("cannot read: {e}"),
                })
            })?;
            if n == 0 {
                return Ok(None);
            }
            self.number = line;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = std::str::from_utf8(&self.buf).map_err(|_| TraceError::Line {
                line,
                reason: "not UTF-8 text".into(),
            })?;
            return Ok(Some((line, text)));
        }
    }
}

/// Reads `text` line by line, calling `each` with the 1-based line number and every non-blank
/// line. Errors name the line.
pub(crate) fn lines(
    text: impl BufRead,
    mut each: impl FnMut(u64, &str) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let mut lines = Lines::new(text);
    while let Some((number, line)) = lines.next_line()? {
        each(number, line)?;
    }
    Ok(())
}

/// What a trace in a text encoding says about itself, known once its first lines are read.
#[derive(Debug, Default, Clone)]
pub(crate) struct Header {
    /// Whether the file declared `schema_version` `1`.
    pub version_declared: bool,
    /// The `run` object of the optional `outbox_trace` metadata line, as JSON text.
    pub run_json: Option<String>,
    /// Whether `seq` was derived from span times on separate clocks.
    pub seq_from_clocks: bool,
}

/// The batches of a [`Decoded`] trace, in order; an error (a spilled part that cannot be read
/// back) ends them.
pub(crate) type DecodedBatches = Box<dyn Iterator<Item = Result<RecordBatch, TraceError>> + Send>;

/// A trace in a text encoding whose every span has been read (OTLP spans, whose run-wide numbers
/// need the whole run; see [`crate::otlp`]): its canonical batches (plain Utf8 strings), built
/// as they are handed out when the mapping spilled to disk, plus what the file said about
/// itself.
pub(crate) struct Decoded {
    /// The rows, in chunks of at most [`CHUNK_ROWS`].
    pub batches: DecodedBatches,
    /// Number of rows.
    pub rows: u64,
    /// What the file said about itself.
    pub header: Header,
}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoded")
            .field("rows", &self.rows)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// What is known of a trace's rows only once they have all been read (a text encoding is
/// decoded as it streams): their number and the keys that are not columns of the contract.
/// Shared by a [`crate::TraceFile`] and the batches it hands out.
#[derive(Debug, Clone, Default)]
pub struct Tally(Arc<Mutex<Tallied>>);

#[derive(Debug, Default)]
struct Tallied {
    rows: u64,
    extra_columns: Vec<String>,
    complete: bool,
}

impl Tally {
    /// A tally known from the start (a Parquet file's footer says it all).
    pub(crate) fn known(rows: u64, extra_columns: Vec<String>) -> Self {
        Tally(Arc::new(Mutex::new(Tallied {
            rows,
            extra_columns,
            complete: true,
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tallied> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts `rows` more rows and the extra keys seen with them.
    pub(crate) fn add(&self, rows: u64, extra: &std::collections::BTreeSet<String>) {
        let mut t = self.lock();
        t.rows += rows;
        for key in extra {
            if !t.extra_columns.contains(key) {
                t.extra_columns.push(key.clone());
            }
        }
    }

    /// Marks every row read.
    pub(crate) fn complete(&self) {
        let mut t = self.lock();
        t.complete = true;
        t.extra_columns.sort();
    }

    /// The rows counted so far.
    pub fn rows(&self) -> u64 {
        self.lock().rows
    }

    /// Whether every row has been read, so [`Tally::rows`] is the file's number of rows.
    pub fn is_complete(&self) -> bool {
        self.lock().complete
    }

    /// The extra columns counted so far.
    pub fn extra_columns(&self) -> Vec<String> {
        self.lock().extra_columns.clone()
    }
}

/// Collects rows and turns them into a batch every [`CHUNK_ROWS`] rows. A row of a kind the
/// contract does not define keeps its kind's name, so readers count it as they do in Parquet.
#[derive(Default)]
pub(crate) struct Chunker {
    events: Vec<Event>,
    /// The name of each event's kind when it is not one of the contract's.
    unknown: Vec<Option<String>>,
    rows: u64,
}

impl Chunker {
    /// Takes one row; a full batch when this row completes one.
    pub fn push(
        &mut self,
        event: Event,
        unknown_kind: Option<String>,
    ) -> Result<Option<RecordBatch>, TraceError> {
        self.events.push(event);
        self.unknown.push(unknown_kind);
        self.rows += 1;
        if self.events.len() >= CHUNK_ROWS {
            return self.flush();
        }
        Ok(None)
    }

    /// The rows taken so far and not yet handed out, as a batch (`None`: there are none).
    pub fn flush(&mut self) -> Result<Option<RecordBatch>, TraceError> {
        if self.events.is_empty() {
            return Ok(None);
        }
        let (events, unknown) = (&self.events, &self.unknown);
        let batch = batch_with_kinds(events, &|i| {
            unknown[i]
                .as_deref()
                .unwrap_or_else(|| events[i].kind.as_str())
        })?;
        self.events.clear();
        self.unknown.clear();
        Ok(Some(batch))
    }

    /// Rows taken in all.
    #[cfg(test)]
    pub fn rows(&self) -> u64 {
        self.rows
    }
}
