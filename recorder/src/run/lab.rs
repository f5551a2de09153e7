//! The built-in lab as a recording's [`Subject`]: its services (ours, started in the run's
//! directory and stopped when the subject is dropped, or the user's), the chaos plan drawn once
//! for the run, one scenario at a time on the chosen backend, and the dual-write lab's lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use outbox_trace::detail;

use super::recording::{Opened, Run, Subject};
use super::summary::write_lab_lines;
use crate::backend::connection::{BackendKind, Connection, Endpoints, Namespace};
use crate::backend::endpoints::Endpoint;
use crate::backend::services::{LocalService, ServiceKind};
use crate::cli::config::RunConfig;
use crate::cli::exit::Failure;
use crate::driver::env::ScenarioEnv;
use crate::driver::run_scenario::run_scenario;
use crate::fault::chaos::ChaosPlan;
use crate::journal::writer::Tallies;
use crate::protocol::model::Timing;

/// The lab, for one recording.
pub struct Lab<'c> {
    config: &'c RunConfig,
    /// Our own services: they live as long as the subject (dropped on return, error or panic).
    services: tokio::sync::Mutex<Vec<LocalService>>,
    endpoints: Option<Endpoints>,
    chaos: Option<ChaosPlan>,
    timing: Timing,
}

impl<'c> Lab<'c> {
    /// The lab as `config` describes it; nothing starts before [`Subject::open`].
    pub fn new(config: &'c RunConfig) -> Self {
        let timing = Timing {
            ack_wait: config.timing.ack_wait.max(config.protocol.min_ack_wait()),
            ..config.timing
        };
        Lab {
            config,
            services: tokio::sync::Mutex::new(Vec::new()),
            endpoints: None,
            chaos: None,
            timing,
        }
    }

    /// The user's endpoint, or a local service (cluster) of ours started in `workdir`.
    async fn service(
        &mut self,
        given: &Option<Endpoint>,
        kind: ServiceKind,
        workdir: &Path,
    ) -> Result<Endpoint, Failure> {
        Ok(match given {
            Some(e) => e.clone(),
            None => {
                let members =
                    LocalService::start_cluster(kind, workdir, self.config.cluster).await?;
                let urls: Vec<String> = members.iter().map(LocalService::url).collect();
                self.services.get_mut().extend(members);
                Endpoint::local(urls.join(","))
            }
        })
    }
}

impl Subject for Lab<'_> {
    async fn open(&mut self, workdir: &Path) -> Result<Opened, Failure> {
        let config = self.config;
        let shown = |given: &Option<Endpoint>, used: &Endpoint| match given {
            Some(_) => used.redacted(),
            None => "local".to_string(),
        };
        let (endpoints, shown_endpoints) = match config.backend {
            BackendKind::EtcdJetstream => {
                let etcd = self
                    .service(&config.etcd, ServiceKind::Etcd, workdir)
                    .await?;
                let nats = self
                    .service(&config.nats, ServiceKind::Nats, workdir)
                    .await?;
                let shown = BTreeMap::from([
                    ("etcd".to_string(), shown(&config.etcd, &etcd)),
                    ("nats".to_string(), shown(&config.nats, &nats)),
                ]);
                let endpoints = Endpoints::EtcdJetstream {
                    etcd,
                    nats,
                    nats_creds: config.nats_creds.clone(),
                    replicas: config.replicas,
                };
                (endpoints, shown)
            }
            BackendKind::SqliteRedis => {
                let redis = self
                    .service(&config.redis, ServiceKind::Redis, workdir)
                    .await?;
                let db_dir = config
                    .db_dir
                    .clone()
                    .unwrap_or_else(|| lab_dir(&config.out));
                std::fs::create_dir_all(&db_dir)
                    .with_context(|| format!("creating {}", db_dir.display()))
                    .map_err(Failure::run)?;
                let shown = BTreeMap::from([
                    ("redis".to_string(), shown(&config.redis, &redis)),
                    ("db".to_string(), db_dir.display().to_string()),
                ]);
                (Endpoints::SqliteRedis { db_dir, redis }, shown)
            }
        };
        self.endpoints = Some(endpoints);
        let own_services = match config.backend {
            BackendKind::EtcdJetstream => config.etcd.is_none() && config.nats.is_none(),
            BackendKind::SqliteRedis => config.redis.is_none(),
        };
        self.chaos = config.chaos.map(|(seed, window)| {
            let workers = config.load.workers.max(2);
            let reach = config
                .backend
                .chaos_reach(workers, own_services, config.cluster);
            ChaosPlan::new(seed, window, reach)
        });
        let scenarios: Vec<String> = config
            .scenarios
            .iter()
            .map(|s| s.as_str().to_string())
            .collect();
        let metadata = detail::RunConfig {
            backend: Some(config.backend.name().to_string()),
            protocol: Some(config.protocol.name().to_string()),
            recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
            scenarios: scenarios.clone(),
            endpoints: shown_endpoints,
            ack_wait_ms: Some(self.timing.ack_wait.as_millis() as i64),
            publish_timeout_ms: Some(self.timing.publish_timeout.as_millis() as i64),
            cluster: Some(config.cluster as i64),
            replicas: Some(config.replicas as i64),
            ..detail::RunConfig::default()
        };
        Ok(Opened {
            backend: config.backend.name().to_string(),
            protocol: Some(config.protocol.name()),
            metadata,
            scenarios,
        })
    }

    async fn scenario(&mut self, run: &Run<'_>, index: usize) -> Result<bool, Failure> {
        let config = self.config;
        let name = config.scenarios[index];
        let env = ScenarioEnv {
            clock: run.clock,
            recorder: run.recorder,
            protocol: config.protocol,
            timing: self.timing,
            deadline: config.deadline,
            shutdown: run.shutdown,
            workdir: run.workdir,
            tallies: run.tallies.clone(),
            progress: config.progress,
            chaos: self.chaos.as_ref(),
            faults: &config.faults,
            trace: config.trace,
            services: &self.services,
        };
        let connection = Connection {
            endpoints: self.endpoints.clone().expect("the lab is open"),
            namespace: Namespace::new(run.run_id, name.as_str()),
            ack_wait: self.timing.ack_wait,
            member: String::new(),
        };
        run_scenario(&env, &name.scenario(&config.load), &connection)
            .await
            .map_err(Failure::from)
    }

    /// Our own services are killed and waited for, so none outlives the recorder.
    async fn close(&mut self) {
        for service in self.services.get_mut().iter_mut() {
            service.kill().await;
        }
    }

    fn finish(&mut self, tallies: &Tallies) -> Result<(), Failure> {
        if self.config.backend == BackendKind::SqliteRedis {
            let tallies = tallies.lock().expect("tally lock").clone();
            for path in write_lab_lines(&lab_dir(&self.config.out), &tallies)
                .map_err(|e| Failure::run(e.into()))?
            {
                println!("wrote {}", path.display());
            }
        }
        Ok(())
    }
}

/// The run's output directory: `<out-dir>/<out-stem>/` (the lab files and the SQLite databases).
pub fn lab_dir(out: &Path) -> PathBuf {
    let stem = out.file_stem().unwrap_or_default();
    out.with_file_name(stem)
}
