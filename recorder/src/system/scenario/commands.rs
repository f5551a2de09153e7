//! The commands a scenario runs to their end (setup, quiet, observe) and the environment every
//! command gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio::sync::mpsc;

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

/// Runs a command to its end and returns its status and standard output.
pub(super) async fn run_command(
    what: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    log: PathBuf,
) -> Result<(Status, String, String), SpawnError> {
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
    let status = child.wait().await;
    let mut out = String::new();
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    Ok((status, out, child.last_lines()))
}
