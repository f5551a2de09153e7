//! Reading any `outbox-trace/1` Parquet file: the recorder's own, or one written by pyarrow, DuckDB
//! or pandas. Columns are validated and normalised to the canonical types batch by batch, so a large
//! file streams in bounded memory.
//!
//! A trace opens by what it is (`parquet_file`, `decoded` for the text encodings and streams,
//! `dir` for a partitioned directory); its batches come from a `source` and leave `normalise`d
//! to the canonical schema. `guard` turns a decoder's panic into an error, and `seq` checks that
//! no `seq` repeats within a run.

use std::collections::BTreeMap;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};

use crate::input::{open, open_stream, Encoding, Stream, Tally};
use crate::schema::batch_events;
use crate::{Event, TraceError};

mod decoded;
mod dir;
mod guard;
mod normalise;
mod options;
mod parquet_file;
mod seq;
mod source;
#[cfg(test)]
mod tests;

pub use guard::guarded;
pub use options::{dictionary_type, file_stem, FileInfo, ReadOptions};
pub use seq::SeqCheck;

use normalise::{batch_schema, normalise, with_fills, Skipped};
use source::Source;

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

/// Opens and reads a whole trace file (`-`: standard input).
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    TraceFile::open(path)?.read_all()
}
