//! Carrying out a timed fault, one way for both subjects: each verb of the vocabulary is matched
//! here once, against [`Targets`], the few primitives a subject offers (kill or pause a process
//! by the name a spec gives it, restart a service, find a service's process group, record a
//! `fault` row). The lab's actors and services and a team's processes and services each
//! implement them once; a new fault kind is a variant in [`spec`](super::spec) and an arm here.

use std::future::Future;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use outbox_trace::{detail, FaultKind};

use super::spec::{Nemesis, What, WireFault};

/// What a subject offers the faults of one scenario.
pub trait Targets {
    /// Why a primitive failed.
    type Error;

    /// SIGKILLs the process `target` names (an actor, or a role's first instance); the subject
    /// records its crash and starts its next life.
    fn kill(&mut self, target: &str) -> impl Future<Output = Result<(), Self::Error>>;

    /// SIGSTOPs the process `target` names and SIGCONTs it after `hold`, with a `pause` row.
    fn pause(
        &mut self,
        target: &str,
        hold: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>>;

    /// SIGKILLs the service `service` names and starts it again on its data, with a row.
    fn restart(&mut self, service: &str) -> impl Future<Output = Result<(), Self::Error>>;

    /// The process group of the service `service` names, while it runs.
    fn service_group(&self, service: &str) -> Option<i32>;

    /// Records a `fault` row.
    fn record(&self, fault: detail::Fault) -> impl Future<Output = Result<(), Self::Error>>;

    /// Switches `fault` on, on the wire between the process `target` names and the service
    /// `service` names, with its `fault` row.
    fn wire(
        &mut self,
        target: &str,
        service: &str,
        fault: WireFault,
    ) -> impl Future<Output = Result<(), Self::Error>>;

    /// SIGSTOPs the process group of the service `service` names and SIGCONTs it after `hold`,
    /// with a `service-pause` row (nothing while the service is not running).
    fn pause_service(
        &mut self,
        service: &str,
        hold: Duration,
    ) -> impl Future<Output = Result<(), Self::Error>> {
        async move {
            let Some(group) = self.service_group(service) else {
                return Ok(());
            };
            self.record(detail::Fault {
                fault: FaultKind::ServicePause,
                target: Some(service.to_string()),
                service: Some(service.to_string()),
                duration_ms: Some(hold.as_millis() as u64),
                ..detail::Fault::default()
            })
            .await?;
            stop_group_for(group, hold);
            Ok(())
        }
    }
}

/// SIGSTOPs process group `group` now and SIGCONTs it after `hold` (the end of its scenario
/// continues it sooner: see [`continue_group`]).
pub fn stop_group_for(group: i32, hold: Duration) {
    if killpg(Pid::from_raw(group), Signal::SIGSTOP).is_ok() {
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            continue_group(group);
        });
    }
}

/// SIGCONTs process group `group` (a stopped service heeds no SIGTERM until continued).
pub fn continue_group(group: i32) {
    let _ = killpg(Pid::from_raw(group), Signal::SIGCONT);
}

/// Carries out the timed fault `fault` on `targets` (a step-following fault is the trigger's).
pub async fn apply<T: Targets>(targets: &mut T, fault: &Nemesis) -> Result<(), T::Error> {
    if fault.follows_a_step() {
        return Ok(());
    }
    carry_out(targets, fault).await
}

/// Carries out `fault` on `targets` now, whatever its `when` (a step that set off a service's
/// fault has come: the trigger's caller carries it out here).
pub async fn carry_out<T: Targets>(targets: &mut T, fault: &Nemesis) -> Result<(), T::Error> {
    match &fault.what {
        What::Kill { target } => targets.kill(target).await,
        What::Pause { target, hold, .. } => targets.pause(target, *hold).await,
        What::Restart { service } => targets.restart(service).await,
        What::PauseService { service, hold } => targets.pause_service(service, *hold).await,
        What::Wire {
            target,
            service,
            fault,
        } => targets.wire(target, service, *fault).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Targets that note what was asked of them.
    #[derive(Default)]
    struct Noted(Vec<String>);

    impl Targets for Noted {
        type Error = ();

        async fn kill(&mut self, target: &str) -> Result<(), ()> {
            self.0.push(format!("kill {target}"));
            Ok(())
        }

        async fn pause(&mut self, target: &str, hold: Duration) -> Result<(), ()> {
            self.0
                .push(format!("pause {target} {}ms", hold.as_millis()));
            Ok(())
        }

        async fn restart(&mut self, service: &str) -> Result<(), ()> {
            self.0.push(format!("restart {service}"));
            Ok(())
        }

        fn service_group(&self, _: &str) -> Option<i32> {
            None
        }

        async fn record(&self, _: detail::Fault) -> Result<(), ()> {
            Ok(())
        }

        async fn wire(&mut self, target: &str, service: &str, _: WireFault) -> Result<(), ()> {
            self.0.push(format!("wire {target} {service}"));
            Ok(())
        }
    }

    #[tokio::test]
    async fn each_timed_verb_reaches_its_primitive_and_a_step_following_fault_none() {
        let mut noted = Noted::default();
        for spec in [
            "kill worker-2 at 1s",
            "pause relay at 1s for 250ms",
            "restart nats at 2s",
            "partition worker redis at 1s for 2s",
            "kill worker after acked",
        ] {
            apply(&mut noted, &Nemesis::parse(spec).unwrap())
                .await
                .unwrap();
        }
        assert_eq!(
            noted.0,
            [
                "kill worker-2",
                "pause relay 250ms",
                "restart nats",
                "wire worker redis"
            ]
        );
    }
}
