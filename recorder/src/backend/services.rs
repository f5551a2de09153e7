//! Local etcd, nats-server and redis-server, started on free loopback ports inside the run's temp
//! dir and stopped when dropped: at the end of a run, on error, on Ctrl-C (the run returns and drops
//! them) and on panic (unwinding drops them). Each is started by [`crate::process::spawn`]: with
//! `PDEATHSIG`, so a killed recorder takes its services with it; in a process group of its own, so
//! a terminal's Ctrl-C (SIGINT to the whole foreground group) reaches only the recorder, which then
//! stops them after the trace has what it needs; and without the recorder's `OUTBOX_TRACE_*`
//! variables.
//!
//! [`LocalService::start_cluster`] starts several members of one etcd cluster or one NATS cluster
//! (JetStream clustered, so streams can be replicated), each with its own ports, data dir and log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::process::{port, spawn};

/// Why a local service could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The program is not installed.
    #[error(
        "`{program}` was not found on PATH: install the Debian packages `etcd-server nats-server \
         redis-server` (apt-get install etcd-server nats-server redis-server), or run \
         `docker compose up -d` and pass the endpoints (--etcd, --nats, --redis)"
    )]
    MissingBinary {
        /// The program looked for.
        program: &'static str,
    },
    /// The program started but never answered its health check.
    #[error("`{program}` did not become ready within {secs} s (its log: {log})")]
    NotReady {
        program: &'static str,
        /// How long start-up waited, in seconds.
        secs: u64,
        /// Where its output went.
        log: String,
    },
    /// The program exited during start-up.
    #[error("`{program}` exited during start-up with {status} (its log: {log})")]
    Exited {
        program: &'static str,
        status: String,
        /// Where its output went.
        log: String,
    },
    /// Anything else the operating system refused.
    #[error("starting `{program}`: {source}")]
    Io {
        program: &'static str,
        source: std::io::Error,
    },
}

/// A service the recorder can start itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceKind {
    /// etcd, single member.
    Etcd,
    /// nats-server with JetStream on a file store.
    Nats,
    /// redis-server with an append-only file synced on every write, so it keeps its data across
    /// a SIGKILL and a restart.
    Redis,
}

impl ServiceKind {
    /// The program's name on PATH.
    pub fn program(self) -> &'static str {
        match self {
            ServiceKind::Etcd => "etcd",
            ServiceKind::Nats => "nats-server",
            ServiceKind::Redis => "redis-server",
        }
    }

    /// True for a broker (nats-server, redis-server), false for a store (etcd).
    pub fn is_broker(self) -> bool {
        self != ServiceKind::Etcd
    }

    /// What the operating system refused while starting this service.
    fn io(self) -> impl Fn(std::io::Error) -> ServiceError {
        move |source| ServiceError::Io {
            program: self.program(),
            source,
        }
    }
}

/// One running local service. Dropping it kills the process.
#[derive(Debug)]
pub struct LocalService {
    kind: ServiceKind,
    dir: PathBuf,
    client_port: u16,
    /// A second port: etcd's peer port, nats' monitoring port.
    aux_port: u16,
    /// This member's place in a cluster, if it is one.
    member: Option<Member>,
    child: Option<Child>,
}

/// A member of a local cluster.
#[derive(Debug, Clone)]
struct Member {
    /// 1-based.
    index: usize,
    /// Every member's peer port (etcd) or route port (nats), in member order.
    peer_ports: Vec<u16>,
}

impl LocalService {
    /// Starts `kind` with its data under `dir` (created if missing) and waits until it answers.
    pub fn start(kind: ServiceKind, dir: &Path) -> Result<Self, ServiceError> {
        let mut service = LocalService {
            kind,
            dir: dir.to_path_buf(),
            client_port: port::free_port().map_err(kind.io())?,
            aux_port: port::free_port().map_err(kind.io())?,
            member: None,
            child: None,
        };
        service.launch()?;
        Ok(service)
    }

