//! Starting actor processes and carrying their reports into the journal.
//!
//! Each actor life is `recorder actor` as a child process. Its spec goes in over standard input,
//! which stays open until the recorder asks it to stop; its steps come back on standard output and
//! are recorded with the actor's name, incarnation and scenario filled in by the recorder, so an
//! actor cannot misreport who it is.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::driver::actor::spec::ActorSpec;
use crate::fault::plan::Fault;
use crate::journal::author::{ActorId, Author};
use crate::journal::writer::{Entry, Recorder};
use crate::process::spawn;
use crate::protocol::ctx::Line;

use super::held::{Aim, Held};

/// What an actor life reported besides its events.
#[derive(Debug, Default)]
pub struct LifeReport {
    /// Faults that fired (and are spent).
    pub fired: Vec<Fault>,
    /// The life reported its own crash.
    pub crash_reported: bool,
    /// A step-following kill ended the life on a held report: `<role>:after-<kind>`.
    pub killed_after: Option<outbox_trace::CrashSite>,
}

/// One running actor life.
pub struct ActorProcess {
    child: Child,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    held: Arc<Held>,
    pump: JoinHandle<anyhow::Result<LifeReport>>,
}

impl ActorProcess {
    /// Starts one life of `actor` in `scenario`.
    pub async fn spawn(
        spec: &ActorSpec,
        actor: ActorId,
        scenario: &str,
        recorder: Recorder,
        aim: Option<Aim>,
    ) -> anyhow::Result<Self> {
        // `/proc/self/exe` is this very binary even if the file on disk was replaced meanwhile.
        let proc_exe = std::path::Path::new("/proc/self/exe");
        let exe = if proc_exe.exists() {
            proc_exe.to_path_buf()
        } else {
            std::env::current_exe().context("locating the recorder binary")?
        };
        // Its own process group: a terminal's Ctrl-C reaches only the recorder, which stops the
        // actors itself and records how they ended. A recorder killed outright takes its actors
        // with it. The endpoints, credentials included, come in the spec on standard input; the
        // recorder's own variables, which may hold a password, stay out of the environment.
        let mut command = spawn::command(exe);
        command
            .arg("actor")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = spawn::spawn(command).with_context(|| format!("starting actor {actor}"))?;
        let mut stdin = child.stdin.take().context("actor stdin")?;
        let mut line = serde_json::to_string(spec)?;
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .await
            .context("sending the actor its spec")?;
        stdin.flush().await?;
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        let stdout = child.stdout.take().context("actor stdout")?;
        let life = Arc::new(Held {
            pid: child.id().map_or(0, |p| p as i32),
            actor,
            incarnation: spec.incarnation,
            held: spec.hold.clone(),
            stdin: stdin.clone(),
            scenario: scenario.to_string(),
            recorder: recorder.clone(),
            clock: spec.clock,
            pauses: Arc::default(),
            ended: CancellationToken::new(),
        });
        let held = life.clone();
        let scenario = scenario.to_string();
        let incarnation = spec.incarnation;
        let pump = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            let mut report = LifeReport::default();
            while let Some(text) = lines.next_line().await? {
                let parsed: Line = serde_json::from_str(&text).with_context(|| {
                    format!("actor {actor}#{incarnation} wrote an unreadable line: {text:.200}")
                })?;
                match parsed {
                    Line::Step { ts_ns, step } => {
                        let kind = step.kind();
                        if kind == outbox_trace::Kind::Crash {
                            report.crash_reported = true;
                        }
                        recorder
                            .record(Entry {
                                scenario: scenario.clone(),
                                author: Author::Actor(actor),
                                incarnation,
                                ts_ns,
                                step: *step,
                            })
                            .await?;
                        if life.held.contains(&kind) {
                            if let Some(point) = life.answer(aim.as_ref(), kind, ts_ns).await {
                                report.killed_after = Some(point);
                            }
                        }
                    }
                    Line::Fired(fault) => report.fired.push(fault),
                }
            }
            Ok(report)
        });
        Ok(ActorProcess {
            child,
            stdin,
            held,
            pump,
        })
    }

    /// SIGSTOPs the life now and SIGCONTs it after `hold`, with a `fault` row (a life stopped
    /// already stays so until the later end).
    pub fn pause(&self, hold: Duration) {
        self.held.pause(Duration::ZERO, hold);
    }

    /// Sends SIGKILL (the exit is then seen by [`ActorProcess::try_exit`]).
    pub fn kill_now(&mut self) {
        let _ = self.child.start_kill();
    }

    /// The exit status if the process has ended.
    pub fn try_exit(&mut self) -> anyhow::Result<Option<std::process::ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// After the process ended: waits until all its output is recorded (a report read now is
    /// answered without waiting for a service's fault).
    pub async fn collect(self) -> anyhow::Result<LifeReport> {
        self.held.ended.cancel();
        self.pump.await.context("actor output reader panicked")?
    }

    /// Asks the process to stop (closes its standard input), kills it if it does not within
    /// `grace`, and waits until all its output is recorded.
    pub async fn stop(mut self, grace: Duration) -> anyhow::Result<LifeReport> {
        self.stdin.lock().await.take();
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
        self.collect().await
    }
}
