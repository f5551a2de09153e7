//! The Arrow schema of `outbox-trace/1` and the file metadata keys.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The schema version this crate writes and reads.
pub const SCHEMA_VERSION: &str = "1";
/// Key-value metadata key that holds the schema version.
pub const META_SCHEMA_VERSION: &str = "outbox_trace.schema_version";
/// Key-value metadata key that holds the recorder's configuration as JSON.
pub const META_RUN: &str = "outbox_trace.run";

/// One column of the contract: name, canonical type, and whether nulls are allowed.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// Column name.
    pub name: &'static str,
    /// The type writers use.
    pub data_type: ColumnType,
    /// Whether the column may hold nulls.
    pub nullable: bool,
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
}

impl ColumnType {
    /// The Arrow type writers use.
    pub fn arrow(self) -> DataType {
        match self {
            ColumnType::Utf8 => DataType::Utf8,
            ColumnType::UInt64 => DataType::UInt64,
            ColumnType::UInt32 => DataType::UInt32,
            ColumnType::Int64 => DataType::Int64,
        }
    }
}

macro_rules! columns {
    ($($name:literal : $ty:ident, $nullable:literal;)+) => {
        /// Every column of the contract, in file order.
        pub const COLUMNS: &[Column] = &[
            $(Column { name: $name, data_type: ColumnType::$ty, nullable: $nullable },)+
        ];
    };
}

columns! {
    "run_id": Utf8, false;
    "scenario": Utf8, false;
    "seq": UInt64, false;
    "ts_ns": Int64, false;
    "backend": Utf8, false;
    "actor": Utf8, false;
    "incarnation": UInt32, false;
    "kind": Utf8, false;
    "task_id": Utf8, true;
    "event_id": Utf8, true;
    "aggregate_id": Utf8, true;
    "aggregate_seq": UInt64, true;
    "attempt": UInt32, true;
    "broker_seq": UInt64, true;
    "store_rev": Int64, true;
    "amount": Int64, true;
    "counter": Int64, true;
    "detail": Utf8, true;
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
