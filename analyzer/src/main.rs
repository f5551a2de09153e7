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
use outbox_analyzer::cli::{run, Cli, Exit};

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
    let exit = run(cli, &mut out).unwrap_or_else(|e| {
        eprintln!("analyzer: {e}");
        e.exit()
    });
    ExitCode::from(exit as u8)
}
