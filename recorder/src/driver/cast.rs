//! The actor processes of one scenario: one slot per actor, each holding its current life, and what
//! happens when a life ends. A planned crash, a kill after a step or a timed SIGKILL starts the next
//! incarnation at once (a timed SIGKILL that finds its life already ended, at a window of its own,
//! goes to the next life);
//! an error (a service went away, say) starts it after the one restart back-off
//! ([`backoff`]); the API's clean exit
//! is its end. The API's next life is given the tasks whose acceptance its last life did not
//! report, and creates them again with the same idempotency keys.

use std::time::{Duration, Instant};

use outbox_trace::{detail, CrashSite, Step};

use super::env::Stamp;
use super::held::Aim;
use super::scenario::Scenario;
use super::supervisor::ActorProcess;
use crate::driver::actor::spec::ActorSpec;
use crate::fault::chaos::{ChaosPlan, Swarm};
use crate::fault::plan::{Fault, FaultPlan, CRASH_EXIT_CODE};
use crate::journal::author::{ActorId, Role};
use crate::journal::writer::Recorder;
use crate::process::lives::backoff;

/// Exits on an error (not a planned crash, not a fault's kill) after which the scenario gives up.
const MAX_ERRORS: u32 = 20;

/// How long the next life runs before it takes a timed SIGKILL that its predecessor escaped by
/// ending on its own just before.
const KILL_CARRIED_AFTER: Duration = Duration::from_millis(100);

/// One actor and its current life.
pub struct Slot {
    pub role: Role,
    /// Who it is (its name in the trace).
    pub id: ActorId,
    /// Faults armed for its next life.
    pub plan: FaultPlan,
    /// Which life: 0 for the first, one more at each restart (the `incarnation` column).
    pub incarnation: u32,
    errors: u32,
    process: Option<ActorProcess>,
    /// When a life that ended on an error is started again.
    respawn_at: Option<Instant>,
    /// A timed fault SIGKILLed the current life.
    killed: bool,
    /// A timed SIGKILL that found no running life (the last one had just ended on its own),
    /// due to the next life at this time.
    kill_at: Option<Instant>,
    finished: bool,
}

/// Every actor of a scenario. `spec` builds the spec of a slot's next life.
pub struct Cast<'a, F: Fn(&Slot) -> ActorSpec> {
    slots: Vec<Slot>,
    spec: F,
    /// The chaos plan's windows, if the run has one.
    swarm: Option<Swarm<'a>>,
    scenario: &'a str,
    recorder: &'a Recorder,
    /// The scenario's step-following faults, if it has any.
    aim: Option<Aim>,
}

impl<'a, F: Fn(&Slot) -> ActorSpec> Cast<'a, F> {
    /// Starts the scenario's actors: the receiver (if any), the API, the relay and the workers.
    pub async fn start(
        scenario: &'a Scenario,
        spec: F,
        recorder: &'a Recorder,
        chaos: Option<&'a ChaosPlan>,
        aim: Option<Aim>,
    ) -> anyhow::Result<Self> {
        let mut slots = Vec::new();
        if scenario.external {
            slots.push(slot(ActorId::only(Role::Receiver), &[]));
        }
        slots.push(slot(ActorId::only(Role::Api), &scenario.api));
        slots.push(slot(ActorId::only(Role::Relay), &scenario.relay));
        for i in 1..=scenario.workers {
            let id = ActorId {
                role: Role::Worker,
                index: (scenario.workers > 1).then_some(i as u32),
            };
            slots.push(slot(id, &scenario.worker));
        }
        let mut cast = Cast {
            slots,
            spec,
            swarm: chaos.map(Swarm::new),
            scenario: scenario.name.as_str(),
            recorder,
            aim,
        };
        for i in 0..cast.slots.len() {
            cast.spawn(i).await?;
        }
        Ok(cast)
    }

