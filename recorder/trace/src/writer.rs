//! Writing events to an `outbox-trace/1` Parquet file.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::schema::{schema, META_RUN, META_SCHEMA_VERSION, SCHEMA_VERSION};
use crate::{Event, TraceError};

/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// Writes events as `outbox-trace/1` Parquet: zstd, dictionary-encoded strings, schema version in
/// the file metadata. Rows are written in the order given.
pub struct TraceWriter<W: Write + Send> {
    inner: ArrowWriter<W>,
}

impl TraceWriter<File> {
    /// Creates (or truncates) `path`. `run_json` becomes the `outbox_trace.run` metadata.
    pub fn create(path: &Path, run_json: Option<&str>) -> Result<Self, TraceError> {
        let file = File::create(path).map_err(|e| TraceError::io(path, e))?;
        Self::new(file, run_json)
    }
}

impl<W: Write + Send> TraceWriter<W> {
    /// Writes to any sink.
    pub fn new(sink: W, run_json: Option<&str>) -> Result<Self, TraceError> {
        let mut metadata = vec![KeyValue::new(
            META_SCHEMA_VERSION.to_string(),
            SCHEMA_VERSION.to_string(),
        )];
        if let Some(run) = run_json {
            metadata.push(KeyValue::new(META_RUN.to_string(), run.to_string()));
        }
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).expect("valid level"),
            ))
            .set_dictionary_enabled(true)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(metadata))
            .build();
        let inner = ArrowWriter::try_new(sink, schema(), Some(props))?;
        Ok(TraceWriter { inner })
    }

    /// Appends events.
    pub fn write(&mut self, events: &[Event]) -> Result<(), TraceError> {
        if events.is_empty() {
            return Ok(());
        }
        self.write_batch(&to_batch(events)?)
    }

    /// Appends a batch already in the canonical schema (see [`crate::schema()`]).
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
    let n = events.len();
    let strings = |f: &dyn Fn(&Event) -> Option<&str>| -> ArrayRef {
        let mut b = StringBuilder::with_capacity(n, n * 8);
        for e in events {
            b.append_option(f(e));
        }
        Arc::new(b.finish())
    };
    let u64s = |f: &dyn Fn(&Event) -> Option<u64>| -> ArrayRef {
        let mut b = UInt64Builder::with_capacity(n);
        for e in events {
            b.append_option(f(e));
        }
        Arc::new(b.finish())
    };
    let u32s = |f: &dyn Fn(&Event) -> Option<u32>| -> ArrayRef {
        let mut b = UInt32Builder::with_capacity(n);
        for e in events {
            b.append_option(f(e));
        }
        Arc::new(b.finish())
    };
    let i64s = |f: &dyn Fn(&Event) -> Option<i64>| -> ArrayRef {
        let mut b = Int64Builder::with_capacity(n);
        for e in events {
            b.append_option(f(e));
        }
        Arc::new(b.finish())
    };
    let columns: Vec<ArrayRef> = vec![
        strings(&|e| Some(&e.run_id)),
        strings(&|e| Some(&e.scenario)),
        u64s(&|e| Some(e.seq)),
        i64s(&|e| Some(e.ts_ns)),
        strings(&|e| Some(&e.backend)),
        strings(&|e| Some(&e.actor)),
        u32s(&|e| Some(e.incarnation)),
        {
            let mut b = StringBuilder::with_capacity(n, n * 12);
            for i in 0..n {
                b.append_value(kind(i));
            }
            Arc::new(b.finish())
        },
        strings(&|e| e.task_id.as_deref()),
        strings(&|e| e.event_id.as_deref()),
        strings(&|e| e.aggregate_id.as_deref()),
        u64s(&|e| e.aggregate_seq),
        u32s(&|e| e.attempt),
        u64s(&|e| e.broker_seq),
        i64s(&|e| e.store_rev),
        i64s(&|e| e.amount),
        i64s(&|e| e.counter),
        strings(&|e| e.detail.as_deref()),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}
