//! The services a system file names (`[services.NAME]`): each started in a directory of its own
//! on a free loopback port as a [`Server`], waited for until its ready check passes, restarted by
//! a fault with its directory kept, and stopped at the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::file::{Ready, ServiceSpec};
use super::template::Values;
use crate::process::child::{Child, Launch, SpawnError};
use crate::process::port::{reserve, Reserved};
use crate::process::server::{NotReady, Server};

/// A service that did not come up.
#[derive(Debug, thiserror::Error)]
pub enum ServiceFailure {
    /// Its command could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// It exited or never answered.
    #[error("service {name} never got ready ({why})")]
    NotReady {
        /// The service.
        name: String,
        /// Exited with a status, or timed out, with its last output lines.
        why: String,
    },
}

/// How a service's readiness is asked: its `ready` command, or a TCP connection to its port.
struct Probe {
    argv: Option<Vec<String>>,
    port: u16,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    log: PathBuf,
    what: String,
}

impl Probe {
    async fn ask(&self) -> Result<bool, SpawnError> {
        match &self.argv {
            None => Ok(tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()),
            Some(argv) => {
                let mut check = Child::spawn(Launch {
                    what: self.what.clone(),
                    argv,
                    env: &self.env,
                    cwd: &self.cwd,
                    log: self.log.clone(),
                    stdin: false,
                    watch_stdout: None,
                })?;
                Ok(check.wait().await == 0)
            }
        }
    }
}

/// One service of a system.
pub struct Service {
    name: String,
    spec: ServiceSpec,
    /// Its port (`${port}`).
    pub port: u16,
    /// The port's reservation, held until the service is dropped (its scenario's end).
    _reserved: Reserved,
    /// Its directory (`${dir}`), kept across restarts.
    pub dir: PathBuf,
    values: Values,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    server: Option<Server>,
}

impl Service {
    /// A service not yet started: its port and directory chosen.
    pub fn plan(name: &str, spec: &ServiceSpec, scenario_dir: &Path) -> std::io::Result<Service> {
        let dir = scenario_dir.join("services").join(name);
        std::fs::create_dir_all(&dir)?;
        let reserved = reserve()?;
        Ok(Service {
            name: name.to_string(),
            spec: spec.clone(),
            port: reserved.port(),
            _reserved: reserved,
            dir,
            values: Values::new(),
            env: Vec::new(),
            cwd: PathBuf::new(),
            server: None,
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
        let argv: Vec<String> = self
            .spec
            .command
            .iter()
            .map(|t| t.expand(&self.values))
            .collect();
        self.server = Some(Server::new(
            format!("service {}", self.name),
            argv,
            self.env.clone(),
            &self.cwd,
            self.dir.with_extension("log"),
        ));
        self.launch().await
    }

    async fn launch(&mut self) -> Result<(), ServiceFailure> {
        let probe = self.probe();
        let Some(server) = self.server.as_mut() else {
            return Ok(());
        };
        let started = server.start(self.spec.ready_timeout, || probe.ask()).await;
        started.map_err(|e| self.failure(e))
    }

    /// Whether a service that was started still runs and passes its ready check (asked until
    /// its `ready_timeout`): a service kept between scenarios is checked before each one.
    pub async fn still_ready(&mut self) -> Result<(), ServiceFailure> {
        let probe = self.probe();
        let Some(server) = self.server.as_mut() else {
            return Err(self.failure(NotReady::Exited {
                status: -1,
                last: "not started".into(),
            }));
        };
        let ready = server
            .wait_ready(self.spec.ready_timeout, || probe.ask())
            .await;
        ready.map_err(|e| self.failure(e))
    }

    fn failure(&self, e: NotReady) -> ServiceFailure {
        match e {
            NotReady::Spawn(e) => ServiceFailure::Spawn(e),
            e => ServiceFailure::NotReady {
                name: self.name.clone(),
                why: e.to_string(),
            },
        }
    }

    fn probe(&self) -> Probe {
        Probe {
            argv: match &self.spec.ready {
                Ready::Tcp => None,
                Ready::Command(c) => Some(c.iter().map(|t| t.expand(&self.values)).collect()),
            },
            port: self.port,
            env: self.env.clone(),
            cwd: self.cwd.clone(),
            log: self.dir.with_extension("ready.log"),
            what: format!("service {} ready check", self.name),
        }
    }

    /// SIGKILL and start again on the same directory and port.
    pub async fn restart(&mut self) -> Result<(), ServiceFailure> {
        if let Some(server) = self.server.as_mut() {
            server.kill().await;
        }
        self.launch().await
    }

    /// Its process group, while it runs.
    pub fn group(&self) -> Option<i32> {
        self.server.as_ref().and_then(Server::group)
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&mut self, grace: Duration) {
        if let Some(server) = self.server.as_mut() {
            server.stop(grace).await;
        }
    }
}
