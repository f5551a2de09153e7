//! The `analyzer` command line: [`args`] (what clap parses), [`config`] (the arguments resolved
//! into what a command runs on), [`exit`] (the exit codes), [`error`] (every error with the exit
//! code it means) and [`commands`] (the glue: call the library, write where asked).

pub mod args;
pub mod commands;
pub mod config;
pub mod error;
pub mod exit;

pub use args::Cli;
pub use commands::run;
pub use error::{Error, ExitClass};
pub use exit::Exit;
