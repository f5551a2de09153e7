//! A scenario's services as one set, and the sets kept between scenarios (`[reset]`).
//!
//! Without `[reset]` each scenario plans its services in its own directory, starts them, runs
//! `setup` and stops them at its end. With it, `explore` keeps one set per job slot: a scenario
//! takes a set, checks that each service still passes its ready check, runs `reset` then `setup`,
//! and gives the set back at its end (a service a fault restarted, paused or cut off included:
//! the ready check and `reset` decide). A set whose ready check or `reset` fails, or whose
//! scenario could not run, is stopped, and a fresh set is started in a fresh directory on fresh
//! ports. A kept set's processes carry its own mark, so a scenario's end sweeps its own processes
//! and leaves the set's alone.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::commands::run_command;
use super::shared::{numbered_dir, SystemEnv, SystemError, GRACE};
use crate::fault::apply::continue_group;
use crate::process::reaper::SCENARIO_MARK;
use crate::system::file::System;
use crate::system::services::Service;
use crate::system::template::Values;

/// The services one scenario runs on.
pub struct ServiceSet {
    /// Holds each service's directory (`services/NAME`); the mark its processes carry.
    dir: PathBuf,
    /// The services, by name.
    pub services: Vec<(String, Service)>,
    /// Whether they were started.
    started: bool,
    /// Whether a scenario ran on them since they started (the next one runs `reset` first).
    used: bool,
}

impl ServiceSet {
    /// The services of `system`, not started, their directories under `dir`.
    pub fn plan(system: &System, dir: &Path) -> std::io::Result<ServiceSet> {
        let mut services = Vec::new();
        for (name, spec) in &system.file.services {
            services.push((name.clone(), Service::plan(name, spec, dir)?));
        }
        Ok(ServiceSet {
            dir: dir.to_path_buf(),
            services,
            started: false,
            used: false,
        })
    }

    /// Their placeholder values: `services.NAME.port`, `.real_port` and `.dir`.
    pub fn placeholders(&self, values: &mut Values) {
        for (name, s) in &self.services {
            values.insert(format!("services.{name}.port"), s.port.to_string());
            values.insert(format!("services.{name}.real_port"), s.port.to_string());
            values.insert(format!("services.{name}.dir"), s.dir.display().to_string());
        }
    }

    /// `env` with the set's own mark on it: the processes of a kept set outlive the scenario
    /// that started them, so they must not carry its mark.
    fn marked(&self, env: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: Vec<_> = env
            .iter()
            .filter(|(k, _)| k != SCENARIO_MARK)
            .cloned()
            .collect();
        env.push((SCENARIO_MARK.to_string(), self.dir.display().to_string()));
        env
    }

    /// Starts the services together, each waited for until its ready check passes.
    pub async fn start(
        &mut self,
        values: &Values,
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<(), SystemError> {
        if self.started {
            return Ok(());
        }
        let env = self.marked(env);
        let starts = self
            .services
            .iter_mut()
            .map(|(_, service)| service.start(values, &env, cwd));
        futures::future::try_join_all(starts).await?;
        self.started = true;
        Ok(())
    }

    /// Every service still passes its ready check.
    async fn still_ready(&mut self) -> Result<(), SystemError> {
        let checks = self.services.iter_mut().map(|(_, s)| s.still_ready());
        futures::future::try_join_all(checks).await?;
        Ok(())
    }

    /// Stops the services together (a paused one continued first), then whatever their
    /// processes left running under the set's mark.
    pub async fn stop(mut self) {
        for (_, service) in &self.services {
            if let Some(group) = service.group() {
                continue_group(group);
            }
        }
        futures::future::join_all(self.services.iter_mut().map(|(_, s)| s.stop(GRACE))).await;
        crate::process::reaper::sweep(Some(&self.dir.display().to_string())).await;
    }
}

/// The sets kept between the scenarios of a search: at most one per scenario running at once.
#[derive(Default)]
pub struct KeptServices {
    idle: Mutex<Vec<ServiceSet>>,
}

impl KeptServices {
    /// A set no scenario is using, if there is one.
    fn take(&self) -> Option<ServiceSet> {
        self.idle.lock().ok()?.pop()
    }

    /// A set for the next scenario to take.
    fn give_back(&self, mut set: ServiceSet) {
        set.used = true;
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(set);
        }
    }

    /// Stops every kept set (the search is over).
    pub async fn stop(&self) {
        let sets = self.idle.lock().map(|mut i| std::mem::take(&mut *i));
        for set in sets.unwrap_or_default() {
            set.stop().await;
        }
    }
}

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
        _ => set.stop().await,
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
            std::mem::replace(set, fresh).stop().await;
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
