//! Durations as the command line and the system file write them: the contract's own
//! ([`outbox_trace::fault::duration`]), so a fault's text and its structured form in a trace
//! agree.

pub use outbox_trace::fault::duration::{parse_duration, show_duration};
