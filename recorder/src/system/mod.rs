//! Your own system under the recorder's faults (`recorder run --system FILE`): a team's own API,
//! relay and worker, in any language, on its own database and broker, run as the system file
//! describes. Their OpenTelemetry spans, taken in over OTLP, are the history; the recorder adds
//! the faults and its own rows, and writes the same `outbox-trace/1` file the analyzer reads.
//!
//! From the bottom: [`template`] (placeholders), [`file`] (the
//! system file, read and checked),
//! [`services`], [`shape`] (what the processes report, learned), [`steps`] (steps read from
//! the wire), [`tasks`] (making and sending them), [`receiver`] (OTLP over HTTP and gRPC),
//! [`scenario`] (one scenario from services up to
//! `run_end`) and [`config`] (a resolved system run).

pub mod config;
pub mod file;
pub mod receiver;
pub mod scenario;
pub mod services;
pub mod shape;
pub mod steps;
pub mod tasks;
pub mod template;
