//! `analyzer`: checks outbox-trace/1 recordings.
//!
//! ```text
//! analyzer check traces/run.parquet [more.parquet ...] [--json]
//! ```
//!
//! Exit codes:
//! - 0: every invariant passed in every scenario (valid);
//! - 1: at least one invariant failed (invalid);
//! - 2: bad input or usage (the reason is one line on stderr: `analyzer: <path>: <reason>`);
//! - 3: nothing failed but something could not be decided (unknown);
//! - 4: nothing to draw or compare (no such scenario, task, event or violation).

use std::process::ExitCode;

use clap::Parser;
use outbox_analyzer::chain::ChainError;
use outbox_analyzer::cli::{run, Cli, Exit};
use outbox_analyzer::compare::CompareError;
use outbox_analyzer::timeline::TimelineError;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors exit 2; --help and --version exit 0.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                Exit::BadInput as u8
            } else {
                0
            });
        }
    };
    let mut out = std::io::stdout().lock();
    match run(cli, &mut out) {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e) => {
            eprintln!("analyzer: {e:#}");
            ExitCode::from(exit_of(&e) as u8)
        }
    }
}

/// Nothing to draw or compare exits 4; every other error is bad input (2).
fn exit_of(e: &anyhow::Error) -> Exit {
    if e.downcast_ref::<ChainError>().is_some()
        || e.downcast_ref::<CompareError>().is_some()
        || e.downcast_ref::<TimelineError>().is_some()
    {
        Exit::NotFound
    } else {
        Exit::BadInput
    }
}
