//! The Arrow schema of `outbox-trace/1` and the file metadata keys.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::Event;

/// The schema version this crate writes and reads.
pub const SCHEMA_VERSION: &str = "1";
/// Key-value metadata key that holds the schema version.
pub const META_SCHEMA_VERSION: &str = "outbox_trace.schema_version";
/// Key-value metadata key that holds the recorder's configuration as JSON.
pub const META_RUN: &str = "outbox_trace.run";
/// Key-value metadata key that says where `seq` came from; absent: the producer's own order.
pub const META_SEQ_SOURCE: &str = "outbox_trace.seq_source";
/// The value of [`META_SEQ_SOURCE`] for a `seq` derived from span times on separate clocks.
pub const SEQ_FROM_SPAN_CLOCKS: &str = "span-clocks";

/// One column of the contract: name, canonical type, and whether nulls are allowed.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The column's name, the same as the field of `Event` that holds it.
    pub name: &'static str,
    /// The type writers use; readers also accept the wider set its variant names.
    pub data_type: ColumnType,
    /// Whether the column may hold nulls.
    pub nullable: bool,
    /// Whether a file may lack the column (added to version 1 later): a reader then reads it as
    /// all null.
    pub optional: bool,
}

/// The logical types of the contract's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// Utf8 (readers accept any string encoding).
    Utf8,
    /// UInt64 (readers accept any integer width whose values fit).
    UInt64,
    /// UInt32 (readers accept any integer width whose values fit).
    UInt32,
    /// Int64 (readers accept any integer width whose values fit).
    Int64,
    /// Int32 (readers accept any integer width whose values fit).
    Int32,
}

impl ColumnType {
    /// The Arrow type writers use.
    pub fn arrow(self) -> DataType {
        match self {
            ColumnType::Utf8 => DataType::Utf8,
            ColumnType::UInt64 => DataType::UInt64,
            ColumnType::UInt32 => DataType::UInt32,
            ColumnType::Int64 => DataType::Int64,
            ColumnType::Int32 => DataType::Int32,
        }
    }
}

macro_rules! columns {
    (@optional) => { false };
    (@optional optional) => { true };
    ($($field:ident : $ty:ident, $nullable:literal $(, $optional:ident)?;)+) => {
        /// Every column of the contract, in file order.
        pub const COLUMNS: &[Column] = &[
            $(Column {
                name: stringify!($field),
                data_type: ColumnType::$ty,
                nullable: $nullable,
                optional: columns!(@optional $($optional)?),
            },)+
        ];

        /// The columns of `events`, in file order and canonical types.
        pub(crate) fn event_arrays(events: &[Event]) -> Vec<ArrayRef> {
            vec![$(cell::column(events, |e: &Event| &e.$field),)+]
        }

        /// The events of a batch in the canonical schema; rows of unknown kinds are counted in
        /// `unknown` and skipped.
        pub(crate) fn array_events(
            batch: &RecordBatch,
            unknown: &mut BTreeMap<String, u64>,
        ) -> Vec<Event> {
            let mut arrays = batch.columns().iter();
            $(
                let $field = cell::array(
                    arrays.next().expect("a batch in the canonical schema"),
                    |e: &Event| &e.$field,
                );
            )+
            let mut out = Vec::with_capacity(batch.num_rows());
            'rows: for i in 0..batch.num_rows() {
                out.push(Event {
                    $($field: match cell::Cell::read($field, i) {
                        Ok(value) => value,
                        Err(unknown_kind) => {
                            *unknown.entry(unknown_kind).or_default() += 1;
                            continue 'rows;
                        }
                    },)+
                });
            }
            out
        }
    };
}

// The one list of the contract's columns: the schema, the writer's arrays and the reader's events
// all come from it. Each name is a field of [`Event`]; its Rust type decides how a cell is written
// and read (`Option` for a nullable column). `optional` marks a column a file may lack.
columns! {
    run_id: Utf8, false;
    scenario: Utf8, false;
    seq: UInt64, false;
    ts_ns: Int64, false;
    backend: Utf8, false;
    actor: Utf8, false;
    incarnation: UInt32, false;
    kind: Utf8, false;
    task_id: Utf8, true;
    event_id: Utf8, true;
    aggregate_id: Utf8, true;
    aggregate_seq: UInt64, true;
    attempt: UInt32, true;
    broker_seq: UInt64, true;
    partition: Int32, true, optional;
    store_rev: Int64, true;
    amount: Int64, true;
    counter: Int64, true;
    counter_key: Utf8, true, optional;
    detail: Utf8, true;
}

/// How the value of an [`Event`] field goes into a canonical Arrow array and comes back out.
mod cell {
    use std::sync::Arc;

    use arrow_array::builder::{
        ArrayBuilder, Int32Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder,
    };
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    use arrow_array::{
        Array, ArrayRef, Int32Array, Int64Array, StringArray, UInt32Array, UInt64Array,
    };

    use crate::{Event, Kind};