    async fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        if self.slots[i].role == Role::Api && self.slots[i].incarnation > 0 {
            // The next API life retries what the last one left unanswered: the tallies must hold
            // every row the last one reported first.
            self.recorder.sync().await?;
        }
        if let Some(swarm) = &self.swarm {
            let slot = &mut self.slots[i];
            swarm.arm(&mut slot.plan, slot.id, slot.incarnation);
        }
        let spec = (self.spec)(&self.slots[i]);
        let slot = &mut self.slots[i];
        let process = ActorProcess::spawn(
            &spec,
            slot.id,
            self.scenario,
            self.recorder.clone(),
            self.aim.clone(),
        )
        .await?;
        slot.process = Some(process);
        Ok(())
    }

    /// Looks at every actor once: starts the lives due, records the ends, starts the next lives.
    /// Returns whether every actor is alive (or, for the API, done).
    pub async fn tend(&mut self, stamp: &Stamp) -> anyhow::Result<bool> {
        let mut all_alive = true;
        for i in 0..self.slots.len() {
            if self.slots[i]
                .respawn_at
                .is_some_and(|at| Instant::now() >= at)
            {
                self.slots[i].respawn_at = None;
                self.slots[i].incarnation += 1;
                self.spawn(i).await?;
            }
            let s = &mut self.slots[i];
            let Some(process) = s.process.as_mut() else {
                all_alive &= s.finished;
                continue;
            };
            if s.kill_at.is_some_and(|at| Instant::now() >= at) {
                s.kill_at = None;
                s.killed = true;
                process.kill_now();
            }
            let Some(status) = process.try_exit()? else {
                continue;
            };
            let process = s.process.take().expect("present");
            let report = process.collect().await?;
            for fault in &report.fired {
                s.plan.disarm(fault);
                if let Some(swarm) = &mut self.swarm {
                    swarm.fired(fault);
                }
            }
            if s.role == Role::Api && status.success() {
                s.finished = true;
                continue;
            }
            all_alive = false;
            let killed = std::mem::take(&mut s.killed);
            if killed && report.crash_reported {
                // The life ended at a window of its own before the SIGKILL landed: the plan's
                // kill goes to the next life instead of being lost.
                s.kill_at = Some(Instant::now() + KILL_CARRIED_AFTER);
            }
            let killed_after = report.killed_after.is_some();
            if let Some(point) = report.killed_after {
                // Killed on a held report: nothing of the life can be missing.
                let crash = Step::Crash {
                    about: None,
                    crash: detail::Crash {
                        point,
                        announced: Some(true),
                        ..detail::Crash::default()
                    },
                };
                let mut entry = stamp.entry(s.id.into(), crash);
                entry.incarnation = s.incarnation;
                self.recorder.record(entry).await?;
            } else if !report.crash_reported {
                let point = if killed {
                    CrashSite::ChaosSigkill
                } else {
                    CrashSite::Exit
                };
                let crash = Step::Crash {
                    about: None,
                    crash: detail::Crash {
                        point,
                        status: status.code(),
                        ..detail::Crash::default()
                    },
                };
                let mut entry = stamp.entry(s.id.into(), crash);
                entry.incarnation = s.incarnation;
                self.recorder.record(entry).await?;
            }
            let planned = killed
                || killed_after
                || (status.code() == Some(CRASH_EXIT_CODE)
                    && report.crash_reported
                    && !report.fired.is_empty());
            if planned {
                s.incarnation += 1;
                self.spawn(i).await?;
                continue;
            }
            s.errors += 1;
            if s.errors > MAX_ERRORS {
                anyhow::bail!(
                    "{} kept failing ({MAX_ERRORS} times) in scenario {}; see its errors above",
                    s.id,
                    self.scenario
                );
            }
            s.respawn_at = Some(Instant::now() + backoff(s.errors));
        }
        Ok(all_alive)
    }

    /// The API created every task and exited cleanly.
    pub fn api_done(&self) -> bool {
        self.slots.iter().any(|s| s.role == Role::Api && s.finished)
    }

    /// Stops the first actor of `role` and starts its next life from scratch.
    pub async fn restart(&mut self, role: Role) -> anyhow::Result<()> {
        let Some(i) = self.slots.iter().position(|s| s.role == role) else {
            return Ok(());
        };
        if let Some(process) = self.slots[i].process.take() {
            process.stop(Duration::from_secs(5)).await?;
        }
        self.slots[i].incarnation += 1;
        self.spawn(i).await
    }

    /// The slot a fault's target names: an actor (`worker-2`), else a role's first actor.
    fn slot_of(&self, target: &str) -> Option<usize> {
        let by_actor = self.slots.iter().position(|s| s.id.to_string() == target);
        by_actor.or_else(|| self.slots.iter().position(|s| s.role.name() == target))
    }

    /// The actor `target` names: itself, or a role's first actor.
    pub fn actor_of(&self, target: &str) -> Option<String> {
        self.slot_of(target).map(|i| self.slots[i].id.to_string())
    }

    /// SIGKILLs the current life of the actor `target` names (a role: its first actor), or,
    /// between lives, the next one as soon as it runs.
    pub fn kill_target(&mut self, target: &str) {
        let Some(i) = self.slot_of(target) else {
            return;
        };
        let slot = &mut self.slots[i];
        match slot.process.as_mut() {
            Some(process) => {
                slot.killed = true;
                process.kill_now();
            }
            None if !slot.finished => slot.kill_at = Some(Instant::now()),
            None => {}
        }
    }

    /// Pauses the current life of the actor `target` names for `hold` (none between lives).
    pub fn pause_target(&mut self, target: &str, hold: Duration) {
        if let Some(process) = self
            .slot_of(target)
            .and_then(|i| self.slots[i].process.as_ref())
        {
            process.pause(hold);
        }
    }

    /// Stops every actor still running, all at once: each is asked at the same moment and given
    /// the same `grace`, so an ending takes the slowest actor's time, not the sum of them.
    pub async fn stop_all(&mut self, grace: Duration) -> anyhow::Result<()> {
        let stopping = self
            .slots
            .iter_mut()
            .filter_map(|s| s.process.take())
            .map(|process| process.stop(grace));
        for stopped in futures::future::join_all(stopping).await {
            stopped?;
        }
        Ok(())
    }
}

fn slot(id: ActorId, faults: &[Fault]) -> Slot {
    Slot {
        role: id.role,
        id,
        plan: FaultPlan::new(faults.to_vec()),
        incarnation: 0,
        errors: 0,
        process: None,
        respawn_at: None,
        killed: false,
        kill_at: None,
        finished: false,
    }
}
