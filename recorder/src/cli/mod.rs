//! The command line: clap's definitions ([`args`]), `recorder run`'s resolved configuration
//! ([`config`]), how a command ends ([`exit`]), and what `recorder list` prints ([`list`]).

pub mod args;
pub mod config;
pub mod exit;
pub mod list;
pub mod outputs;