    /// A field type and its column's canonical array.
    pub trait Cell: Sized {
        /// The Arrow builder that writes a column of this type.
        type Builder: ArrayBuilder;
        /// The column's canonical array.
        type Array: 'static;
        /// A builder for `rows` rows.
        fn builder(rows: usize) -> Self::Builder;
        /// Appends this value.
        fn append(&self, builder: &mut Self::Builder);
        /// The canonical array of a column.
        fn array(array: &ArrayRef) -> &Self::Array;
        /// The value at row `i`; `Err` holds a `kind` this contract does not define.
        fn read(array: &Self::Array, i: usize) -> Result<Self, String>;
    }

    /// The array of `events`' `field`.
    pub fn column<T: Cell>(events: &[Event], field: impl Fn(&Event) -> &T) -> ArrayRef {
        let mut builder = T::builder(events.len());
        for e in events {
            field(e).append(&mut builder);
        }
        Arc::new(builder.finish())
    }

    /// `array` as the canonical array of the column holding `field`.
    pub fn array<T: Cell>(array: &ArrayRef, _field: fn(&Event) -> &T) -> &T::Array {
        T::array(array)
    }

    fn text(array: &StringArray, i: usize) -> Option<String> {
        array.is_valid(i).then(|| array.value(i).to_string())
    }

    impl Cell for String {
        type Builder = StringBuilder;
        type Array = StringArray;
        fn builder(rows: usize) -> StringBuilder {
            StringBuilder::with_capacity(rows, rows * 8)
        }
        fn append(&self, b: &mut StringBuilder) {
            b.append_value(self);
        }
        fn array(array: &ArrayRef) -> &StringArray {
            array.as_string::<i32>()
        }
        fn read(array: &StringArray, i: usize) -> Result<Self, String> {
            Ok(array.value(i).to_string())
        }
    }

    impl Cell for Option<String> {
        type Builder = StringBuilder;
        type Array = StringArray;
        fn builder(rows: usize) -> StringBuilder {
            StringBuilder::with_capacity(rows, rows * 8)
        }
        fn append(&self, b: &mut StringBuilder) {
            b.append_option(self.as_deref());
        }
        fn array(array: &ArrayRef) -> &StringArray {
            array.as_string::<i32>()
        }
        fn read(array: &StringArray, i: usize) -> Result<Self, String> {
            Ok(text(array, i))
        }
    }

    impl Cell for Kind {
        type Builder = StringBuilder;
        type Array = StringArray;
        fn builder(rows: usize) -> StringBuilder {
            StringBuilder::with_capacity(rows, rows * 16)
        }
        fn append(&self, b: &mut StringBuilder) {
            b.append_value(self.as_str());
        }
        fn array(array: &ArrayRef) -> &StringArray {
            array.as_string::<i32>()
        }
        fn read(array: &StringArray, i: usize) -> Result<Self, String> {
            let name = array.value(i);
            name.parse().map_err(|_| name.to_string())
        }
    }

    macro_rules! integer {
        ($t:ty, $builder:ty, $array:ty, $arrow:ty) => {
            impl Cell for $t {
                type Builder = $builder;
                type Array = $array;
                fn builder(rows: usize) -> $builder {
                    <$builder>::with_capacity(rows)
                }
                fn append(&self, b: &mut $builder) {
                    b.append_value(*self);
                }
                fn array(array: &ArrayRef) -> &$array {
                    array.as_primitive::<$arrow>()
                }
                fn read(array: &$array, i: usize) -> Result<Self, String> {
                    Ok(array.value(i))
                }
            }

            impl Cell for Option<$t> {
                type Builder = $builder;
                type Array = $array;
                fn builder(rows: usize) -> $builder {
                    <$builder>::with_capacity(rows)
                }
                fn append(&self, b: &mut $builder) {
                    b.append_option(*self);
                }
                fn array(array: &ArrayRef) -> &$array {
                    array.as_primitive::<$arrow>()
                }
                fn read(array: &$array, i: usize) -> Result<Self, String> {
                    Ok(array.is_valid(i).then(|| array.value(i)))
                }
            }
        };
    }

    integer!(u64, UInt64Builder, UInt64Array, UInt64Type);
    integer!(u32, UInt32Builder, UInt32Array, UInt32Type);
    integer!(i64, Int64Builder, Int64Array, Int64Type);
    integer!(i32, Int32Builder, Int32Array, Int32Type);
}

/// The position of the column `name` in [`COLUMNS`] (and in canonical batches), at compile time:
/// `const SEQ: usize = column("seq");` fails to compile for a name the contract lacks.
pub const fn column(name: &str) -> usize {
    let mut i = 0;
    while i < COLUMNS.len() {
        if same(COLUMNS[i].name.as_bytes(), name.as_bytes()) {
            return i;
        }
        i += 1;
    }
    panic!("not a column of outbox-trace/1")
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The canonical Arrow schema (the one writers use and readers normalise to).
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|c| Field::new(c.name, c.data_type.arrow(), c.nullable))
            .collect::<Vec<_>>(),
    ))
}

/// Converts a canonical batch to events; unknown kinds are counted in `unknown` and skipped.
pub fn batch_events(batch: &RecordBatch, unknown: &mut BTreeMap<String, u64>) -> Vec<Event> {
    array_events(batch, unknown)
}
