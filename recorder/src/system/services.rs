//! The services a system file names (`[services.NAME]`): each started in a directory of its own
//! on a free loopback port, waited for until ready, restarted by a fault with its directory kept,
//! and stopped at the end.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::child::{Child, Launch, SpawnError};
use super::file::{Ready, ServiceSpec};
use super::template::Values;
use crate::process::port::free_port;

/// A service that did not come up.
#[derive(Debug, thiserror::Error)]
pub enum ServiceFailure {
    /// Its command could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// It exited or never answered.
    #[error("service {name} never got ready ({why}); {last}")]
    NotReady {
        /// The service.
        name: String,
        /// Exited with a status, or timed out.
        why: String,
        /// Its last output lines.
        last: String,
    },
}

/// One running service.
pub struct Service {
    name: String,
    spec: ServiceSpec,
    /// Its port (`${port}`).
    pub port: u16,
    /// Its directory (`${dir}`), kept across restarts.
    pub dir: PathBuf,
    values: Values,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    child: Option<Child>,
}

impl Service {
    /// A service not yet started: its port and directory chosen.
    pub fn plan(name: &str, spec: &ServiceSpec, scenario_dir: &Path) -> std::io::Result<Service> {
        let dir = scenario_dir.join("services").join(name);
        std::fs::create_dir_all(&dir)?;
        Ok(Service {
            name: name.to_string(),
            spec: spec.clone(),
            port: free_port()?,
            dir,
            values: Values::new(),
            env: Vec::new(),
            cwd: PathBuf::new(),
            child: None,
        })
    }

    /// Starts it and waits until ready. `values` are the run's global placeholder values; the
    /// service's own `${port}` and `${dir}` are added.
    pub async fn start(
        &mut self,
        values: &Values,
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<(), ServiceFailure> {
        let mut values = values.clone();
        values.insert("port".into(), self.port.to_string());
        values.insert("dir".into(), self.dir.display().to_string());
        self.values = values;
        self.env = env.to_vec();
        self.cwd = cwd.to_path_buf();
        self.launch().await
    }

    async fn launch(&mut self) -> Result<(), ServiceFailure> {
        let argv: Vec<String> = self
            .spec
            .command
            .iter()
            .map(|t| t.expand(&self.values))
            .collect();
        let child = Child::spawn(Launch {
            what: format!("service {}", self.name),
            argv: &argv,
            env: &self.env,
            cwd: &self.cwd,
            log: self.dir.with_extension("log"),
            stdin: false,
            watch_stdout: None,
        })?;
        self.child = Some(child);
        self.wait_ready().await
    }

    async fn wait_ready(&mut self) -> Result<(), ServiceFailure> {
        let started = Instant::now();
        let fail = |child: &Child, why: String| ServiceFailure::NotReady {
            name: self.name.clone(),
            why,
            last: child.last_lines(),
        };
        loop {
            let child = self.child.as_ref().expect("launched");
            if let Some(status) = child.exited() {
                return Err(fail(child, format!("it exited with status {status}")));
            }
            let ready = match &self.spec.ready {
                Ready::Tcp => tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                    .await
                    .is_ok(),
                Ready::Command(c) => {
                    let argv: Vec<String> = c.iter().map(|t| t.expand(&self.values)).collect();
                    let mut probe = Child::spawn(Launch {
                        what: format!("service {} ready check", self.name),
                        argv: &argv,
                        env: &self.env,
                        cwd: &self.cwd,
                        log: self.dir.with_extension("ready.log"),
                        stdin: false,
                        watch_stdout: None,
                    })?;
                    probe.wait().await == 0
                }
            };
            if ready {
                return Ok(());
            }
            if started.elapsed() > self.spec.ready_timeout {
                return Err(fail(
                    child,
                    format!("not ready after {:?}", self.spec.ready_timeout),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL and start again on the same directory and port.
    pub async fn restart(&mut self) -> Result<(), ServiceFailure> {
        if let Some(mut child) = self.child.take() {
            child.kill().await;
        }
        self.launch().await
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(mut child) = self.child.take() {
            child.stop(grace).await;
        }
    }
}
