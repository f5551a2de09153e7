//! Batches in the canonical schema: columns in the contract's order and types (cast strictly),
//! required columns free of nulls, partition values filled in and skipped columns all null.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::schema::{ColumnType, COLUMNS};
use crate::TraceError;

use super::options::{dictionary_type, ReadOptions, BATCH_ROWS};

/// `batch` with a constant text column (all null for `None`) appended per value of `fills`.
pub(super) fn with_fills(
    batch: RecordBatch,
    fills: &[Option<String>],
) -> Result<RecordBatch, TraceError> {
    if fills.is_empty() {
        return Ok(batch);
    }
    let rows = batch.num_rows();
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns = batch.columns().to_vec();
    for (k, value) in fills.iter().enumerate() {
        fields.push(Field::new(
            format!("fill {k}"),
            DataType::Utf8,
            value.is_none(),
        ));
        columns.push(Arc::new(arrow_array::StringArray::from(vec![
            value
                .as_deref(
                );
            rows
        ])));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// The canonical schema with `types`; a skipped column is nullable, required or not.
pub(super) fn batch_schema(types: &[DataType], skipped: &[bool]) -> SchemaRef {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .zip(types)
            .zip(skipped)
            .map(|((c, t), &skip)| Field::new(c.name, t.clone(), c.nullable || skip))
            .collect::<Vec<_>>(),
    ))
}

/// The types of the canonical columns as `options` ask for them: a string column named in
/// [`ReadOptions::dictionary`] as a dictionary, every other column in its canonical type.
pub(super) fn requested_types(options: &ReadOptions) -> Vec<DataType> {
    COLUMNS
        .iter()
        .map(|c| {
            if c.data_type == ColumnType::Utf8 && options.dictionary.contains(&c.name) {
                dictionary_type()
            } else {
                c.data_type.arrow()
            }
        })
        .collect()
}

/// For each canonical column, whether `options` skip it.
pub(super) fn skipped(options: &ReadOptions) -> Vec<bool> {
    COLUMNS
        .iter()
        .map(|c| options.skip.contains(&c.name))
        .collect()
}

/// The all-null arrays handed out for skipped columns: one per column, as long as the longest
/// batch yet, sliced (without copying) to each batch's length.
pub(super) struct Skipped {
    /// Per canonical column: its type when skipped, and its null array so far.
    columns: Vec<Option<(DataType, ArrayRef)>>,
}

impl Skipped {
    pub(super) fn new(skipped: &[bool], types: &[DataType]) -> Self {
        let columns = skipped
            .iter()
            .zip(types)
            .map(|(&skip, t)| skip.then(|| (t.clone(), arrow_array::new_null_array(t, 0))))
            .collect();
        Skipped { columns }
    }

    /// The null array of column `i` for a batch of `rows`, if the column is skipped.
    pub(super) fn column(&mut self, i: usize, rows: usize) -> Option<ArrayRef> {
        let (data_type, nulls) = self.columns.get_mut(i)?.as_mut()?;
        if nulls.len() < rows {
            *nulls = arrow_array::new_null_array(data_type, rows.max(BATCH_ROWS));
        }
        Some(nulls.slice(0, rows))
    }
}

pub(super) fn normalise(
    batch: &RecordBatch,
    order: &[usize],
    types: &[DataType],
    schema: &SchemaRef,
    skipped: &mut Skipped,
) -> Result<RecordBatch, TraceError> {
    let strict = CastOptions {
        safe: false,
        ..Default::default()
    };
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(COLUMNS.len());
    for (i, ((column, &at), target)) in COLUMNS.iter().zip(order).zip(types).enumerate() {
        if let Some(nulls) = skipped.column(i, batch.num_rows()) {
            columns.push(nulls);
            continue;
        }
        let array = batch.column(at);
        let array = if array.data_type() == target {
            array.clone()
        } else {
            cast_with_options(array, target, &strict).map_err(|e| TraceError::OutOfRange {
                column: column.name,
                expected: expected_name(column.data_type),
                reason: e.to_string(),
            })?
        };
        if !column.nullable && array.null_count() > 0 {
            return Err(TraceError::NullInRequired {
                column: column.name,
                nulls: array.null_count(),
            });
        }
        columns.push(array);
    }
    let rows = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &rows,
    )?)
}

/// How a column type is named in messages.
pub(super) fn expected_name(t: ColumnType) -> &'static str {
    match t {
        ColumnType::Utf8 => "a string (Utf8)",
        ColumnType::UInt64 => "an integer that fits UInt64",
        ColumnType::UInt32 => "an integer that fits UInt32",
        ColumnType::Int64 => "an integer that fits Int64",
        ColumnType::Int32 => "an integer that fits Int32",
    }
}
