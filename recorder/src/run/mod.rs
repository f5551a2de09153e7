//! One recording from start to end ([`recording`]): services up, every scenario in turn, the
//! trace joined, services down; the same for a user's own system ([`system`]); what both print
//! and write at the end ([`summary`]); and their temporary directory, removed on every ending and
//! after a killed run ([`workdir`]).

pub mod recording;
pub mod summary;
pub mod system;
pub mod workdir;
