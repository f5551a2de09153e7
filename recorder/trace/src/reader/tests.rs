use std::fs::File;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{Field, Schema};

use super::*;
use crate::{Kind, TraceWriter};

fn events(n: u64) -> Vec<Event> {
    (1..=n)
        .map(|seq| {
            let mut e = Event::new(if seq % 2 == 0 {
                Kind::Acked
            } else {
                Kind::Delivered
            });
            e.run_id = "run".into();
            e.scenario = "s".into();
            e.backend = "b".into();
            e.actor = "worker".into();
            e.seq = seq;
            e.event_id = Some(format!("evt-{}", seq / 2));
            e
        })
        .collect()
}

/// A Parquet file of `events` in a fresh directory (kept while the first value lives).
fn written(events: &[Event]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let mut w = TraceWriter::create(&path, None).unwrap();
    w.write(events).unwrap();
    w.finish().unwrap();
    (dir, path)
}

#[test]
fn dictionary_option_reads_the_same_values_as_dictionaries() {
    let (_dir, path) = written(&events(100));
    let options = ReadOptions {
        dictionary: vec!["kind", "event_id", "seq"],
        ..ReadOptions::default()
    };
    let file = TraceFile::open_with(&path, &options).unwrap();
    let schema = file.schema();
    assert_eq!(schema.field(7).data_type(), &dictionary_type());
    assert_eq!(schema.field(9).data_type(), &dictionary_type());
    // Not a string column: ignored.
    assert_eq!(schema.field(2).data_type(), &DataType::UInt64);
    let batches: Vec<RecordBatch> = file.batches().map(Result::unwrap).collect();
    let kinds = cast_with_options(
        batches[0].column(7),
        &DataType::Utf8,
        &CastOptions::default(),
    )
    .unwrap();
    assert_eq!(kinds.as_string::<i32>().value(1), "acked");
    let plain = read_trace(&path).unwrap();
    assert_eq!(plain.events, events(100));
    assert_eq!(file_rows(&batches), 100);
}

#[test]
fn skip_option_hands_out_nulls_and_reads_the_rest() {
    let (_dir, path) = written(&events(100));
    let options = ReadOptions {
        dictionary: vec!["event_id"],
        skip: vec!["ts_ns", "event_id", "no_such_column"],
        ..ReadOptions::default()
    };
    let file = TraceFile::open_with(&path, &options).unwrap();
    let schema = file.schema();
    assert!(schema.field(3).is_nullable());
    assert_eq!(schema.field(3).data_type(), &DataType::Int64);
    assert_eq!(schema.field(9).data_type(), &dictionary_type());
    assert!(!schema.field(2).is_nullable());
    let batches: Vec<RecordBatch> = file.batches().map(Result::unwrap).collect();
    assert_eq!(file_rows(&batches), 100);
    let batch = &batches[0];
    assert_eq!(batch.schema(), schema);
    assert_eq!(batch.column(3).null_count(), batch.num_rows());
    assert_eq!(batch.column(9).null_count(), batch.num_rows());
    let seqs = batch
        .column(2)
        .as_primitive::<arrow_array::types::UInt64Type>();
    assert_eq!(seqs.value(0), 1);
    assert_eq!(seqs.null_count(), 0);
}

#[test]
fn row_groups_option_reads_only_those() {
    let (_dir, path) = written(&events(10));
    let all = TraceFile::open_with(&path, &ReadOptions::default()).unwrap();
    assert_eq!(all.info().row_groups, 1);
    let none = ReadOptions {
        row_groups: Some(vec![]),
        ..ReadOptions::default()
    };
    let file = TraceFile::open_with(&path, &none).unwrap();
    assert_eq!(
        file_rows(&file.batches().map(Result::unwrap).collect::<Vec<_>>()),
        0
    );
}

#[test]
fn a_file_without_the_optional_counter_key_reads_it_as_null() {
    let mut rows = events(4);
    rows[1].counter_key = Some("apple".into());
    let full = crate::to_batch(&rows).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.parquet");
    write_batch(&path, &without(&full, "counter_key"));
    let back = read_trace(&path).unwrap();
    rows[1].counter_key = None;
    assert_eq!(back.events, rows);
    // With the column, its values come back.
    let (_dir, path) = written(&{
        let mut rows = events(4);
        rows[1].counter_key = Some("apple".into());
        rows
    });
    let back = read_trace(&path).unwrap();
    assert_eq!(back.events[1].counter_key.as_deref(), Some("apple"));
    // A required column is still required.
    write_batch(&path, &without(&full, "run_id"));
    assert!(matches!(
        read_trace(&path),
        Err(TraceError::MissingColumn("run_id"))
    ));
}

#[test]
fn a_file_without_the_optional_partition_reads_it_as_null_and_one_with_it_round_trips() {
    let mut rows = events(4);
    rows[1].broker_seq = Some(7);
    rows[1].partition = Some(3);
    rows[2].broker_seq = Some(7);
    rows[2].partition = Some(-1);
    let (_dir, path) = written(&rows);
    assert_eq!(read_trace(&path).unwrap().events, rows);
    // The same rows written before the column existed: every partition reads as null.
    let full = crate::to_batch(&rows).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.parquet");
    write_batch(&old, &without(&full, "partition"));
    for e in &mut rows {
        e.partition = None;
    }
    assert_eq!(read_trace(&old).unwrap().events, rows);
}

#[test]
fn a_partition_of_another_integer_width_reads_where_it_fits_int32() {
    let rows = events(2);
    let full = crate::to_batch(&rows).unwrap();
    let at = crate::schema::column("partition");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.parquet");
    let with = |values: Vec<Option<i64>>| {
        let mut columns = full.columns().to_vec();
        columns[at] = Arc::new(arrow_array::Int64Array::from(values));
        let mut fields = fields(&full);
        fields[at] = Field::new("partition", arrow_schema::DataType::Int64, true);
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    };
    write_batch(&path, &with(vec![Some(4), None]));
    let back = read_trace(&path).unwrap().events;
    assert_eq!((back[0].partition, back[1].partition), (Some(4), None));
    write_batch(&path, &with(vec![Some(1 << 40), None]));
    assert!(matches!(
        read_trace(&path),
        Err(TraceError::OutOfRange {
            column: "partition",
            ..
        })
    ));
}

/// The fields of `batch`'s schema.
fn fields(batch: &RecordBatch) -> Vec<Field> {
    batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect()
}

/// `batch` without its column `name`, as a file written before the column existed holds it.
fn without(batch: &RecordBatch, name: &str) -> RecordBatch {
    let at = crate::schema::COLUMNS
        .iter()
        .position(|c| c.name == name)
        .expect("a column of the contract");
    let mut fields = fields(batch);
    let mut columns = batch.columns().to_vec();
    fields.remove(at);
    columns.remove(at);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Writes `batch` as a Parquet file of its own schema.
fn write_batch(path: &std::path::Path, batch: &RecordBatch) {
    let mut w =
        parquet::arrow::ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None)
            .unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn file_rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}
