//! A whole recording of a user's own system (`recorder run --system FILE`): every scenario in a
//! fresh directory with fresh services, one journal, the trace joined, the summary printed.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use anyhow::Context as _;
use outbox_trace::detail;

use super::recording::{new_run_id, write_otlp, RunOutcome};
use super::summary::{lab_json, print_summary, Heading};
use crate::cli::exit::Failure;
use crate::journal::clock::RunClock;
use crate::journal::output::{self, OutLock};
use crate::journal::writer::{salvage, Journal, Target};
use crate::system::config::SystemConfig;
use crate::system::scenario::{run_scenario, SystemEnv, OWN_EXIT_RESTARTS};

/// Runs every scenario of `config`. `interrupted` is set by Ctrl-C, SIGTERM or SIGHUP.
pub async fn run_system(
    config: &SystemConfig,
    interrupted: Arc<AtomicBool>,
) -> Result<RunOutcome, Failure> {
    // `--out` checked and locked before anything else, as for the built-in protocol.
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
    let system = &config.system;
    let backend = format!("system:{}", system.file.name);
    let run_id = new_run_id();
    let metadata = detail::RunConfig {
        backend: Some(backend.clone()),
        recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
        scenarios: config.scenarios.iter().map(|(n, _)| n.clone()).collect(),
        ..detail::RunConfig::default()
    };
    let run_json = serde_json::to_string(&metadata).map_err(|e| Failure::run(e.into()))?;
    let (journal, recorder) =
        Journal::start(&config.out, &run_id, &backend, run_json).map_err(Failure::run)?;
    let tallies = journal.tallies();
    let clock = RunClock::start();
    let epoch_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .saturating_sub(u64::try_from(clock.now()).unwrap_or(0));
    let restarts_left = AtomicU32::new(OWN_EXIT_RESTARTS);
    let shown = config.shown();
    let env = SystemEnv {
        system,
        extra_env: &config.env,
        faults: &config.faults,
        tasks: config.tasks,
        chaos: config.chaos,
        deadline: config.deadline,
        recorder: &recorder,
        clock,
        epoch_unix_ns,
        run_id: &run_id,
        workdir: workdir.path(),
        interrupted: &interrupted,
        restarts_left: &restarts_left,
        shown: &shown,
    };
    let mut unrecovered = Vec::new();
    let mut failure = None;
    for (i, (name, faults)) in config.scenarios.iter().enumerate() {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        if config.progress {
            eprintln!("[{}/{}] {name} ...", i + 1, config.scenarios.len());
        }
        match run_scenario(&env, name, faults).await {
            Ok(outcome) => {
                if outcome.skipped_count > 0 {
                    eprintln!(
                        "recorder: scenario {name}: {} span(s) gave no row: {}",
                        outcome.skipped_count,
                        outcome.skipped.join("; ")
                    );
                }
                if let Some(why) = &outcome.no_observed {
                    eprintln!("recorder: scenario {name}: no observed row: {why}");
                }
                if !outcome.recovered {
                    unrecovered.push(name.clone());
                }
            }
            Err(e) => {
                failure = Some(Failure::from(e).context(format!("scenario {name}")));
                break;
            }
        }
    }
    drop(recorder);
    // A failed run's rows never replace a complete trace: they go beside it.
    let target = match failure {
        Some(_) => Target::Series("failed"),
        None => Target::Out,
    };
    // (The error stays one line: the failed run's rows are in `<out-stem>.failed.parquet`.)
    let (events, _) = journal.finish(target).await?;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(path) = &config.otlp {
        write_otlp(&config.out, path, epoch_unix_ns).map_err(Failure::run)?;
    }
    let tallies = tallies.lock().expect("tally lock").clone();
    let heading = Heading {
        backend: &backend,
        protocol: None,
        out: &config.out,
    };
    print_summary(&run_id, &heading, &tallies, events);
    if let Some(path) = &config.report {
        let body = serde_json::to_string_pretty(&lab_json(&run_id, &heading, &tallies))
            .map_err(|e| Failure::run(e.into()))?;
        std::fs::write(path, body + "\n")
            .with_context(|| format!("writing {}", path.display()))
            .map_err(Failure::run)?;
    }
    Ok(RunOutcome {
        unrecovered,
        interrupted: interrupted.load(Ordering::Relaxed),
    })
}
