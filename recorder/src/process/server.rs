//! A service the recorder runs for a subject (the lab's etcd, nats-server and redis-server, a
//! team's own services), one way for both: started as a [`Child`], waited for until its readiness
//! probe answers (or it exits, or the time is up), killed and started again on its data by a
//! fault, paused and continued as a process group, stopped with SIGTERM then SIGKILL. What the
//! service is (its command, its probe) is the caller's.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::child::{Child, Launch, SpawnError, Status};

/// How often the readiness probe is asked.
const PROBE_EVERY: Duration = Duration::from_millis(20);

/// A service that did not come up.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    /// Its command could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// It exited while starting.
    #[error("it exited with status {status}; {last}")]
    Exited {
        /// Its exit status.
        status: Status,
        /// Its last output lines.
        last: String,
    },
    /// It never answered its probe.
    #[error("not ready after {after:?}; {last}")]
    Timeout {
        /// How long it was given.
        after: Duration,
        /// Its last output lines.
        last: String,
    },
}

/// One service process, across its restarts.
pub struct Server {
    what: String,
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Server {
    /// A service not started yet: `what` names it in messages (`service redis`), its output goes
    /// to `log` (appended across restarts).
    pub fn new(
        what: impl Into<String>,
        argv: Vec<String>,
        env: Vec<(String, String)>,
        cwd: &Path,
        log: PathBuf,
    ) -> Server {
        Server {
            what: what.into(),
            argv,
            env,
            cwd: cwd.to_path_buf(),
            log,
            child: None,
        }
    }

    /// Starts the process, without waiting for it to be ready.
    pub fn launch(&mut self) -> Result<(), SpawnError> {
        self.child = Some(Child::spawn(Launch {
            what: self.what.clone(),
            argv: &self.argv,
            env: &self.env,
            cwd: &self.cwd,
            log: self.log.clone(),
            stdin: false,
            watch_stdout: None,
        })?);
        Ok(())
    }

    /// Waits until `ready` answers true, the process exits, or `limit` has passed (then the
    /// process is killed).
    pub async fn wait_ready<F, Fut>(
        &mut self,
        limit: Duration,
        mut ready: F,
    ) -> Result<(), NotReady>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<bool, SpawnError>>,
    {
        let started = Instant::now();
        loop {
            let Some(child) = self.child.as_ref() else {
                return Err(NotReady::Exited {
                    status: -1,
                    last: "not started".into(),
                });
            };
            if let Some(status) = child.exited() {
                let last = child.last_lines();
                self.child = None;
                return Err(NotReady::Exited { status, last });
            }
            if ready().await? {
                return Ok(());
            }
            if started.elapsed() > limit {
                let last = child.last_lines();
                self.kill().await;
                return Err(NotReady::Timeout { after: limit, last });
            }
            tokio::time::sleep(PROBE_EVERY).await;
        }
    }

    /// Starts the process and waits until `ready` answers true.
    pub async fn start<F, Fut>(&mut self, limit: Duration, ready: F) -> Result<(), NotReady>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<bool, SpawnError>>,
    {
        self.launch()?;
        self.wait_ready(limit, ready).await
    }

    /// SIGKILLs the process group and waits for its end (the data is kept).
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await;
        }
    }

    /// Sends `signal` to the process group (SIGSTOP and SIGCONT pause and continue it).
    pub fn signal(&self, signal: Signal) {
        if let Some(child) = &self.child {
            child.signal(signal);
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(mut child) = self.child.take() {
            child.stop(grace).await;
        }
    }

    /// Its process group, while it runs.
    pub fn group(&self) -> Option<i32> {
        self.child.as_ref().and_then(Child::group)
    }

    /// Whether the process runs.
    pub fn running(&self) -> bool {
        self.child.as_ref().is_some_and(|c| c.exited().is_none())
    }

    /// Where its output goes.
    pub fn log(&self) -> &Path {
        &self.log
    }
}
