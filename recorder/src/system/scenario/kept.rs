//! Which services a scenario runs on: a set kept between scenarios (`[reset]`), reset before it
//! is used again, or a set of the scenario's own.
//!
//! Without `[reset]` each scenario plans its services in its own directory, starts them, runs
//! `setup` and stops them at its end. With it, `explore` keeps one set per job slot: a scenario
//! takes a set, checks that each service still passes its ready check, runs `reset` then `setup`,
//! and gives the set back at its end (a service a fault restarted, paused or cut off included:
//! the ready check and `reset` decide). A set whose ready check or `reset` fails, or whose
//! scenario could not run, is stopped, and a fresh set is started in a fresh directory on fresh
//! ports. A kept set's processes carry its own mark, so a scenario's end sweeps its own processes
//! and leaves the set's alone.

use std::path::Path;

use super::commands::run_command;
use super::service_set::ServiceSet;
use super::shared::{numbered_dir, SystemEnv, SystemError, GRACE};
use crate::system::template::Values;

/// The services for a scenario in `scenario_dir`: a kept set when the search keeps them, else a
/// set of the scenario's own, in its directory. Not started yet unless kept.
pub fn acquire(env: &SystemEnv<'_>, scenario_dir: &Path) -> std::io::Result<ServiceSet> {
    match env.kept {
        Some(kept) => match kept.take() {
            Some(set) => Ok(set),
            None => ServiceSet::plan(env.system, &numbered_dir(env.workdir, "k")?),
        },
        None => ServiceSet::plan(env.system, scenario_dir),
    }
}

/// After the scenario: a kept set goes back to be reused unless its scenario could not run (then
/// it is stopped); a scenario's own set is stopped.
pub async fn release(env: &SystemEnv<'_>, set: ServiceSet, could_run: bool) {
    match env.kept {
        Some(kept) if could_run && set.started => kept.give_back(set),
        _ => set.stop(GRACE).await,
    }
}

/// Makes a used set ready for another scenario: each service must still pass its ready check,
/// then `reset` must pass. If either fails the set is stopped and a fresh one, not started, takes
/// its place: the answer is then `true` (its placeholders changed, the caller reads them again).
/// A set no scenario used is left as it is.
pub async fn reuse(
    env: &SystemEnv<'_>,
    set: &mut ServiceSet,
    values: &Values,
    base: &[(String, String)],
    log_dir: &Path,
) -> Result<bool, SystemError> {
    if !set.used {
        return Ok(false);
    }
    match reset(env, set, values, base, log_dir).await {
        Ok(()) => Ok(false),
        Err(SystemError::Unavailable(why)) => {
            eprintln!("recorder: the services kept between scenarios start anew ({why})");
            let fresh = numbered_dir(env.workdir, "k")
                .and_then(|dir| ServiceSet::plan(env.system, &dir))
                .map_err(super::shared::run_err)?;
            std::mem::replace(set, fresh).stop(GRACE).await;
            Ok(true)
        }
        Err(e) => Err(e),
    }
}

/// A used set's ready checks, then `reset`.
async fn reset(
    env: &SystemEnv<'_>,
    set: &mut ServiceSet,
    values: &Values,
    base: &[(String, String)],
    log_dir: &Path,
) -> Result<(), SystemError> {
    set.still_ready().await?;
    let Some(reset) = &env.system.file.reset else {
        return Ok(());
    };
    let argv: Vec<String> = reset.command.iter().map(|t| t.expand(values)).collect();
    let (status, _, last) = run_command(
        "reset",
        &argv,
        base,
        &env.system.root,
        log_dir.join("reset.log"),
        env.deadline,
        env.shutdown,
    )
    .await?;
    if status != 0 {
        return Err(SystemError::Unavailable(format!(
            "reset exited with status {status}; {last}"
        )));
    }
    Ok(())
}
