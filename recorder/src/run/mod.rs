//! One recording from start to end ([`recording`]): services up, every scenario in turn, the
//! trace joined, services down; and what it prints and writes at the end ([`summary`]); its
//! temporary directory, removed on every ending and after a killed run ([`workdir`]).

pub mod recording;
pub mod summary;
pub mod workdir;
