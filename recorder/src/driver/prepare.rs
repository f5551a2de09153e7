//! Before a lab scenario's actors start: its stamp, its step-following faults (the trigger the
//! actors' held reports are shown to, the chaos draw that arms it as they report, and the channel
//! on which the services' faults they set off reach the loop), the proxies a wire fault puts every actor behind, the external receiver's
//! address, and the `run_start` row.

use std::sync::{Arc, Mutex};

use outbox_trace::detail::RunStart;
use outbox_trace::{Kind, Step};
use tokio::sync::mpsc;

use super::chaos::LabChaos;
use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use super::held::{Aim, ServiceFault};
use super::scenario::Scenario;
use super::wire::LabWire;
use crate::backend::connection::Connection;
use crate::fault::spec::What;
use crate::fault::trigger::Trigger;
use crate::journal::author::Author;
use crate::protocol::external::spec::ExternalSpec;

/// Every kind the protocol's actors (and the payments receiver) report, declared in
/// `run_start.detail.records` of a traced run.
const PROTOCOL_KINDS: [Kind; 16] = [
    Kind::TaskAccepted,
    Kind::IntentRecorded,
    Kind::PublishAttempt,
    Kind::PublishAcked,
    Kind::PublishUnacked,
    Kind::PublishFailed,
    Kind::OutboxMarked,
    Kind::Delivered,
    Kind::Redelivered,
    Kind::EffectCommitted,
    Kind::DuplicateSuppressed,
    Kind::CommitConflict,
    Kind::Acked,
    Kind::ExternalRequest,
    Kind::ExternalApplied,
    Kind::ExternalReplayed,
];

/// The loop's end of the channel the services' faults its actors' steps set off come on.
pub type ServiceFaults = mpsc::UnboundedReceiver<ServiceFault>;

/// What a lab scenario is once its control is connected: what its actors' lives, its loop and
/// its end are made of.
pub struct Scene<'s, 'e> {
    /// What the scenario shares with the whole run.
    pub env: &'s ScenarioEnv<'e>,
    /// Its row of the scenario table.
    pub scenario: &'s Scenario,
    /// How its actors reach the services.
    pub connection: &'s Connection,
    /// The stamp on the rows the recorder writes itself.
    pub stamp: Stamp,
    /// Its step-following faults, when it has any.
    pub aim: Option<Aim>,
    /// The actors' proxies, when it has wire faults.
    pub wire: Option<Arc<LabWire>>,
    /// The external receiver, when the scenario runs one.
    pub external: Option<ExternalSpec>,
}

impl<'s, 'e> Scene<'s, 'e> {
    /// The scenario's trigger, chaos draw and proxies, before anything of it is recorded; with
    /// the receiving end of the services' faults its steps set off, when it has step-following
    /// faults or a chaos draw (which arms them on the actors' reports: none without `--trace`).
    pub async fn prepare(
        env: &'s ScenarioEnv<'e>,
        scenario: &'s Scenario,
        connection: &'s Connection,
    ) -> Result<(Self, Option<ServiceFaults>), ScenarioError> {
        let stamp = Stamp {
            clock: env.clock,
            scenario: scenario.name.as_str().to_string(),
        };
        let trigger = Trigger::new(env.faults);
        let wire = lab_wire(env, scenario, connection).await?;
        let chaos = env.chaos.filter(|_| env.trace).map(|plan| {
            let backend = connection.endpoints.kind();
            let (workers, tasks) = (scenario.workers, scenario.tasks.len());
            let chaos = LabChaos::new(plan, backend, workers, tasks, wire.is_some());
            Arc::new(Mutex::new(chaos))
        });
        let (aim, service_faults) = if trigger.is_empty() && chaos.is_none() {
            (None, None)
        } else {
            let (services, service_faults) = mpsc::unbounded_channel();
            let aim = Aim {
                trigger: Arc::new(Mutex::new(trigger)),
                chaos,
                wire: wire.clone(),
                services,
            };
            (Some(aim), Some(service_faults))
        };
        let scene = Scene {
            env,
            scenario,
            connection,
            stamp,
            aim,
            wire,
            external: None,
        };
        Ok((scene, service_faults))
    }

    /// The scenario's name, as its rows carry it.
    pub fn name(&self) -> &'static str {
        self.scenario.name.as_str()
    }

    /// Records `run_start`, then picks the external receiver's address if the scenario runs one.
    pub async fn start(&mut self) -> Result<(), ScenarioError> {
        let start = self.run_start()?;
        self.env
            .recorder
            .record(self.stamp.entry(Author::Recorder, Step::RunStart(start)))
            .await
            .map_err(drive)?;
        self.external = self.scenario.external.then(|| ExternalSpec {
            addr: format!(
                "127.0.0.1:{}",
                crate::process::port::free_port().unwrap_or(9)
            ),
            db: self.env.workdir.join(format!(
                "receiver-{}.db",
                outbox_trace::output::path_component(self.name())
            )),
            slow_ms: 0,
        });
        Ok(())
    }

    /// The scenario's `run_start` detail: the scripted in-actor faults of every role, each as
    /// its JSON text, then the `--fault` specs; the chaos plan; the kinds the actors report.
    fn run_start(&self) -> Result<RunStart, ScenarioError> {
        let (env, scenario) = (self.env, self.scenario);
        let mut faults = [&scenario.api, &scenario.relay, &scenario.worker]
            .into_iter()
            .flatten()
            .map(serde_json::to_string)
            .collect::<Result<Vec<String>, _>>()
            .map_err(|e| drive(e.into()))?;
        faults.extend(env.faults.iter().map(ToString::to_string));
        Ok(RunStart {
            protocol: Some(env.protocol.name().to_string()),
            ack_wait_ms: Some(env.timing.ack_wait.as_millis() as i64),
            workers: Some(scenario.workers as i64),
            tasks: Some(scenario.tasks.len() as i64),
            counter_start: Some(0.into()),
            faults,
            // `null` when the run has no chaos plan: the key is always there.
            chaos: Some(serde_json::to_value(env.chaos).map_err(|e| drive(e.into()))?),
            // The kinds the protocol's actors report: where one is absent, nothing of it happened.
            records: env.trace.then(|| {
                PROTOCOL_KINDS
                    .iter()
                    .map(|k| k.as_str().to_string())
                    .collect()
            }),
            ..RunStart::default()
        })
    }
}

/// A wire fault puts every actor behind proxies of its own: started here when the run names one.
async fn lab_wire(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> Result<Option<Arc<LabWire>>, ScenarioError> {
    if !env
        .faults
        .iter()
        .any(|f| matches!(f.what, What::Wire { .. }))
    {
        return Ok(None);
    }
    let mut actors = vec!["api".to_string(), "relay".to_string()];
    actors.extend((1..=scenario.workers).map(|i| match scenario.workers {
        1 => "worker".to_string(),
        _ => format!("worker-{i}"),
    }));
    let wire = LabWire::start(&actors, &connection.endpoints)
        .await
        .map_err(|e| drive(e.into()))?;
    Ok(Some(Arc::new(wire)))
}
