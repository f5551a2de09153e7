//! Carrying out a scenario's faults on its processes and services: pauses (SIGSTOP, then SIGCONT
//! when they are over, each with a `fault` row) and the timed faults (a kill, a pause, a service
//! restart at a time from the first task) on the primitives the fault layer asks of a subject.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use outbox_trace::detail::{self};
use outbox_trace::Step;
use outbox_trace::{CrashSite, FaultKind};
use tokio::sync::mpsc;

use super::shared::SystemError;
use super::stage::{Kill, Stage};
use crate::fault::apply::Targets;
use crate::journal::author::Author;
use crate::system::receiver::Intake;
use crate::system::services::Service;

impl<'a, 'e> Stage<'a, 'e> {
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

    async fn record(&self, fault: detail::Fault) -> Result<(), SystemError> {
        self.stage.own(Author::Faults, Step::Fault(fault)).await
    }
}
