//! The `outbox-trace/1` contract as a crate: the event kinds, the typed steps and details, the
//! Arrow schema, a Parquet writer and a validating reader.
//!
//! A trace is a Parquet file with one row per event (the same rows may also come as JSON Lines or
//! as OpenTelemetry spans in OTLP JSON Lines, OTLP JSON or OTLP protobuf; see [`input`]). The recorder writes it; the analyzer, and anyone
//! who wants their own outbox implementation checked, reads it. This crate links no network client,
//! so the analyzer stays small.
#![deny(missing_docs)]

mod checksum;
pub mod detail;
mod error;
mod event;
pub mod fault;
pub mod figures;
pub mod input;
mod jsonl;
mod kind;
pub mod lab;
pub mod otlp;
pub mod output;
mod partitioned;
mod position;
mod reader;
pub mod schema;
pub mod spool;
pub mod step;
mod writer;

pub use detail::Detail;
pub use error::TraceError;
pub use event::Event;
pub use fault::{AfterStep, CrashSite, FaultKind};
pub use figures::{FigureRow, FigureTally, Figures, KeySet, TaskKey};
pub use input::Tally;
pub use kind::{Field, Kind, UnknownKind};
pub use position::{BrokerPosition, PositionError};
pub use reader::{
    dictionary_type, file_stem, guarded, read_trace, FileInfo, ReadOptions, SeqCheck, Trace,
    TraceFile,
};
pub use schema::batch_events;
pub use step::{About, Identity, MissingFields, Step, TaskColumn};
pub use writer::{to_batch, Metadata, TraceWriter};
