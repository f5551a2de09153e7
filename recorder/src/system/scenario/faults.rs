//! Carrying out a scenario's faults on its processes and services: pauses (SIGSTOP, then SIGCONT
//! when they are over, each with a `fault` row) and the timed faults (a kill, a pause, a service
//! restart at a time from the first task) on the primitives the fault layer asks of a subject;
//! and what the scenario tried, fault by fault, for `run_end`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use outbox_trace::detail::{self};
use outbox_trace::Step;
use outbox_trace::{CrashSite, FaultKind};
use tokio::sync::mpsc;

use super::shared::SystemError;
use super::stage::{Kill, Stage};
use crate::fault::apply::Targets;
use crate::fault::ledger::Proxies;
use crate::fault::spec::WireFault;
use crate::fault::trigger::Armed;
use crate::journal::author::Author;
use crate::system::receiver::Intake;
use crate::system::services::Service;

impl<'a, 'e> Stage<'a, 'e> {
    /// Every fault the scenario named, searched or drew, with how often it fired and, for one
    /// that never did, why, from the steps the processes reported (`run_end.detail.faults`).
    pub(super) fn tried(&self) -> Vec<detail::FaultTried> {
        let ran = self.first_task.elapsed();
        let shape = &self.shape;
        let count = |_: &Armed, who: Option<&str>, kind| match who {
            Some(who) => shape.count(who, kind),
            None => shape.count_all(kind),
        };
        let drawn: Vec<usize> = self.chaos.iter().flat_map(|c| c.indexes()).collect();
        let armed = self.trigger.armed();
        self.ledger.tried(armed, &drawn, count, Some(self), ran)
    }

    /// Switches `fault` on on the wire between `actor` and `service`; its `fault` row is written
    /// when it is over or has acted ([`Stage::wire_over`]).
    pub(super) fn wire(&mut self, actor: &str, service: &str, fault: WireFault) {
        let Some(proxy) = self.proxies.get(&(actor.to_string(), service.to_string())) else {
            return;
        };
        if let Err(e) = proxy.apply(fault) {
            self.skip(format!("{} {actor} {service}: {e}", fault.kind()));
        }
    }

    /// Writes the `fault` row of every wire fault that is over or has acted (with `finish`, of
    /// every one: the scenario is over), stamped with the time it began, with what it dropped.
    pub(super) async fn wire_over(&mut self, finish: bool) -> Result<(), SystemError> {
        let mut over = Vec::new();
        for ((actor, service), proxy) in &self.proxies {
            let done = if finish {
                proxy.finish()
            } else {
                proxy.take_over()
            };
            over.extend(
                done.into_iter()
                    .map(|o| (actor.clone(), service.clone(), o)),
            );
        }
        let now_ns = self.env.clock.now();
        for (actor, service, o) in over {
            if o.acted() {
                self.wire_acts
                    .push((actor.clone(), service.clone(), o.fault));
            }
            let began_ns = now_ns - o.began.elapsed().as_nanos() as i64;
            let row = o.row(&actor, &service);
            self.record(Author::Faults, 0, began_ns, Step::Fault(row))
                .await?;
        }
        Ok(())
    }

    /// Whether `actor` is one of the processes `target` names (a role or an actor).
    fn named(&self, target: &str, actor: &str) -> bool {
        actor == target || self.lives.get(actor).is_some_and(|l| l.role == target)
    }

    /// The bytes each role's processes passed through the proxies to and from each service
    /// (`run_end.detail.wire`): only the pairs that passed any.
    pub(super) fn wire_traffic(&self) -> Vec<detail::WireTraffic> {
        let mut by: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
        for ((actor, service), proxy) in &self.proxies {
            let role = self.lives.get(actor).map_or(actor, |l| &l.role);
            let (requests, replies) = proxy.passed();
            let sum = by.entry((role.clone(), service.clone())).or_default();
            *sum = (sum.0 + requests, sum.1 + replies);
        }
        by.into_iter()
            .filter(|(_, (requests, replies))| requests + replies > 0)
            .map(
                |((role, service), (request_bytes, reply_bytes))| detail::WireTraffic {
                    role,
                    service,
                    request_bytes,
                    reply_bytes,
                    ..detail::WireTraffic::default()
                },
            )
            .collect()
    }

