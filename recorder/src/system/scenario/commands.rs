//! The commands a scenario runs to their end (setup, quiet, observe) and the environment every
//! command gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::shared::SystemError;
use crate::process::child::{Child, Launch, SpawnError, Status};
use crate::system::file::System;
use crate::system::template::Values;

/// Environment of every command: `[env]` expanded, then `--env`.
pub(super) fn base_env(
    system: &System,
    values: &Values,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = system
        .file
        .env
        .iter()
        .map(|(k, t)| (k.clone(), t.expand(values)))
        .collect();
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

/// Why a command did not run to its end.
#[derive(Debug, thiserror::Error)]
pub(super) enum CommandError {
    /// It could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// It ran past its bound and was killed.
    #[error("{what} did not finish within {}s and was stopped; {last}", limit.as_secs_f64())]
    TimedOut {
        /// The command (`setup`, `observe`).
        what: String,
        /// Its bound.
        limit: Duration,
        /// Its last output lines.
        last: String,
    },
    /// The run was interrupted while it ran; it was killed.
    #[error("{what} was stopped: the run was interrupted")]
    Interrupted {
        /// The command.
        what: String,
    },
}

impl From<CommandError> for SystemError {
    fn from(e: CommandError) -> Self {
        match e {
            CommandError::Interrupted { .. } => SystemError::Interrupted,
            e => SystemError::Unavailable(e.to_string()),
        }
    }
}

/// Runs a command to its end, at most `limit` and never past `shutdown`, and returns its status,
/// its standard output and its last lines.
pub(super) async fn run_command(
    what: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    log: PathBuf,
    limit: Duration,
    shutdown: &CancellationToken,
) -> Result<(Status, String, String), CommandError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut child = Child::spawn(Launch {
        what: what.to_string(),
        argv,
        env,
        cwd,
        log,
        stdin: false,
        watch_stdout: Some(tx),
    })?;
    let status = tokio::select! {
        status = child.wait() => status,
        _ = tokio::time::sleep(limit) => {
            let last = child.last_lines();
            child.kill().await;
            return Err(CommandError::TimedOut { what: what.to_string(), limit, last });
        }
        _ = shutdown.cancelled() => {
            child.kill().await;
            return Err(CommandError::Interrupted { what: what.to_string() });
        }
    };
    let mut out = String::new();
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    Ok((status, out, child.last_lines()))
}
