//! The recorder's side of a held report in the lab: an actor that reported a step of a held kind
//! waits (see [`crate::protocol::hold`]); the scenario's [`Trigger`] decides what the step sets off.
//! A kill SIGKILLs the life's process group before it is answered, so it dies right after that
//! step; a pause answers, then SIGSTOPs the process `delay` later and SIGCONTs it after `hold`,
//! with a `fault` row (one pause at a time, by the rule of [`Pauses`]); a wire fault is switched on on the actor's proxy before the answer; a
//! service's fault goes to the scenario's loop, which carries it out as it does a timed one: a
//! restart (or a pause without a delay) while the report is held, so the actor is answered once
//! it is done, a pause with a delay that long after the answer. Anything else is just answered.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use outbox_trace::{detail, CrashSite, FaultKind, Kind, Step};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::chaos::LabChaos;
use super::wire::LabWire;
use crate::fault::pauses::{Pauses, Pending};
use crate::fault::spec::{Nemesis, What, When};
use crate::fault::trigger::{Reporter, Struck, Trigger};
use crate::journal::author::{ActorId, Author};
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder};

/// The step-following faults of a scenario, shared by its actors' lives.
#[derive(Clone)]
pub struct Aim {
    /// The faults and their counts.
    pub trigger: Arc<Mutex<Trigger>>,
    /// The chaos draw, arming more of them as the actors report their steps (locked after the
    /// trigger).
    pub chaos: Option<Arc<Mutex<LabChaos>>>,
    /// The actors' proxies, when the scenario has wire faults.
    pub wire: Option<Arc<LabWire>>,
    /// Where the service faults a step sets off go: the scenario's loop.
    pub services: mpsc::UnboundedSender<ServiceFault>,
}

/// A service's fault a held report set off, for the scenario's loop to carry out.
pub struct ServiceFault {
    /// The fault.
    pub nemesis: Nemesis,
    /// When it is carried out.
    pub due: Due,
}

/// When the loop carries out a service's fault a step set off.
pub enum Due {
    /// At once, while the report that set it off is held: told here when it is done, and the
    /// report is answered then.
    Held(oneshot::Sender<()>),
    /// At this time: its delay after the report was answered.
    At(Instant),
}

/// One life's means to answer its held reports.
pub struct Held {
    /// The life's process (and group) id.
    pub pid: i32,
    /// Who it is.
    pub actor: ActorId,
    /// Which life of the actor.
    pub incarnation: u32,
    /// The kinds it holds.
    pub held: Vec<Kind>,
    /// Where its answers go.
    pub stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// For the `fault` row of a pause.
    pub scenario: String,
    /// The journal.
    pub recorder: Recorder,
    /// The run's clock.
    pub clock: RunClock,
    /// The life's pauses: called for and not begun, or holding it stopped now.
    pub pauses: Arc<Mutex<Pauses>>,
    /// Cancelled once the life has ended and its last reports are being read: a report is no
    /// longer held for a service's fault then (the loop may be the one waiting for the reading).
    pub ended: CancellationToken,
}

impl Held {
    /// A step of `kind` (at `ts_ns`) was reported and is held: carries out what it sets off and
    /// answers, unless it kills the life (then returns the crash point). The services' faults
    /// come first, as in a team's system.
    pub async fn answer(&self, aim: Option<&Aim>, kind: Kind, ts_ns: i64) -> Option<CrashSite> {
        let (struck, services) = aim
            .and_then(|aim| self.strike(aim, kind, ts_ns))
            .unwrap_or_default();
        if let Some(aim) = aim {
            self.hand_over(aim, services).await;
        }
        if let Some(point) = struck.kill {
            let _ = killpg(Pid::from_raw(self.pid), Signal::SIGKILL);
            return Some(point);
        }
        for (_, delay, hold) in struck.pauses {
            self.pause(delay, hold);
        }
        if let Some(stdin) = self.stdin.lock().await.as_mut() {
            let _ = stdin.write_all(b"go\n").await;
            let _ = stdin.flush().await;
        }
        None
    }

