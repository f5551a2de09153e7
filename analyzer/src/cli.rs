//! The command line: argument definitions, their resolution into a validated configuration, and
//! the glue that runs a check and maps the verdict to an exit code.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::analysis::{analyse, RunVerdict};
use crate::output;

/// Exit codes, as documented in `--help`.
const EXIT_CODES: &str = "\
Exit codes:
  0  every invariant passed in every scenario (valid)
  1  at least one invariant failed (invalid)
  2  bad input or usage: unreadable file, not Parquet, truncated, empty, missing column,
     wrong type, null in a required column, other schema version, duplicate seq, bad arguments
  3  nothing failed, but at least one invariant could not be decided (unknown)";

/// Checks outbox-trace/1 recordings.
#[derive(Debug, Parser)]
#[command(name = "analyzer", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check every (run_id, scenario) of the given traces against the outbox invariants.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
}

/// Arguments of `analyzer check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Trace files (Parquet, outbox-trace/1).
    #[arg(value_name = "TRACE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Print the report as JSON (see the documented shape) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text for people.
    Text,
    /// JSON for programs.
    Json,
}

/// A validated `check` configuration.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// The files, in order.
    pub paths: Vec<PathBuf>,
    /// Output format.
    pub format: Format,
}

impl From<CheckArgs> for CheckConfig {
    fn from(a: CheckArgs) -> Self {
        CheckConfig {
            paths: a.paths,
            format: if a.json { Format::Json } else { Format::Text },
        }
    }
}

/// The process outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: valid.
    Valid = 0,
    /// 1: invalid.
    Invalid = 1,
    /// 2: bad input or usage.
    BadInput = 2,
    /// 3: unknown.
    Unknown = 3,
}

impl From<RunVerdict> for Exit {
    fn from(v: RunVerdict) -> Self {
        match v {
            RunVerdict::Valid => Exit::Valid,
            RunVerdict::Invalid => Exit::Invalid,
            RunVerdict::Unknown => Exit::Unknown,
        }
    }
}

/// Runs the command, writing the report to `out`. Errors are bad input (exit 2).
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Check(args) => check(&args.into(), out),
    }
}

/// Runs `analyzer check`.
pub fn check(config: &CheckConfig, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let report = analyse(&config.paths)?;
    let written = match config.format {
        Format::Text => output::text::write(&report, out),
        Format::Json => output::json::write(&report, out),
    };
    match written.and_then(|()| out.flush()) {
        // A reader that closed the pipe early (`| head`) still gets the exit code.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(report.verdict.into())
}
