//! The commands a scenario runs to their end (setup, quiet, observe) and the environment every
//! command gets.


use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use outbox_trace::detail::{self, CounterValue};
use outbox_trace::otlp::LiveMapper;
use outbox_trace::Step;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use crate::system::chaos::SystemChaos;
use crate::system::child::{Child, Launch, SpawnError, Status};
use crate::system::file::{Delivery, Export, OtlpProtocol, System};
use crate::fault::pauses::{Pauses, Pending};
use crate::system::receiver::{Answer, Intake, OtlpReceiver};
use crate::system::services::{free_port, Service, ServiceFailure};
use crate::system::tasks::{make_tasks, Courier, Delivered};
use crate::system::template::Values;
use crate::fault::spec::{Nemesis, What};
use crate::fault::trigger::{Reporter, Trigger};
use crate::journal::author::Author;
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder};
use super::ending::{end, Ending};
use super::faults::apply_timed;
use super::stage::{Held, Kill, Life, Stage, StdinSlot};
use super::{
    run_err, ScenarioOutcome, SystemEnv, SystemError, DRAIN, GRACE, OWN_EXIT_RESTARTS,
    QUIET_EVERY, SPAN_SILENCE,
};

/// Environment of every command: `[env]` expanded, then `--env`.
pub(super) fn base_env(system: &System, values: &Values, extra: &[(String, String)]) -> Vec<(String, String)> {
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
