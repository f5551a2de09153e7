//! The recorder's side of a held report in the lab: an actor that reported a step of a held kind
//! waits (see [`crate::protocol::hold`]); the scenario's [`Trigger`] decides what the step sets off.
//! A kill SIGKILLs the life's process group before it is answered, so it dies right after that
//! step; a pause answers, then SIGSTOPs the process `delay` later and SIGCONTs it after `hold`,
//! with a `fault` row; a wire fault is switched on on the actor's proxy before the answer;
//! anything else is just answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use outbox_trace::{detail, CrashSite, FaultKind, Kind, Step};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use super::wire::LabWire;
use crate::fault::spec::What;
use crate::fault::trigger::{Reporter, Trigger};
use crate::journal::author::{ActorId, Author};
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder};

/// The step-following faults of a scenario, shared by its actors' lives.
#[derive(Clone)]
pub struct Aim {
    /// The faults and their counts.
    pub trigger: Arc<Mutex<Trigger>>,
    /// The actors' proxies, when the scenario has wire faults.
    pub wire: Option<Arc<LabWire>>,
}

/// One life's means to answer its held reports.
pub struct Held {
    /// The life's process (and group) id.
    pub pid: i32,
    /// Who it is.
    pub actor: ActorId,
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
    /// The life is stopped by a pause now.
    pub paused: Arc<AtomicBool>,
}

impl Held {
    /// A step of `kind` was reported and is held: carries out what it sets off and answers,
    /// unless it kills the life (then returns the crash point).
    pub async fn answer(&self, aim: Option<&Aim>, kind: Kind) -> Option<CrashSite> {
        let actor = self.actor.to_string();
        let struck = aim.and_then(|aim| {
            let mut trigger = aim.trigger.lock().ok()?;
            let struck = trigger.on_step(
                Reporter {
                    actor: &actor,
                    role: self.actor.role.name(),
                    running: !self.paused.load(Ordering::Relaxed),
                    has_sibling: true,
                    at: Duration::from_nanos(self.clock.now().max(0) as u64),
                },
                kind,
            );
            // A wire fault is on before the step is answered.
            if let Some(wire) = &aim.wire {
                for &i in &struck.wire {
                    if let Some(What::Wire { service, fault, .. }) =
                        trigger.armed().get(i).map(|a| &a.nemesis.what)
                    {
                        wire.apply(&actor, service, *fault);
                    }
                }
            }
            Some(struck)
        });
        let struck = struck.unwrap_or_default();
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

    /// SIGSTOPs the life `delay` from now, records the pause, and SIGCONTs it after `hold`.
    pub fn pause(&self, delay: Duration, hold: Duration) {
        let (pid, paused) = (Pid::from_raw(self.pid), self.paused.clone());
        let (recorder, clock) = (self.recorder.clone(), self.clock);
        let (scenario, actor) = (self.scenario.clone(), self.actor.to_string());
        paused.store(true, Ordering::Relaxed);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if killpg(pid, Signal::SIGSTOP).is_ok() {
                let _ = recorder
                    .record(Entry {
                        scenario,
                        author: Author::Faults,
                        incarnation: 0,
                        ts_ns: clock.now(),
                        step: Step::Fault(detail::Fault {
                            fault: FaultKind::Pause,
                            target: Some(actor),
                            duration_ms: Some(hold.as_millis() as u64),
                            ..detail::Fault::default()
                        }),
                    })
                    .await;
                tokio::time::sleep(hold).await;
                let _ = killpg(pid, Signal::SIGCONT);
            }
            paused.store(false, Ordering::Relaxed);
        });
    }
}
