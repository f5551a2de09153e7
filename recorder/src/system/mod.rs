//! `recorder run --system FILE`: a user's own service under the recorder's faults, its
//! OpenTelemetry spans taken as the history.
//!
//! - [`receiver`]: the OTLP receiver (HTTP and gRPC on loopback) that hands each export request
//!   to the run and answers it only when the run says so.

pub mod receiver;