    /// Shows the step to the chaos draw (which arms on it), then to the trigger: what it sets
    /// off, with the wire faults switched on and the services' faults it set off.
    fn strike(&self, aim: &Aim, kind: Kind, ts_ns: i64) -> Option<(Struck, Vec<Nemesis>)> {
        let actor = self.actor.to_string();
        let mut trigger = aim.trigger.lock().ok()?;
        if let Some(mut chaos) = aim.chaos.as_ref().and_then(|c| c.lock().ok()) {
            chaos.on_report(&mut trigger, self.actor, self.incarnation, kind, ts_ns);
        }
        let struck = trigger.on_step(
            Reporter {
                actor: &actor,
                role: self.actor.role.name(),
                running: !self.paused(),
                has_sibling: true,
                at: Duration::from_nanos(self.clock.now().max(0) as u64),
            },
            kind,
        );
        let armed = |i: usize| trigger.armed().get(i).map(|a| &a.nemesis);
        // A wire fault is on before the step is answered.
        if let Some(wire) = &aim.wire {
            for &i in &struck.wire {
                if let Some(What::Wire { service, fault, .. }) = armed(i).map(|n| &n.what) {
                    wire.apply(&actor, service, *fault);
                }
            }
        }
        let services = struck.services.iter().filter_map(|&i| armed(i)).cloned();
        let services = services.collect();
        Some((struck, services))
    }

    /// Hands the services' faults a step set off to the scenario's loop, and waits until those
    /// carried out while the report is held are done (or the life has ended).
    async fn hand_over(&self, aim: &Aim, services: Vec<Nemesis>) {
        let mut waits = Vec::new();
        for nemesis in services {
            let due = match nemesis.when {
                When::After { delay, .. } if !delay.is_zero() => Due::At(Instant::now() + delay),
                _ => {
                    let (done, wait) = oneshot::channel();
                    waits.push(wait);
                    Due::Held(done)
                }
            };
            // A send fails only once the loop is over: the fault is not carried out then, and
            // its wait ends at once.
            let _ = aim.services.send(ServiceFault { nemesis, due });
        }
        for wait in waits {
            tokio::select! {
                _ = wait => {}
                _ = self.ended.cancelled() => return,
            }
        }
    }

    /// Whether the life is stopped by a pause now, or a pause of it is called for.
    fn paused(&self) -> bool {
        let pauses = self.pauses.lock().expect("pauses lock");
        pauses.holds(&self.actor.to_string())
    }

    /// SIGSTOPs the life `delay` from now, records the pause, and SIGCONTs it after `hold`; a
    /// pause landing on the life stopped already keeps it stopped until the later end.
    pub fn pause(&self, delay: Duration, hold: Duration) {
        let (pid, pauses) = (Pid::from_raw(self.pid), self.pauses.clone());
        let (recorder, clock, scenario) =
            (self.recorder.clone(), self.clock, self.scenario.clone());
        let called = Pending {
            at: Instant::now() + delay,
            actor: self.actor.to_string(),
            life: self.incarnation,
            hold,
        };
        pauses.lock().expect("pauses lock").queue(called.clone());
        tokio::spawn(async move {
            tokio::time::sleep_until(called.at.into()).await;
            let actor = called.actor.clone();
            let until = Instant::now() + hold;
            let stop = {
                let mut pauses = pauses.lock().expect("pauses lock");
                pauses.take(&called);
                pauses.begin(&actor, until)
            };
            // Stopped already: no signal, only whether the life is still there.
            let signal = stop.then_some(Signal::SIGSTOP);
            if killpg(pid, signal).is_err() {
                pauses.lock().expect("pauses lock").gone(&actor);
                return;
            }
            let _ = recorder
                .record(Entry {
                    scenario,
                    author: Author::Faults,
                    incarnation: 0,
                    ts_ns: clock.now(),
                    step: Step::Fault(detail::Fault {
                        fault: FaultKind::Pause,
                        target: Some(actor.clone()),
                        duration_ms: Some(hold.as_millis() as u64),
                        ..detail::Fault::default()
                    }),
                })
                .await;
            tokio::time::sleep_until(until.into()).await;
            // Continued by the pause that ends last.
            let over = pauses.lock().expect("pauses lock").over(until);
            if over.contains(&actor) {
                let _ = killpg(pid, Signal::SIGCONT);
            }
        });
    }
}