    /// Starts a cluster of `size` members of `kind` (one plain service if `size` is 1) and waits
    /// until each answers: etcd with a quorum, nats-server with a JetStream metadata leader.
    pub fn start_cluster(
        kind: ServiceKind,
        dir: &Path,
        size: usize,
    ) -> Result<Vec<Self>, ServiceError> {
        if size <= 1 {
            return Ok(vec![Self::start(kind, dir)?]);
        }
        let peer_ports = (0..size)
            .map(|_| port::free_port().map_err(kind.io()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut members = Vec::with_capacity(size);
        for index in 1..=size {
            let aux_port = match kind {
                ServiceKind::Etcd => peer_ports[index - 1],
                _ => port::free_port().map_err(kind.io())?,
            };
            members.push(LocalService {
                kind,
                dir: dir.to_path_buf(),
                client_port: port::free_port().map_err(kind.io())?,
                aux_port,
                member: Some(Member {
                    index,
                    peer_ports: peer_ports.clone(),
                }),
                child: None,
            });
        }
        // A cluster answers only once a majority is up: start every member, then wait for each.
        for member in &mut members {
            member.spawn()?;
        }
        for member in &mut members {
            member.wait_ready()?;
        }
        Ok(members)
    }

    /// `etcd`, or `etcd-2` for the second member of a cluster.
    pub fn name(&self) -> String {
        match &self.member {
            Some(m) => format!("{}-{}", self.kind.program(), m.index),
            None => self.kind.program().to_string(),
        }
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        match self.kind {
            ServiceKind::Etcd => format!("http://127.0.0.1:{}", self.client_port),
            ServiceKind::Nats => format!("nats://127.0.0.1:{}", self.client_port),
            ServiceKind::Redis => format!("redis://127.0.0.1:{}", self.client_port),
        }
    }

    /// Kills the process with SIGKILL (the data dir is kept) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Which service this is; every member of a cluster gives the same.
    pub fn kind(&self) -> ServiceKind {
        self.kind
    }

    /// SIGKILLs the process and starts it again on the same ports with the same data dir.
    pub fn restart(&mut self) -> Result<(), ServiceError> {
        self.kill();
        self.launch()
    }

    fn launch(&mut self) -> Result<(), ServiceError> {
        self.spawn()?;
        self.wait_ready()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.name()))
    }

