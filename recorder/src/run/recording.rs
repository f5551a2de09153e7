//! A whole recording: `--out` checked and locked, services up (ours or the user's), every scenario
//! in turn, the trace joined, the summary and the lab's JSON written, services down.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context as _;
use outbox_trace::detail;

use super::summary::{lab_json, print_summary, write_lab_lines, Heading};
use crate::backend::connection::{BackendKind, Connection, Endpoints, Namespace};
use crate::backend::endpoints::Endpoint;
use crate::backend::services::{LocalService, ServiceKind};
use crate::cli::config::RunConfig;
use crate::cli::exit::Failure;
use crate::driver::env::ScenarioEnv;
use crate::driver::run_scenario::run_scenario;
use crate::fault::chaos::ChaosPlan;
use crate::journal::clock::RunClock;
use crate::journal::output::{self, OutLock};
use crate::journal::writer::{salvage, Journal, Target};
use crate::protocol::model::Timing;

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// Scenarios that did not recover.
    pub unrecovered: Vec<String>,
    /// True if Ctrl-C cut the run short.
    pub interrupted: bool,
}

/// Runs every scenario of `config`. `interrupted` is set by a Ctrl-C handler.
pub async fn run(config: &RunConfig, interrupted: Arc<AtomicBool>) -> Result<RunOutcome, Failure> {
    // `--out` is checked, then locked for the whole run, before anything else: the salvage below
    // must never take the segments of a recorder still writing them.
    output::check(&config.out)?;
    let _lock = OutLock::take(&config.out)?;
    if let Some(saved) = salvage(&config.out)? {
        eprintln!(
            "recorder: joined the segments of an interrupted run into {}",
            saved.display()
        );
    }
    let workdir = super::workdir::create()
        .context("creating the run's temporary directory")
        .map_err(Failure::run)?;
    // Our own services live as long as this function: dropped on return, error or panic.
    let mut own = Vec::new();
    let mut service = |given: &Option<Endpoint>, kind: ServiceKind| -> Result<Endpoint, Failure> {
        Ok(match given {
            Some(e) => e.clone(),
            None => {
                let members = LocalService::start_cluster(kind, workdir.path(), config.cluster)?;
                let urls: Vec<String> = members.iter().map(LocalService::url).collect();
                own.extend(members);
                Endpoint::local(urls.join(","))
            }
        })
    };
    let shown = |given: &Option<Endpoint>, used: &Endpoint| match given {
        Some(_) => used.redacted(),
        None => "local".to_string(),
    };
    let (endpoints, shown_endpoints) = match config.backend {
        BackendKind::EtcdJetstream => {
            let etcd = service(&config.etcd, ServiceKind::Etcd)?;
            let nats = service(&config.nats, ServiceKind::Nats)?;
            let shown = BTreeMap::from([
                ("etcd".to_string(), shown(&config.etcd, &etcd)),
                ("nats".to_string(), shown(&config.nats, &nats)),
            ]);
            let nats_creds = config.nats_creds.clone();
            (
                Endpoints::EtcdJetstream {
                    etcd,
                    nats,
                    nats_creds,
                    replicas: config.replicas,
                },
                shown,
            )
        }
        BackendKind::SqliteRedis => {
            let redis = service(&config.redis, ServiceKind::Redis)?;
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

    let run_id = new_run_id();
    let ack_wait = config.timing.ack_wait.max(config.protocol.min_ack_wait());
    let timing = Timing {
        ack_wait,
        ..config.timing
    };
    let metadata = detail::RunConfig {
        backend: Some(config.backend.name().to_string()),
        protocol: Some(config.protocol.name().to_string()),
        recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
        scenarios: config
            .scenarios
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
        endpoints: shown_endpoints,
        ack_wait_ms: Some(ack_wait.as_millis() as i64),
        publish_timeout_ms: Some(timing.publish_timeout.as_millis() as i64),
        cluster: Some(config.cluster as i64),
        replicas: Some(config.replicas as i64),
        ..detail::RunConfig::default()
    };
    let run_json = serde_json::to_string(&metadata).map_err(|e| Failure::run(e.into()))?;
    let own_services = match config.backend {
        BackendKind::EtcdJetstream => config.etcd.is_none() && config.nats.is_none(),
        BackendKind::SqliteRedis => config.redis.is_none(),
    };
    let chaos = config.chaos.map(|(seed, window)| {
        let workers = config.load.workers.max(2);
        let targets = config
            .backend
            .chaos_targets(workers, own_services, config.cluster);
        ChaosPlan::new(seed, window, targets)
    });
    let services = std::sync::Mutex::new(own);
    let (journal, recorder) = Journal::start(&config.out, &run_id, config.backend.name(), run_json)
        .map_err(Failure::run)?;
    let tallies = journal.tallies();
    let clock = RunClock::start();
    // The wall-clock time of ts_ns = 0, for the spans of --otlp.
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    let env = ScenarioEnv {
        clock,
        recorder: &recorder,
        protocol: config.protocol,
        timing,
        deadline: config.deadline,
        interrupted: &interrupted,
        workdir: workdir.path(),
        tallies: tallies.clone(),
        progress: config.progress,
        chaos: chaos.as_ref(),
        faults: &config.faults,
        trace: config.trace,
        services: &services,
    };
    let mut unrecovered = Vec::new();
    let mut failure = None;
    for (i, name) in config.scenarios.iter().enumerate() {
        if interrupted.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if config.progress {
            eprintln!(
                "[{}/{}] {} ...",
                i + 1,
                config.scenarios.len(),
                name.as_str()
            );
        }
        let connection = Connection {
            endpoints: endpoints.clone(),
            namespace: Namespace::new(&run_id, name.as_str()),
            ack_wait,
            member: String::new(),
        };
        match run_scenario(&env, &name.scenario(&config.load), &connection).await {
            Ok(true) => {}
            Ok(false) => unrecovered.push(name.as_str().to_string()),
            Err(e) => {
                failure = Some(Failure::from(e).context(format!("scenario {}", name.as_str())));
                break;
            }
        }
    }
    drop(env);
    drop(recorder);
    // A failed run's rows never replace a complete trace: they go beside it.
    let target = match failure {
        Some(_) => Target::Series("failed"),
        None => Target::Out,
    };
    let (events, written) = journal.finish(target).await?;
    drop(services);
    if let Some(e) = failure {
        if let Some(path) = written {
            eprintln!(
                "recorder: the failed run's {events} rows are in {}",
                path.display()
            );
        }
        return Err(e);
    }
    if let Some(path) = &config.otlp {
        write_otlp(&config.out, path, epoch).map_err(Failure::run)?;
    }
    let tallies = tallies.lock().expect("tally lock").clone();
    let heading = Heading {
        backend: config.backend.name(),
        protocol: Some(config.protocol.name()),
        out: &config.out,
    };
    print_summary(&run_id, &heading, &tallies, events);
    if config.backend == BackendKind::SqliteRedis {
        for path in
            write_lab_lines(&lab_dir(&config.out), &tallies).map_err(|e| Failure::run(e.into()))?
        {
            println!("wrote {}", path.display());
        }
    }
    if let Some(path) = &config.report {
        let body = serde_json::to_string_pretty(&lab_json(&run_id, &heading, &tallies))
            .map_err(|e| Failure::run(e.into()))?;
        std::fs::write(path, body + "\n")
            .with_context(|| format!("writing {}", path.display()))
            .map_err(Failure::run)?;
    }
    Ok(RunOutcome {
        unrecovered,
        interrupted: interrupted.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// Writes the finished trace `parquet` again as OTLP JSON Lines at `path`: the rows read back
/// from the file the run wrote, so both files hold the same rows.
pub fn write_otlp(
    parquet: &std::path::Path,
    path: &std::path::Path,
    epoch: u64,
) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let trace = outbox_trace::read_trace(parquet)
        .with_context(|| format!("reading back {}", parquet.display()))?;
    // Written beside the file it replaces and renamed into place once whole.
    let tmp = tempfile::Builder::new()
        .prefix(".outbox-trace-otlp")
        .tempfile_in(output::directory(path))
        .with_context(|| format!("writing {}", path.display()))?;
    outbox_trace::otlp::write::create(tmp.path(), &trace.events, epoch)?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The run's output directory: `<out-dir>/<out-stem>/` (the lab files and the SQLite databases).
pub fn lab_dir(out: &std::path::Path) -> PathBuf {
    let stem = out.file_stem().unwrap_or_default();
    out.with_file_name(stem)
}

pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let salt = (now.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0xffff;
    format!("run-{}-{salt:04x}", now.as_secs())
}
