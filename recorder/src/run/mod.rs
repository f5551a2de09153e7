//! One recording from start to end ([`recording`]): services up, every scenario in turn, the
//! trace joined, services down; and what it prints and writes at the end ([`summary`]).

pub mod recording;
pub mod summary;
