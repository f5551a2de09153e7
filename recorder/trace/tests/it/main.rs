//! The contract crate's tests through its public API.

mod ways_in;
