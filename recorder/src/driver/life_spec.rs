//! What an actor's next life is started with: its connection (through its own proxies when the
//! scenario has wire faults, with a dead broker for the dual write), its fault plan and timing,
//! the tasks a restarted API creates again, and the kinds whose reports it holds.

use outbox_trace::Kind;

use super::cast::Slot;
use super::chaos::LabChaos;
use super::held::Aim;
use super::prepare::Scene;
use crate::backend::connection::Endpoints;
use crate::backend::endpoints::Endpoint;
use crate::driver::actor::spec::ActorSpec;
use crate::journal::author::Role;
use crate::journal::writer::Tallies;
use crate::protocol::model::{TaskSpec, Timing};

impl Scene<'_, '_> {
    /// The spec of slot `s`'s next life.
    pub fn actor_spec(&self, s: &Slot) -> ActorSpec {
        let (env, scenario) = (self.env, self.scenario);
        let mut connection = self.connection.clone();
        connection.member = s.id.to_string();
        if let Some(wire) = &self.wire {
            connection.endpoints = wire.endpoints_for(&s.id.to_string(), &connection.endpoints);
        }
        if s.role == Role::Api && scenario.api_broker_down {
            connection.endpoints = with_dead_broker(connection.endpoints);
        }
        ActorSpec {
            role: s.role,
            incarnation: s.incarnation,
            clock: env.clock,
            connection,
            protocol: env.protocol,
            plan: s.plan.clone(),
            timing: Timing {
                fetch_batch: scenario.fetch_batch,
                relay_batch: scenario.relay_batch,
                api_inflight: scenario.api_inflight,
                ..env.timing
            },
            tasks: if s.role == Role::Api {
                unanswered(&scenario.tasks, &env.tallies, self.name())
            } else {
                Vec::new()
            },
            api_mode: scenario.api_mode,
            api_rate: scenario.api_rate,
            external: self.external.clone(),
            hold: held_kinds(self.aim.as_ref(), s),
            trace: env.trace,
        }
    }
}

/// The tasks whose acceptance is not in the trace yet: what a restarted API is asked to create
/// (again, with the same idempotency keys), as clients whose answers never came retry. The
/// tallies must have taken in the previous life's rows (the cast syncs before an API restart).
fn unanswered(tasks: &[TaskSpec], tallies: &Tallies, scenario: &str) -> Vec<TaskSpec> {
    let tallies = tallies.lock().expect("tally lock");
    let Some((_, tally)) = tallies.iter().find(|(s, _)| s == scenario) else {
        return tasks.to_vec();
    };
    tasks
        .iter()
        .filter(|t| !tally.accepted.contains(&t.task_id))
        .cloned()
        .collect()
}

/// The kinds whose reports a slot's next life holds: those its step-following faults follow,
/// and under a chaos draw every kind its role reports (the draw arms on any of them).
fn held_kinds(aim: Option<&Aim>, slot: &Slot) -> Vec<Kind> {
    let Some(aim) = aim else {
        return Vec::new();
    };
    let mut kinds = aim
        .trigger
        .lock()
        .map(|t| t.held_kinds(&slot.id.to_string(), slot.role.name()))
        .unwrap_or_default();
    if aim.chaos.is_some() {
        kinds.extend(LabChaos::held_kinds(slot.role));
        kinds.sort_by_key(|k| k.as_str());
        kinds.dedup();
    }
    kinds
}

/// The same endpoints with the broker moved to a loopback port nobody listens on.
fn with_dead_broker(endpoints: Endpoints) -> Endpoints {
    let port = crate::process::port::free_port().unwrap_or(9);
    match endpoints {
        Endpoints::EtcdJetstream {
            etcd,
            nats_creds,
            replicas,
            ..
        } => Endpoints::EtcdJetstream {
            etcd,
            nats_creds,
            replicas,
            nats: Endpoint::local(format!("nats://127.0.0.1:{port}")),
        },
        Endpoints::SqliteRedis { db_dir, .. } => Endpoints::SqliteRedis {
            db_dir,
            redis: Endpoint::local(format!("redis://127.0.0.1:{port}")),
        },
    }
}
