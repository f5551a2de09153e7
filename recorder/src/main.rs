//! `recorder`: parses the command line and runs the command; each command's glue is in
//! [`outbox_recorder::run::commands`], the work in [`outbox_recorder::run`].

use std::process::ExitCode;

use clap::Parser;
use outbox_recorder::cli::args::Cli;
use outbox_recorder::cli::exit::Exit;
use outbox_recorder::run::commands::{dispatch, exit};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return exit(if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Success
            });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // Colours only on a terminal, and never with NO_COLOR set (https://no-color.org).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    outbox_recorder::process::spawn::raise_open_files();
    dispatch(cli.command)
}
