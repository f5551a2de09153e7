//! Before a scenario's processes start: its roles' ports, its placeholder values, its services
//! made ready (a kept set reset, or renewed) and `setup` run; and the two rows of a scenario that
//! ended before its processes started (interrupted, or one that could not run).

use std::collections::BTreeMap;
use std::time::Instant;

use outbox_trace::detail;
use outbox_trace::Step;

use super::commands::{base_env, run_command};
use super::kept;
use super::service_set::ServiceSet;
use super::shared::{run_err, ScenarioOutcome, SystemEnv, SystemError, Timeline};
use crate::journal::author::Author;
use crate::journal::writer::Entry;
use crate::process::mark::SCENARIO_MARK;
use crate::process::port::{reserve, Reserved};
use crate::system::file::System;
use crate::system::template::Values;

/// A port for each actor of a role with `port = true`, and their reservations: held until the
/// scenario ends, so no other recorder is handed these ports meanwhile.
pub(super) fn role_ports(
    system: &System,
) -> Result<(BTreeMap<String, u16>, Vec<Reserved>), SystemError> {
    let mut ports = BTreeMap::new();
    let mut reserved = Vec::new();
    for (role, actor) in system.all_actors() {
        if system.file.roles[&role].port {
            let held = reserve().map_err(run_err)?;
            ports.insert(actor, held.port());
            reserved.push(held);
        }
    }
    Ok((ports, reserved))
}

/// The scenario's placeholder values: its directory, its services' and its roles' ports.
fn values_of(
    dir: &std::path::Path,
    set: &ServiceSet,
    ports: &BTreeMap<String, u16>,
    env: &SystemEnv<'_>,
) -> Values {
    let mut values = Values::from([("dir".to_string(), dir.display().to_string())]);
    set.placeholders(&mut values);
    for (role, actor) in env.system.all_actors() {
        if let (true, Some(port)) = (actor == role, ports.get(&actor)) {
            values.insert(format!("roles.{role}.port"), port.to_string());
        }
    }
    values
}

/// Makes the services ready (a kept set reset, or renewed if it cannot be; a set not started,
/// started) and runs `setup`, within the deadline and never past a signal. Returns the
/// scenario's placeholder values and the environment every command of it starts from.
pub(super) async fn prepare(
    env: &SystemEnv<'_>,
    set: &mut ServiceSet,
    ports: &BTreeMap<String, u16>,
    dir: &std::path::Path,
    deadline: Instant,
    timeline: &Timeline,
) -> Result<(Values, Vec<(String, String)>), SystemError> {
    let system = env.system;
    let ready = async {
        loop {
            let values = values_of(dir, set, ports, env);
            let mut base = base_env(system, &values, env.extra_env);
            // What this scenario starts carries its mark: its end sweeps its own strays only.
            base.push((SCENARIO_MARK.to_string(), dir.display().to_string()));
            if kept::reuse(env, set, &values, &base, &dir.join("logs")).await? {
                continue;
            }
            set.start(&values, &base, &system.root).await?;
            return Ok::<_, SystemError>((values, base));
        }
    };
    let (values, base) = tokio::select! {
        ready = ready => ready?,
        _ = env.shutdown.cancelled() => return Err(SystemError::Interrupted),
        _ = tokio::time::sleep_until(deadline.into()) => {
            return Err(SystemError::Unavailable(format!(
                "the services did not get ready within --deadline {}s",
                env.deadline.as_secs_f64()
            )));
        }
    };
    timeline.mark("services ready");
    if let Some(setup) = &system.file.setup {
        let argv: Vec<String> = setup.command.iter().map(|t| t.expand(&values)).collect();
        let (status, _, last) = run_command(
            "setup",
            &argv,
            &base,
            &system.root,
            dir.join("logs/setup.log"),
            deadline.saturating_duration_since(Instant::now()),
            env.shutdown,
        )
        .await?;
        if status != 0 {
            return Err(SystemError::Unavailable(format!(
                "setup exited with status {status}; {last}"
            )));
        }
    }
    Ok((values, base))
}

/// A scenario that ended before its processes started (interrupted, or one that could not
/// run): its `run_start` and a `run_end` that says why.
pub async fn closed_early(
    env: &SystemEnv<'_>,
    name: &str,
    retry_of: Option<&str>,
    started: Instant,
    reason: &str,
) -> Result<ScenarioOutcome, SystemError> {
    let record = |step| {
        env.recorder.record(Entry {
            scenario: name.to_string(),
            author: Author::Recorder,
            incarnation: 0,
            ts_ns: env.clock.now(),
            step,
        })
    };
    let start = detail::RunStart {
        tasks: Some(i64::from(env.tasks)),
        system: Some(env.shown.clone()),
        search: env.search.cloned(),
        retry_of: retry_of.map(str::to_string),
        ..detail::RunStart::default()
    };
    record(Step::RunStart(start))
        .await
        .map_err(SystemError::Run)?;
    let end = detail::RunEnd {
        recovered: Some(false),
        elapsed_ms: Some(started.elapsed().as_millis() as u64),
        reason: Some(reason.into()),
        ..detail::RunEnd::default()
    };
    record(Step::RunEnd(end)).await.map_err(SystemError::Run)?;
    Ok(ScenarioOutcome::default())
}
