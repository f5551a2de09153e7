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
//! Each runs as a [`Server`], the one service runner a team's own services use too; this file says
//! only what each program is: its arguments and its health check.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::process::port;
use crate::process::server::{NotReady, Server};

/// How long a service may take to answer its health check.
const READY_LIMIT: Duration = Duration::from_secs(30);

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
pub struct LocalService {
    kind: ServiceKind,
    dir: PathBuf,
    client_port: u16,
    /// A second port: etcd's peer port, nats' monitoring port.
    aux_port: u16,
    /// This member's place in a cluster, if it is one.
    member: Option<Member>,
    server: Option<Server>,
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
    pub async fn start(kind: ServiceKind, dir: &Path) -> Result<Self, ServiceError> {
        let mut service = LocalService {
            kind,
            dir: dir.to_path_buf(),
            client_port: port::free_port().map_err(kind.io())?,
            aux_port: port::free_port().map_err(kind.io())?,
            member: None,
            server: None,
        };
        service.launch().await?;
        Ok(service)
    }

    /// Starts a cluster of `size` members of `kind` (one plain service if `size` is 1) and waits
    /// until each answers: etcd with a quorum, nats-server with a JetStream metadata leader.
    pub async fn start_cluster(
        kind: ServiceKind,
        dir: &Path,
        size: usize,
    ) -> Result<Vec<Self>, ServiceError> {
        if size <= 1 {
            return Ok(vec![Self::start(kind, dir).await?]);
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
                server: None,
            });
        }
        // A cluster answers only once a majority is up: start every member, then wait for each.
        for member in &mut members {
            member.spawn()?;
        }
        for member in &mut members {
            member.wait_ready().await?;
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
    pub async fn kill(&mut self) {
        if let Some(server) = self.server.as_mut() {
            server.kill().await;
        }
    }

    /// Its process group, while it runs.
    pub fn group(&self) -> Option<i32> {
        self.server.as_ref().and_then(Server::group)
    }

    /// Which service this is; every member of a cluster gives the same.
    pub fn kind(&self) -> ServiceKind {
        self.kind
    }

    /// SIGKILLs the process and starts it again on the same ports with the same data dir.
    pub async fn restart(&mut self) -> Result<(), ServiceError> {
        self.kill().await;
        self.launch().await
    }

    async fn launch(&mut self) -> Result<(), ServiceError> {
        self.spawn()?;
        self.wait_ready().await
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("{}.log", self.name()))
    }

    /// Starts the process (its server made on first use), without waiting for it.
    fn spawn(&mut self) -> Result<(), ServiceError> {
        let program = self.kind.program();
        let data = self.dir.join(self.name());
        std::fs::create_dir_all(&data).map_err(|source| ServiceError::Io { program, source })?;
        if self.server.is_none() {
            let argv = std::iter::once(program.to_string())
                .chain(self.args(&data))
                .collect();
            self.server = Some(Server::new(
                format!("service {program}"),
                argv,
                Vec::new(),
                &self.dir,
                self.log_path(),
            ));
        }
        let server = self.server.as_mut().expect("made above");
        server.launch().map_err(|e| match e {
            crate::process::child::SpawnError::NotFound { .. } => {
                ServiceError::MissingBinary { program }
            }
            crate::process::child::SpawnError::Io { source, .. } => {
                ServiceError::Io { program, source }
            }
        })
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

    async fn wait_ready(&mut self) -> Result<(), ServiceError> {
        let program = self.kind.program();
        let log = self.log_path().display().to_string();
        let probe = Probe {
            kind: self.kind,
            client_port: self.client_port,
            aux_port: self.aux_port,
            cluster: self.member.is_some(),
        };
        let server = self.server.as_mut().expect("spawned");
        let ready = server
            .wait_ready(READY_LIMIT, || async move { Ok(probe.healthy().await) })
            .await;
        ready.map_err(|e| match e {
            NotReady::Exited { status, .. } => ServiceError::Exited {
                program,
                status: format!("exit status: {status}"),
                log,
            },
            NotReady::Timeout { after, .. } => ServiceError::NotReady {
                program,
                secs: after.as_secs(),
                log,
            },
            NotReady::Spawn(e) => ServiceError::Io {
                program,
                source: std::io::Error::other(e.to_string()),
            },
        })
    }
}

/// A service's health check: what answering means for each program.
#[derive(Debug, Clone, Copy)]
struct Probe {
    kind: ServiceKind,
    client_port: u16,
    aux_port: u16,
    cluster: bool,
}

impl Probe {
    async fn healthy(self) -> bool {
        match self.kind {
            ServiceKind::Etcd => http_get(self.client_port, "/health")
                .await
                .is_some_and(|body| body.contains("\"health\":\"true\"")),
            ServiceKind::Nats if self.cluster => http_get(self.aux_port, "/jsz")
                .await
                .and_then(|response| {
                    let body = response.split_once("\r\n\r\n")?.1;
                    let jsz: serde_json::Value = serde_json::from_str(body).ok()?;
                    Some(!jsz["meta_cluster"]["leader"].as_str()?.is_empty())
                })
                .unwrap_or(false),
            ServiceKind::Nats => http_get(self.aux_port, "/healthz?js-enabled-only=true")
                .await
                .is_some_and(|body| {
                    body.starts_with("HTTP/1.1 200") || body.starts_with("HTTP/1.0 200")
                }),
            ServiceKind::Redis => redis_ping(self.client_port).await,
        }
    }
}

/// A loopback connection, given 200 ms.
async fn connect(port: u16) -> Option<TcpStream> {
    tokio::time::timeout(
        Duration::from_millis(200),
        TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    .ok()?
    .ok()
}

/// One HTTP/1.0 GET on loopback: the whole response, read within 500 ms.
async fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = connect(port).await?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut body = String::new();
    tokio::time::timeout(Duration::from_millis(500), stream.read_to_string(&mut body))
        .await
        .ok()?
        .ok()?;
    Some(body)
}

/// Whether Redis answers PING within 500 ms.
async fn redis_ping(port: u16) -> bool {
    let Some(mut stream) = connect(port).await else {
        return false;
    };
    if stream.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    let read = tokio::time::timeout(Duration::from_millis(500), stream.read_exact(&mut reply));
    matches!(read.await, Ok(Ok(_))) && &reply == b"+PONG\r\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_service_starts_answers_and_stops() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [ServiceKind::Etcd, ServiceKind::Nats, ServiceKind::Redis] {
            let mut service = LocalService::start(kind, dir.path()).await.unwrap();
            let probe = Probe {
                kind,
                client_port: service.client_port,
                aux_port: service.aux_port,
                cluster: false,
            };
            assert!(probe.healthy().await, "{kind:?} answers");
            service.kill().await;
            assert!(!probe.healthy().await, "{kind:?} is gone after kill");
            assert!(
                std::net::TcpStream::connect(("127.0.0.1", service.client_port)).is_err(),
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
