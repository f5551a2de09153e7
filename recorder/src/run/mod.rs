//! One recording from start to end, for either subject ([`recording`]): `--out` locked, the
//! subject's shared parts up, every scenario in turn, the trace joined; the built-in lab
//! ([`lab`]) and a team's own system ([`system`]) as its subjects, and the systematic search of
//! a team's system ([`explore`], judged and tabled by [`searched`], identified and spread over
//! shards by [`plan`], continued after a cut by [`resume`]); what both print and write at
//! the end ([`summary`]); their temporary directory, removed on every ending and after a
//! killed run ([`workdir`]); and each subcommand's glue, from resolved arguments to the exit
//! code ([`commands`]).

pub mod commands;
pub mod explore;
pub mod lab;
pub mod plan;
pub mod recording;
pub mod resume;
pub mod searched;
pub mod summary;
pub mod system;
pub mod workdir;

use tokio_util::sync::CancellationToken;

use crate::cli::config::RunConfig;
use crate::cli::exit::Failure;
use crate::system::config::SystemConfig;
use recording::{record, Output, RunOutcome};

/// Records the built-in lab as `config` says, until done or `shutdown`.
pub async fn run(config: &RunConfig, shutdown: CancellationToken) -> Result<RunOutcome, Failure> {
    let output = Output {
        out: &config.out,
        otlp: config.otlp.as_deref(),
        report: config.report.as_deref(),
        progress: config.progress,
    };
    record(output, lab::Lab::new(config), shutdown).await
}

/// Records a team's own system as `config` says, until done or `shutdown`.
pub async fn run_system(
    config: &SystemConfig,
    shutdown: CancellationToken,
) -> Result<RunOutcome, Failure> {
    let output = Output {
        out: &config.out,
        otlp: config.otlp.as_deref(),
        report: config.report.as_deref(),
        progress: config.progress,
    };
    record(output, system::TeamSystem::new(config), shutdown).await
}

/// How a search ended.
#[derive(Debug)]
pub struct Explored {
    /// The verdict over the trace (`analyzer check`'s).
    pub verdict: outbox_analyzer::check::RunVerdict,
    /// The shutdown cut it short.
    pub interrupted: bool,
}

/// Searches a team's own system as `config` says (`recorder explore`): records the calm run and
/// every schedule, judges the trace, prints the shape or the coverage table, writes `--json` and
/// `--junit`.
pub async fn explore(
    config: &crate::cli::config::ExploreConfig,
    shutdown: CancellationToken,
) -> Result<Explored, Failure> {
    use anyhow::Context as _;
    let system = &config.system;
    let output = Output {
        out: &system.out,
        otlp: None,
        report: None,
        progress: system.progress,
    };
    let mut search =
        explore::Explore::new(system, config.jobs, config.pause_for, config.shape_only);
    search.only.clone_from(&config.only);
    search.pairs = config.pairs;
    search.fail_fast = config.fail_fast;
    search.resume = config.resume;
    search.shard = config.shard;
    search.plan_file.clone_from(&config.plan);
    search.write_plan.clone_from(&config.write_plan);
    let outcome = record(output, &mut search, shutdown).await?;
    if config.shape_only {
        print!("{}", searched::shape_text(&search.shape));
    }
    if let Some(first) = &search.stopped_at {
        eprintln!(
            "recorder: explore: stopped at the first invalid schedule ({first}); {} schedule(s) not run (--fail-fast)",
            search.not_run
        );
    }
    let report = outbox_analyzer::check::check_paths(std::slice::from_ref(&system.out))
        .map_err(|e| Failure::run(anyhow::anyhow!("judging {}: {e}", system.out.display())))?;
    let found = searched::findings(&report, &search.calm_name(), &search.shape, &search.tried);
    if !config.shape_only {
        let services: Vec<String> = system.system.file.services.keys().cloned().collect();
        print!("{}", searched::table(&found, &services));
    } else {
        println!("calm: {}", found.calm);
    }
    if let Some(path) = &config.json {
        let text = serde_json::to_string_pretty(&found).map_err(|e| Failure::run(e.into()))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))
            .map_err(Failure::run)?;
    }
    if let Some(path) = &config.junit {
        let mut xml = Vec::new();
        outbox_analyzer::explain::junit::write(&report, &mut xml)
            .and_then(|()| {
                let xml = searched::junit_with_errors(&String::from_utf8_lossy(&xml), &found);
                std::fs::write(path, xml)
            })
            .with_context(|| format!("writing {}", path.display()))
            .map_err(Failure::run)?;
    }
    let verdict = could_not_run_verdict(&found, report.verdict)?;
    Ok(Explored {
        verdict,
        interrupted: outcome.interrupted,
    })
}

/// The search's verdict given the schedules that could not run: exit 4 when more than half of
/// them could not; otherwise `verdict`, but never valid while one could not.
fn could_not_run_verdict(
    found: &searched::Search<'_>,
    verdict: outbox_analyzer::check::RunVerdict,
) -> Result<outbox_analyzer::check::RunVerdict, Failure> {
    use outbox_analyzer::check::RunVerdict;
    let all = found.schedules.len();
    let could_not = found
        .schedules
        .iter()
        .filter(|f| f.verdict == crate::system::scenario::COULD_NOT_RUN)
        .count();
    if could_not * 2 > all {
        return Err(Failure::Unavailable(anyhow::anyhow!(
            "{could_not} of {all} schedule(s) could not run"
        )));
    }
    Ok(match verdict {
        RunVerdict::Valid if could_not > 0 => RunVerdict::Unknown,
        v => v,
    })
}