    fn spawn(&mut self) -> Result<(), ServiceError> {
        let program = self.kind.program();
        let data = self.dir.join(self.name());
        std::fs::create_dir_all(&data).map_err(|source| ServiceError::Io { program, source })?;
        let log_path = self.log_path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|source| ServiceError::Io { program, source })?;
        let log_err = log
            .try_clone()
            .map_err(|source| ServiceError::Io { program, source })?;
        let mut command = spawn::std_command(program);
        command
            .args(self.args(&data))
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = spawn::spawn_std(command).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ServiceError::MissingBinary { program },
            _ => ServiceError::Io { program, source },
        })?;
        self.child = Some(child);
        Ok(())
    }

    fn args(&self, data: &Path) -> Vec<String> {
        let (p, a) = (self.client_port, self.aux_port);
        let data = data.display().to_string();
        let program = self.kind.program();
        match self.kind {
            ServiceKind::Etcd => {
                let (name, initial) = match &self.member {
                    Some(m) => (
                        self.name(),
                        m.peer_ports
                            .iter()
                            .enumerate()
                            .map(|(i, port)| format!("{program}-{}=http://127.0.0.1:{port}", i + 1))
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    None => (
                        "outbox-trace".to_string(),
                        format!("outbox-trace=http://127.0.0.1:{a}"),
                    ),
                };
                vec![
                    format!("--name={name}"),
                    format!("--data-dir={data}"),
                    format!("--listen-client-urls=http://127.0.0.1:{p}"),
                    format!("--advertise-client-urls=http://127.0.0.1:{p}"),
                    format!("--listen-peer-urls=http://127.0.0.1:{a}"),
                    format!("--initial-advertise-peer-urls=http://127.0.0.1:{a}"),
                    format!("--initial-cluster={initial}"),
                    "--initial-cluster-token=outbox-trace".into(),
                    "--logger=zap".into(),
                    "--log-level=error".into(),
                ]
            }
            ServiceKind::Nats => {
                let mut args = vec![
                    "-js".into(),
                    "-sd".into(),
                    data,
                    "-a".into(),
                    "127.0.0.1".into(),
                    "-p".into(),
                    p.to_string(),
                    "-m".into(),
                    a.to_string(),
                ];
                if let Some(m) = &self.member {
                    let route = |port: &u16| format!("nats://127.0.0.1:{port}");
                    args.extend([
                        "--server_name".into(),
                        self.name(),
                        "--cluster_name".into(),
                        "outbox-trace".into(),
                        "--cluster".into(),
                        route(&m.peer_ports[m.index - 1]),
                        "--routes".into(),
                        m.peer_ports.iter().map(route).collect::<Vec<_>>().join(","),
                    ]);
                }
                args
            }
            ServiceKind::Redis => vec![
                "--bind".into(),
                "127.0.0.1".into(),
                "--port".into(),
                p.to_string(),
                "--save".into(),
                String::new(),
                "--appendonly".into(),
                "yes".into(),
                "--appendfsync".into(),
                "always".into(),
                "--dir".into(),
                data,
            ],
        }
    }

    fn wait_ready(&mut self) -> Result<(), ServiceError> {
        let program = self.kind.program();
        let log = &self.log_path();
        let limit = Duration::from_secs(30);
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(ServiceError::Exited {
                        program,
                        status: status.to_string(),
                        log: log.display().to_string(),
                    });
                }
            }
            if self.healthy() {
                return Ok(());
            }
            if started.elapsed() > limit {
                self.kill();
                return Err(ServiceError::NotReady {
                    program,
                    secs: limit.as_secs(),
                    log: log.display().to_string(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn healthy(&self) -> bool {
        match self.kind {
            ServiceKind::Etcd => http_get(self.client_port, "/health")
                .is_some_and(|body| body.contains("\"health\":\"true\"")),
            ServiceKind::Nats if self.member.is_some() => http_get(self.aux_port, "/jsz")
                .and_then(|response| {
                    let body = response.split_once("\r\n\r\n")?.1;
                    let jsz: serde_json::Value = serde_json::from_str(body).ok()?;
                    Some(!jsz["meta_cluster"]["leader"].as_str()?.is_empty())
                })
                .unwrap_or(false),
            ServiceKind::Nats => http_get(self.aux_port, "/healthz?js-enabled-only=true")
                .is_some_and(|body| {
                    body.starts_with("HTTP/1.1 200") || body.starts_with("HTTP/1.0 200")
                }),
            ServiceKind::Redis => redis_ping(self.client_port),
        }
    }
}

impl Drop for LocalService {
    fn drop(&mut self) {
        self.kill();
    }
}

fn connect(port: u16) -> Option<TcpStream> {
    let stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200))
            .ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    Some(stream)
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = connect(port)?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    Some(body)
}

fn redis_ping(port: u16) -> bool {
    let Some(mut stream) = connect(port) else {
        return false;
    };
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_service_starts_answers_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [ServiceKind::Etcd, ServiceKind::Nats, ServiceKind::Redis] {
            let mut service = LocalService::start(kind, dir.path()).unwrap();
            assert!(service.healthy(), "{kind:?} answers");
            let port = service.client_port;
            service.kill();
            assert!(!service.healthy(), "{kind:?} is gone after kill");
            assert!(
                TcpStream::connect(("127.0.0.1", port)).is_err(),
                "{kind:?} port closed"
            );
        }
        // Nothing outside the temp dir: every service kept its data under it.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"etcd".to_string()) && names.contains(&"nats-server".to_string()));
    }
}
