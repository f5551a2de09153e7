//! Where a trace's batches come from: a Parquet decoder, a text decoder, or the files of a
//! partitioned directory one after the other.

use std::fs::File;
use std::path::Path;

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;

use super::options::ReadOptions;
use crate::TraceError;

/// Batches decoded from a text encoding.
pub(super) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, TraceError>> + Send>;

/// Where a file's batches come from.
pub(super) enum Source {
    /// A Parquet decoder, and the file it reads (to tell which page a checksum failed in).
    Parquet(ParquetRecordBatchReader, Option<File>),
    /// Batches decoded from a text encoding, in the canonical schema with plain strings: as the
    /// text streams in (JSON Lines), or from the whole file (OTLP spans).
    Decoded(Batches),
    /// The files of a partitioned directory, one after the other, each in canonical order.
    Many(Many),
}

/// Opens one Parquet file of a partitioned directory (its path, how to read it, the partition
/// columns its path fills) as batches.
pub(super) type OpenPart =
    fn(&Path, &ReadOptions, &[(&'static str, String)]) -> Result<Batches, TraceError>;

/// The files of a partitioned directory still to read, and the one being read.
pub(super) struct Many {
    pub(super) parts: std::collections::VecDeque<(crate::partitioned::Part, Option<Vec<usize>>)>,
    pub(super) options: ReadOptions,
    pub(super) open: OpenPart,
    pub(super) current: Option<Box<dyn Iterator<Item = Result<RecordBatch, TraceError>> + Send>>,
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
            match (self.open)(&part.path, &options, &part.fills) {
                Ok(batches) => self.current = Some(batches),
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

/// An error of one file of a partitioned directory, naming the file.
pub(super) fn in_file(path: &Path, e: TraceError) -> TraceError {
    match e {
        e @ TraceError::Io { .. } => e,
        other => TraceError::InFile {
            path: path.to_path_buf(),
            error: Box::new(other),
        },
    }
}
