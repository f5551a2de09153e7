//! A trace in a text encoding (JSON Lines, OTLP spans), or Parquet arriving on a stream: opened
//! from its stream and decoded as it streams in.

use std::path::Path;

use crate::input::{read_all, Encoding, Opened, Tally};
use crate::schema::COLUMNS;
use crate::TraceError;

use super::normalise::{requested_types, skipped};
use super::options::{file_stem, FileInfo, ReadOptions};
use super::source::{Batches, Source};
use super::TraceFile;

impl TraceFile {
    /// A trace read from the stream `opened`: Parquet is spooled to an anonymous temporary file
    /// (its footer is at the end), the other encodings are decoded as they stream in.
    pub(super) fn open_decoded(
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
}
