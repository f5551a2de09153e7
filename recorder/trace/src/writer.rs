//! Writing events to an `outbox-trace/1` Parquet file.
//!
//! A long write can be made safe to cut short: [`TraceWriter::checkpoint`] ends the row group in
//! progress and writes a footer for every row group so far, so the file cut at the returned length
//! is a complete trace of those rows (later row groups are written after it; a Parquet reader
//! finds its column chunks by their offsets, so the footers left behind are never read).
//!
//! The Parquet crate in use (parquet 60) writes no page checksums (its page headers carry no CRC
//! when writing; it verifies them when reading with its `crc` feature).

use std::fs::File;
use std::io::Write;
use std::path::Path;

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::RecordBatch;
use parquet::arrow::{encode_arrow_schema, ArrowWriter, ARROW_SCHEMA_META_KEY};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{FileMetaData, KeyValue, ParquetMetaData, ParquetMetaDataWriter};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::schema::{
    event_arrays, schema, ColumnType, COLUMNS, META_RUN, META_SCHEMA_VERSION, META_SEQ_SOURCE,
    SCHEMA_VERSION, SEQ_FROM_SPAN_CLOCKS,
};
use crate::{Event, TraceError};

/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Room for a string column's dictionary in a row group: enough for a million distinct ids, so a
/// row group's ids stay dictionary-encoded rather than falling back to plain pages part of the way
/// (a reader then hands out one dictionary per row group, each value once). The numeric columns
/// and `detail` are written plain: most of their values are distinct, and a dictionary would only
/// be given up.
const DICTIONARY_PAGE_BYTES: usize = 64 << 20;

/// What a written file says about itself, besides its schema version; a read file's is
/// [`crate::FileInfo::metadata`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    /// The recorder's configuration as JSON (`outbox_trace.run`).
    pub run_json: Option<String>,
    /// `seq` was derived from span times on separate clocks (`outbox_trace.seq_source` =
    /// `span-clocks`).
    pub seq_from_clocks: bool,
}

/// Writes events as `outbox-trace/1` Parquet: zstd, dictionary-encoded strings, schema version in
/// the file metadata. Rows are written in the order given.
pub struct TraceWriter<W: Write + Send> {
    inner: ArrowWriter<W>,
    /// The footer's key-value metadata and `created_by`, for [`TraceWriter::checkpoint`].
    metadata: Vec<KeyValue>,
    created_by: String,
    version: i32,
}

impl TraceWriter<File> {
    /// Creates (or truncates) `path`. `run_json` becomes the `outbox_trace.run` metadata.
    pub fn create(path: &Path, run_json: Option<&str>) -> Result<Self, TraceError> {
        let file = File::create(path).map_err(|e| TraceError::io(path, e))?;
        Self::new(file, run_json)
    }

    /// Creates (or truncates) `path`, writing `metadata` in the file's key-value metadata.
    pub fn create_with(path: &Path, metadata: &Metadata) -> Result<Self, TraceError> {
        let file = File::create(path).map_err(|e| TraceError::io(path, e))?;
        Self::with_metadata(file, metadata)
    }
}

impl<W: Write + Send> TraceWriter<W> {
    /// Writes to any sink.
    pub fn new(sink: W, run_json: Option<&str>) -> Result<Self, TraceError> {
        let metadata = Metadata {
            run_json: run_json.map(str::to_string),
            ..Metadata::default()
        };
        Self::with_metadata(sink, &metadata)
    }

