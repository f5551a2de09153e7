//! The command line: clap's definitions ([`args`]), `recorder run`'s resolved configuration
//! ([`config`]), how a command ends ([`exit`]), what `recorder list` prints ([`list`]), and
//! `recorder explore --shard K/N` ([`shard`]).

pub mod args;
pub mod config;
pub mod exit;
pub mod list;
pub mod outputs;
pub mod shard;
