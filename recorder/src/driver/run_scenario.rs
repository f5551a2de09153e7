//! Running one lab scenario: connect the recorder's own control and set the services up, ready
//! the trigger and the proxies ([`prepare`](super::prepare)), record `run_start`, start the actors
//! ([`cast`](super::cast), each life as [`life_spec`](super::life_spec) says), the loop that
//! carries out the faults, restarts the actors that crash and waits until the services are quiet
//! ([`drive`](super::drive)), and the end with the ground truth and `run_end`
//! ([`ending`](super::ending)). A scenario that does not get quiet before its deadline ends with
//! `recovered: false`.

use super::cast::Cast;
use super::drive::Drive;
use super::ending::end;
use super::env::{drive, ScenarioEnv, ScenarioError};
use super::prepare::Scene;
use super::scenario::Scenario;
use crate::backend::connection::{BackendKind, Connection};
use crate::backend::control::Backend;
use crate::backend::etcd_jetstream::EtcdJetStream;
use crate::backend::sqlite_redis::SqliteRedis;

/// Runs one scenario to its `run_end`. Returns whether it recovered.
pub async fn run_scenario(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> Result<bool, ScenarioError> {
    match connection.endpoints.kind() {
        BackendKind::EtcdJetstream => run_on::<EtcdJetStream>(env, scenario, connection).await,
        BackendKind::SqliteRedis => run_on::<SqliteRedis>(env, scenario, connection).await,
    }
}

/// Connects the recorder's own control, then prepares, starts, drives and ends the scenario.
async fn run_on<B: Backend>(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> Result<bool, ScenarioError> {
    let control = B::connect(connection, env.timing).await?;
    control.setup().await?;
    let (mut scene, service_faults) = Scene::prepare(env, scenario, connection).await?;
    scene.start().await?;
    let scene = &scene;
    let spec = |slot: &_| scene.actor_spec(slot);
    let mut cast = Cast::start(scenario, spec, env.recorder, env.chaos, scene.aim.clone())
        .await
        .map_err(drive)?;
    let mut lab = Drive::new(scene, service_faults);
    lab.run(scene, &control, &mut cast).await?;
    end(scene, &control, cast, &lab).await
}
