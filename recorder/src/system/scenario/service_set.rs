//! A scenario's services as one set ([`ServiceSet`]: planned in a directory, started together,
//! checked, stopped with whatever their processes left), and the idle sets kept between scenarios
//! ([`KeptServices`]). When a set is taken, reset or renewed is [`super::kept`]'s.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::fault::apply::continue_group;
use crate::process::mark::SCENARIO_MARK;
use crate::system::file::System;
use crate::system::services::{Service, ServiceFailure};
use crate::system::template::Values;

/// The services one scenario runs on.
pub struct ServiceSet {
    /// Holds each service's directory (`services/NAME`); the mark its processes carry.
    dir: PathBuf,
    /// The services, by name.
    pub services: Vec<(String, Service)>,
    /// Whether they were started.
    pub started: bool,
    /// Whether a scenario ran on them since they started (the next one runs `reset` first).
    pub used: bool,
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
    ) -> Result<(), ServiceFailure> {
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
    pub async fn still_ready(&mut self) -> Result<(), ServiceFailure> {
        let checks = self.services.iter_mut().map(|(_, s)| s.still_ready());
        futures::future::try_join_all(checks).await?;
        Ok(())
    }

    /// Stops the services together (a paused one continued first), then whatever their
    /// processes left running under the set's mark.
    pub async fn stop(mut self, grace: Duration) {
        for (_, service) in &self.services {
            if let Some(group) = service.group() {
                continue_group(group);
            }
        }
        futures::future::join_all(self.services.iter_mut().map(|(_, s)| s.stop(grace))).await;
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
    pub fn take(&self) -> Option<ServiceSet> {
        self.idle.lock().ok()?.pop()
    }

    /// A set for the next scenario to take.
    pub fn give_back(&self, mut set: ServiceSet) {
        set.used = true;
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(set);
        }
    }

    /// Stops every kept set (the search is over).
    pub async fn stop(&self, grace: Duration) {
        let sets = self.idle.lock().map(|mut i| std::mem::take(&mut *i));
        for set in sets.unwrap_or_default() {
            set.stop(grace).await;
        }
    }
}
