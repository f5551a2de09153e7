//! The lab's side of a fault carried out by the scenario's loop, a timed `--fault` spec or a
//! service's fault a held report set off: the primitives the fault layer asks of a subject
//! ([`LabTargets`]), each recording what it did: a SIGKILL of an actor (its `crash` row comes
//! when the cast sees the life end), a pause of an actor (a `fault` row), or a SIGKILL and
//! restart of a service member (a `fault` row naming the member and how long it was down), a
//! timed broker restart's right after consumer ACKs.
//!
//! The lab's services are named as specs name them ([`service_names`](super::service_names)).

use std::time::{Duration, Instant};

use outbox_trace::{detail, FaultKind, Step};

use super::cast::{Cast, Slot};
use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use super::service_names::{parse_service, service_name};
use super::wire::LabWire;
use crate::backend::services::{LocalService, ServiceKind};
use crate::driver::actor::spec::ActorSpec;
use crate::fault::apply::Targets;
use crate::fault::spec::{Nemesis, WireFault};
use crate::journal::author::Author;

/// How long a broker restart waits for a tick in which consumer ACKs came.
const ACK_BURST_WAIT: Duration = Duration::from_secs(1);

/// Whether `fault`, due `overdue` ago, goes now. A broker restart waits (up to
/// [`ACK_BURST_WAIT`]) until consumer ACKs came since the last tick (`acks_moved`): an ACK the
/// broker confirmed a moment before a SIGKILL is the one it may not have made durable.
pub fn ready(fault: &Nemesis, overdue: Duration, acks_moved: bool) -> bool {
    match fault.service().and_then(parse_service) {
        Some((kind, _)) if kind.is_broker() => acks_moved || overdue >= ACK_BURST_WAIT,
        _ => true,
    }
}

/// The lab's actors and services, as the fault layer's [`Targets`].
pub struct LabTargets<'s, 'a, 'c, F: Fn(&Slot) -> ActorSpec> {
    pub env: &'s ScenarioEnv<'a>,
    pub cast: &'s mut Cast<'c, F>,
    pub stamp: &'s Stamp,
    /// The process groups of the lab's services, by spec name (`nats`, `nats-2`), as they were
    /// when the fault came due.
    pub groups: Vec<(String, i32)>,
    /// The actors' proxies, when the scenario has wire faults.
    pub wire: Option<&'s LabWire>,
}

impl<F: Fn(&Slot) -> ActorSpec> Targets for LabTargets<'_, '_, '_, F> {
    type Error = ScenarioError;

    async fn kill(&mut self, target: &str) -> Result<(), ScenarioError> {
        self.cast.kill_target(target);
        Ok(())
    }

    async fn pause(&mut self, target: &str, hold: Duration) -> Result<(), ScenarioError> {
        self.cast.pause_target(target, hold);
        Ok(())
    }

    async fn restart(&mut self, service: &str) -> Result<(), ScenarioError> {
        match parse_service(service) {
            Some((kind, member)) => restart(self.env, kind, member, self.stamp).await,
            None => Ok(()),
        }
    }

    fn service_group(&self, service: &str) -> Option<i32> {
        let (_, group) = self.groups.iter().find(|(n, _)| n == service)?;
        Some(*group)
    }

    /// A role's timed wire fault hits its first actor, as its kill does.
    async fn wire(
        &mut self,
        target: &str,
        service: &str,
        fault: WireFault,
    ) -> Result<(), ScenarioError> {
        if let (Some(wire), Some(actor)) = (self.wire, self.cast.actor_of(target)) {
            wire.apply(&actor, service, fault);
        }
        Ok(())
    }

    async fn record(&self, fault: detail::Fault) -> Result<(), ScenarioError> {
        self.env
            .recorder
            .record(self.stamp.entry(Author::Faults, Step::Fault(fault)))
            .await
            .map_err(drive)
    }
}

/// The process groups of the lab's running services, by the names specs give them: `etcd`,
/// `nats` (the first member) and `nats-2`, ...
pub async fn service_groups(env: &ScenarioEnv<'_>) -> Vec<(String, i32)> {
    let services = env.services.lock().await;
    let mut groups = Vec::new();
    for kind in [ServiceKind::Etcd, ServiceKind::Nats, ServiceKind::Redis] {
        let members = services.iter().filter(|s| s.kind() == kind);
        for (i, member) in members.enumerate() {
            if let Some(group) = member.group() {
                if i == 0 {
                    groups.push((service_name(kind).to_string(), group));
                }
                groups.push((format!("{}-{}", service_name(kind), i + 1), group));
            }
        }
    }
    groups
}

/// SIGKILLs member `member` (modulo their number) of the local services of `kind` and starts it
/// again on its data, if the recorder runs such a service.
async fn restart(
    env: &ScenarioEnv<'_>,
    kind: ServiceKind,
    member: usize,
    stamp: &Stamp,
) -> Result<(), ScenarioError> {
    let broker = kind.is_broker();
    let began = Instant::now();
    let mut services = env.services.lock().await;
    let mut members: Vec<&mut LocalService> =
        services.iter_mut().filter(|s| s.kind() == kind).collect();
    let count = members.len().max(1);
    if let Some(service) = members.get_mut(member % count) {
        service.restart().await?;
        let name = service.name();
        let fault = detail::Fault {
            fault: if broker {
                FaultKind::BrokerRestart
            } else {
                FaultKind::StoreRestart
            },
            service: Some(kind.program().to_string()),
            member: Some(name),
            signal: Some("SIGKILL".to_string()),
            down_ms: Some(began.elapsed().as_millis() as i64),
            ..detail::Fault::default()
        };
        env.recorder
            .record(stamp.entry(Author::Faults, Step::Fault(fault)))
            .await
            .map_err(drive)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(spec: &str) -> Nemesis {
        Nemesis::parse(spec).unwrap()
    }

    #[test]
    fn a_broker_restart_waits_for_acks_up_to_a_second_and_other_faults_never_wait() {
        let now = Duration::ZERO;
        for broker in [
            "restart nats at 1s",
            "restart redis at 1s",
            "restart nats-3 at 1s",
        ] {
            assert!(!ready(&at(broker), now, false), "{broker}");
            assert!(ready(&at(broker), now, true));
            assert!(ready(&at(broker), ACK_BURST_WAIT, false));
        }
        assert!(ready(&at("kill relay at 1s"), now, false));
        assert!(ready(&at("restart etcd at 1s"), now, false));
    }
}