    /// Writes to any sink, with `metadata` in the file's key-value metadata.
    pub fn with_metadata(sink: W, meta: &Metadata) -> Result<Self, TraceError> {
        let mut metadata = vec![KeyValue::new(
            META_SCHEMA_VERSION.to_string(),
            SCHEMA_VERSION.to_string(),
        )];
        if let Some(run) = &meta.run_json {
            metadata.push(KeyValue::new(META_RUN.to_string(), run.clone()));
        }
        if meta.seq_from_clocks {
            metadata.push(KeyValue::new(
                META_SEQ_SOURCE.to_string(),
                SEQ_FROM_SPAN_CLOCKS.to_string(),
            ));
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("valid level"),
            ))
            .set_dictionary_enabled(false)
            .set_dictionary_page_size_limit(DICTIONARY_PAGE_BYTES)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(metadata.clone()));
        let props = COLUMNS
            .iter()
            .filter(|c| c.data_type == ColumnType::Utf8 && c.name != "detail")
            .fold(props, |props, c| {
                props.set_column_dictionary_enabled(ColumnPath::from(c.name), true)
            })
            .build();
        let created_by = props.created_by().to_string();
        let version = props.writer_version().as_num();
        // The Arrow schema, as the writer adds it to the final footer.
        metadata.push(KeyValue::new(
            ARROW_SCHEMA_META_KEY.to_string(),
            encode_arrow_schema(&schema()),
        ));
        let inner = ArrowWriter::try_new(sink, schema(), Some(props))?;
        Ok(TraceWriter {
            inner,
            metadata,
            created_by,
            version,
        })
    }

    /// Rows written but not yet in a finished row group.
    pub fn buffered_rows(&self) -> usize {
        self.inner.in_progress_rows()
    }

    /// Ends the row group in progress and writes a footer for every row group so far. Returns
    /// the length at which the file is a complete trace of every row written, or `None` if no
    /// row was written yet. The caller makes the bytes durable ([`TraceWriter::sync`]).
    pub fn checkpoint(&mut self) -> Result<Option<u64>, TraceError> {
        self.inner.flush()?;
        let groups = self.inner.flushed_row_groups().to_vec();
        let Some(first) = groups.first() else {
            return Ok(None);
        };
        let rows = groups.iter().map(|g| g.num_rows()).sum();
        let file = FileMetaData::new(
            self.version,
            rows,
            Some(self.created_by.clone()),
            Some(self.metadata.clone()),
            first.schema_descr_ptr(),
            None,
        );
        let mut footer = Vec::new();
        ParquetMetaDataWriter::new(&mut footer, &ParquetMetaData::new(file, groups)).finish()?;
        self.inner
            .write_all(&footer)
            .map_err(parquet::errors::ParquetError::from)?;
        self.inner
            .sync()
            .map_err(parquet::errors::ParquetError::from)?;
        Ok(Some(self.inner.bytes_written() as u64))
    }

    /// The sink, to make what was written durable after a checkpoint.
    pub fn sink(&self) -> &W {
        self.inner.inner()
    }

    /// Appends events.
    pub fn write(&mut self, events: &[Event]) -> Result<(), TraceError> {
        if events.is_empty() {
            return Ok(());
        }
        self.write_batch(&to_batch(events)?)
    }

    /// Appends a batch already in the canonical schema (see [`crate::schema::schema()`]).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), TraceError> {
        self.inner.write(batch)?;
        Ok(())
    }

    /// Writes the footer and returns the sink.
    pub fn finish(self) -> Result<W, TraceError> {
        Ok(self.inner.into_inner()?)
    }
}

/// Converts events to one record batch in the canonical schema.
pub fn to_batch(events: &[Event]) -> Result<RecordBatch, TraceError> {
    batch_with_kinds(events, &|i| events[i].kind.as_str())
}

/// Like [`to_batch`], with the `kind` column taken from `kind` (a reader keeps the names of kinds
/// the contract does not define this way, so they are counted like Parquet rows of such kinds).
pub(crate) fn batch_with_kinds<'a>(
    events: &'a [Event],
    kind: &dyn Fn(usize) -> &'a str,
) -> Result<RecordBatch, TraceError> {
    let mut columns = event_arrays(events);
    let mut kinds = StringBuilder::with_capacity(events.len(), events.len() * 12);
    for i in 0..events.len() {
        kinds.append_value(kind(i));
    }
    columns[crate::schema::column("kind")] = Arc::new(kinds.finish());
    Ok(RecordBatch::try_new(schema(), columns)?)
}
