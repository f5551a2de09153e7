//! One recording from start to end ([`recording`]): services up, every scenario in turn, the
//! trace joined, services down; the same for a user's own system ([`system`]); and what both print
//! and write at the end ([`summary`]).

pub mod recording;
pub mod summary;
pub mod system;