    /// Whether another process of `role` than `actor` runs on (not stopped, not exited) to take
    /// its message over.
    pub(super) fn has_running_sibling(&self, actor: &str, role: &str) -> bool {
        self.lives.iter().any(|(a, l)| {
            a != actor && l.role == role && !self.pauses.holds(a) && l.child.exited().is_none()
        })
    }

    /// SIGSTOPs `actor`'s life `incarnation` (if it still runs) until `hold` has passed.
    pub(super) async fn pause(
        &mut self,
        actor: &str,
        incarnation: Option<u32>,
        hold: Duration,
    ) -> Result<(), SystemError> {
        let Some(life) = self.lives.get(actor) else {
            return Ok(());
        };
        if incarnation.is_some_and(|i| i != life.incarnation) {
            return Ok(());
        }
        // Stopped already: the pause lasts until the later of the two ends.
        if self.pauses.begin(actor, Instant::now() + hold) {
            life.child.signal(Signal::SIGSTOP);
        }
        self.own(
            Author::Faults,
            Step::Fault(detail::Fault {
                fault: FaultKind::Pause,
                target: Some(actor.to_string()),
                duration_ms: Some(hold.as_millis() as u64),
                ..detail::Fault::default()
            }),
        )
        .await
    }

    /// Begins the pauses that are due and continues the processes whose pause is over.
    pub(super) async fn pauses_due(&mut self, now: Instant) -> Result<(), SystemError> {
        for due in self.pauses.due(now) {
            self.pause(&due.actor, Some(due.life), due.hold).await?;
        }
        for actor in self.pauses.over(now) {
            if let Some(life) = self.lives.get(&actor) {
                life.child.signal(Signal::SIGCONT);
            }
        }
        Ok(())
    }
}

/// The processes `target` names are a role or one actor.
impl Proxies for Stage<'_, '_> {
    fn acted(&self, target: &str, service: &str, fault: WireFault) -> u64 {
        self.wire_acts
            .iter()
            .filter(|(a, s, f)| self.named(target, a) && s == service && *f == fault)
            .count() as u64
    }

    fn passed(&self, target: &str, service: &str) -> (u64, u64) {
        self.proxies
            .iter()
            .filter(|((a, s), _)| s == service && self.named(target, a))
            .map(|(_, p)| p.passed())
            .fold((0, 0), |(r, b), (r2, b2)| (r + r2, b + b2))
    }
}

/// A team's processes and services, as the fault layer's [`Targets`].
pub(super) struct SystemTargets<'s, 'a, 'e> {
    pub stage: &'s mut Stage<'a, 'e>,
    pub services: &'s mut [(String, Service)],
    pub intake: &'s mut mpsc::Receiver<Intake>,
}

impl Targets for SystemTargets<'_, '_, '_> {
    type Error = SystemError;

    /// A role's timed faults hit its first instance, which has the role's name.
    async fn kill(&mut self, target: &str) -> Result<(), SystemError> {
        if let Some(life) = self.stage.lives.get(target) {
            let kill = Kill {
                actor: target.to_string(),
                incarnation: life.incarnation,
                point: CrashSite::Kill,
                announced: false,
            };
            self.stage.kill(kill, self.intake).await?;
        }
        Ok(())
    }

    async fn pause(&mut self, target: &str, hold: Duration) -> Result<(), SystemError> {
        self.stage.pause(target, None, hold).await
    }

    async fn restart(&mut self, service: &str) -> Result<(), SystemError> {
        self.record(detail::Fault {
            fault: FaultKind::ServiceRestart,
            target: Some(service.to_string()),
            service: Some(service.to_string()),
            ..detail::Fault::default()
        })
        .await?;
        if let Some((_, s)) = self.services.iter_mut().find(|(n, _)| n == service) {
            s.restart().await?;
        }
        Ok(())
    }

    fn service_group(&self, service: &str) -> Option<i32> {
        let (_, s) = self.services.iter().find(|(n, _)| n == service)?;
        s.group()
    }

    /// A role's timed wire fault hits its first instance, which has the role's name.
    async fn wire(
        &mut self,
        target: &str,
        service: &str,
        fault: WireFault,
    ) -> Result<(), SystemError> {
        self.stage.wire(target, service, fault);
        Ok(())
    }

    async fn record(&self, fault: detail::Fault) -> Result<(), SystemError> {
        self.stage.own(Author::Faults, Step::Fault(fault)).await
    }
}
