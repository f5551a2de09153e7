//! A lab scenario while its actors run: the loop that carries out the timed faults as they come
//! due and the services' faults the actors' held reports set off (a restart while the report
//! waits, a pause with a delay that long after its answer), restarts the actors whose lives
//! ended, and looks at the services until they are quiet, the deadline passes or a signal comes.
//!
//! "Quiet" is read from the services, not guessed from time: the API finished, every actor is
//! alive, no outbox record is pending and the broker has nothing undelivered or unACKed, three
//! checks in a row. A scenario whose relay runs more than once starts the relay again from
//! scratch at each quiet point, after an `observed` row.

use std::time::{Duration, Instant};

use outbox_trace::Step;

use super::cast::{Cast, Slot};
use super::env::{drive, ScenarioEnv, ScenarioError};
use super::held::{Due, ServiceFault};
use super::inject::{self, LabTargets};
use super::observer;
use super::prepare::{Scene, ServiceFaults};
use crate::backend::control::{Control, Progress};
use crate::driver::actor::spec::ActorSpec;
use crate::fault::apply::{apply, carry_out};
use crate::fault::ledger::{Ledger, TimedFault};
use crate::fault::spec::Nemesis;
use crate::journal::author::{Author, Role};
use crate::journal::writer::Tallies;

/// How often the driver looks at its actors and the services.
const TICK: Duration = Duration::from_millis(100);
/// Consecutive quiet checks that end a scenario.
const QUIET_CHECKS: u32 = 3;

/// What the loop keeps between its ticks.
pub struct Drive {
    /// When the loop began (the timed faults' zero).
    pub started: Instant,
    /// The timed `--fault` specs, to come in time order, each counted when it is carried out.
    pub ledger: Ledger,
    /// The services' faults the actors' steps set off, as they come (none once the loop is
    /// over: a report still held then is answered without them).
    service_faults: Option<ServiceFaults>,
    /// Those of them due after their delay.
    later: Vec<(Instant, Nemesis)>,
    /// The consumer ACKs recorded up to the last tick.
    acks_before: u64,
    /// Quiet checks in a row.
    quiet: u32,
    /// Relay runs still to come after the current one.
    relay_runs_left: u32,
    /// When the progress line was last shown.
    last_progress: Instant,
    /// Why the loop ended: `quiet`, `deadline`, or the run was interrupted.
    pub end_reason: &'static str,
    /// The scenario went quiet before the deadline.
    pub recovered: bool,
}

impl Drive {
    /// The loop of `scene`, whose actors were just started, with the channel of the services'
    /// faults their steps set off.
    pub fn new(scene: &Scene<'_, '_>, service_faults: Option<ServiceFaults>) -> Self {
        let ledger = Ledger::new(scene.env.faults, Vec::new());
        Drive {
            started: Instant::now(),
            ledger,
            service_faults,
            later: Vec::new(),
            acks_before: 0,
            quiet: 0,
            relay_runs_left: scene.scenario.relay_runs.saturating_sub(1),
            last_progress: Instant::now(),
            end_reason: "quiet",
            recovered: false,
        }
    }

    /// Ticks until the scenario is over: quiet (recovered), past its deadline, or interrupted.
    pub async fn run<B: Control, F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        control: &B,
        cast: &mut Cast<'_, F>,
    ) -> Result<(), ScenarioError> {
        let env = scene.env;
        loop {
            if let Some(reason) = self.cut_short(env) {
                self.end_reason = reason;
                break;
            }
            if self.tick(scene, control, cast).await? {
                self.recovered = true;
                break;
            }
            self.wait(scene, cast).await?;
        }
        // A report still held for a service's fault is answered without it.
        self.service_faults = None;
        Ok(())
    }

    /// Waits for the next tick, taking the services' faults the actors' steps set off as they
    /// come; a fault's delay running out, or a signal, ends the wait early.
    async fn wait<F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        cast: &mut Cast<'_, F>,
    ) -> Result<(), ScenarioError> {
        let later_next = self.later.iter().map(|(at, _)| *at).min();
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = scene.env.shutdown.cancelled() => {}
            Some(fault) = next_service_fault(&mut self.service_faults) => {
                self.on_service_fault(scene, cast, fault).await?;
            }
            _ = sleep_until_or_forever(later_next) => {}
        }
        Ok(())
    }

    /// Why the scenario ends before it went quiet, if it does: a signal, or the deadline.
    fn cut_short(&self, env: &ScenarioEnv<'_>) -> Option<&'static str> {
        if env.shutdown.is_cancelled() {
            Some(outbox_trace::detail::INTERRUPTED)
        } else if self.started.elapsed() > env.deadline {
            Some("deadline")
        } else {
            None
        }
    }

    /// One look: the timed faults due and the services' faults whose delay ran out, the wire's
    /// rows, the actors' lives, the services' progress. Returns true when the scenario is quiet.
    async fn tick<B: Control, F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        control: &B,
        cast: &mut Cast<'_, F>,
    ) -> Result<bool, ScenarioError> {
        let env = scene.env;
        let acks_now = acks(&env.tallies, scene.name());
        while let Some(fault) = self.next_timed(acks_now > self.acks_before) {
            self.on_timed_fault(scene, cast, &fault).await?;
        }
        self.acks_before = acks_now;
        self.later_due(scene, cast).await?;
        if let Some(wire) = &scene.wire {
            wire.record(env, &scene.stamp, false).await?;
        }
        let all_alive = self.on_exits(scene, cast).await?;
        let progress = progress_of(control).await;
        let faults_done = !self.ledger.pending()
            && self.later.is_empty()
            && self.started.elapsed() >= self.ledger.over();
        let settled = all_alive
            && cast.api_done()
            && faults_done
            && progress.outbox_pending == 0
            && progress.broker_pending == 0;
        if self.on_quiet_check(settled, scene, control, cast).await? {
            return Ok(true);
        }
        if env.progress && self.last_progress.elapsed() >= Duration::from_secs(1) {
            self.last_progress = Instant::now();
            show_progress(scene.name(), &env.tallies, self.started.elapsed());
        }
        Ok(false)
    }

    /// The next timed fault, if it is due and ready (`acks_moved`: consumer ACKs came since the
    /// last tick, which a broker restart waits for).
    fn next_timed(&mut self, acks_moved: bool) -> Option<TimedFault> {
        self.ledger
            .next_due(self.started.elapsed(), |fault, overdue| {
                inject::ready(fault, overdue, acks_moved)
            })
    }

    /// A timed fault came due: counted (if it is named), then carried out.
    async fn on_timed_fault<F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        cast: &mut Cast<'_, F>,
        fault: &TimedFault,
    ) -> Result<(), ScenarioError> {
        self.ledger.fired(fault, self.started.elapsed());
        let mut targets = lab_targets(scene, cast).await;
        apply(&mut targets, &fault.nemesis).await
    }

    /// A service's fault an actor's step set off: carried out now while its report waits, then
    /// the report is let go; or kept until its delay after the answer has run out.
    async fn on_service_fault<F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        cast: &mut Cast<'_, F>,
        fault: ServiceFault,
    ) -> Result<(), ScenarioError> {
        match fault.due {
            Due::At(at) => self.later.push((at, fault.nemesis)),
            Due::Held(done) => {
                let mut targets = lab_targets(scene, cast).await;
                carry_out(&mut targets, &fault.nemesis).await?;
                let _ = done.send(());
            }
        }
        Ok(())
    }

    /// Carries out the services' faults whose delay after their step's answer has run out.
    async fn later_due<F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        cast: &mut Cast<'_, F>,
    ) -> Result<(), ScenarioError> {
        let now = Instant::now();
        let (due, wait) = std::mem::take(&mut self.later)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.later = wait;
        for (_, fault) in due {
            let mut targets = lab_targets(scene, cast).await;
            carry_out(&mut targets, &fault).await?;
        }
        Ok(())
    }

    /// Records the lives that ended and starts the next ones. Returns whether every actor is
    /// alive (or, for the API, done).
    async fn on_exits<F: Fn(&Slot) -> ActorSpec>(
        &self,
        scene: &Scene<'_, '_>,
        cast: &mut Cast<'_, F>,
    ) -> Result<bool, ScenarioError> {
        cast.tend(&scene.stamp).await.map_err(drive)
    }

    /// Counts a quiet check (`settled`) or starts counting again; at [`QUIET_CHECKS`] in a row
    /// the scenario is quiet, unless its relay is to run again. Returns true when it is quiet.
    async fn on_quiet_check<B: Control, F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        settled: bool,
        scene: &Scene<'_, '_>,
        control: &B,
        cast: &mut Cast<'_, F>,
    ) -> Result<bool, ScenarioError> {
        if !settled {
            self.quiet = 0;
            return Ok(false);
        }
        self.quiet += 1;
        if self.quiet < QUIET_CHECKS {
            return Ok(false);
        }
        if self.relay_runs_left == 0 {
            return Ok(true);
        }
        self.relay_again(scene, control, cast).await?;
        Ok(false)
    }

    /// Runs the relay again from scratch: it must find nothing left to publish. What the
    /// services hold before is recorded first.
    async fn relay_again<B: Control, F: Fn(&Slot) -> ActorSpec>(
        &mut self,
        scene: &Scene<'_, '_>,
        control: &B,
        cast: &mut Cast<'_, F>,
    ) -> Result<(), ScenarioError> {
        self.relay_runs_left -= 1;
        self.quiet = 0;
        let mut seen = observer::patiently(|| control.observe()).await?;
        seen.phase = Some(format!(
            "after relay run {}",
            scene.scenario.relay_runs - self.relay_runs_left - 1
        ));
        scene
            .env
            .recorder
            .record(scene.stamp.entry(Author::Observer, Step::Observed(seen)))
            .await
            .map_err(drive)?;
        cast.restart(Role::Relay).await.map_err(drive)
    }
}

/// The lab's actors and services as the fault layer's targets, with the services' process
/// groups as they are now.
pub async fn lab_targets<'s, 'a, 'c, F: Fn(&Slot) -> ActorSpec>(
    scene: &'s Scene<'_, 'a>,
    cast: &'s mut Cast<'c, F>,
) -> LabTargets<'s, 'a, 'c, F> {
    LabTargets {
        env: scene.env,
        cast,
        stamp: &scene.stamp,
        groups: inject::service_groups(scene.env).await,
        wire: scene.wire.as_deref(),
    }
}

/// The next service's fault from the actors' steps; never, without the channel.
async fn next_service_fault(faults: &mut Option<ServiceFaults>) -> Option<ServiceFault> {
    match faults {
        Some(faults) => faults.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever without one (a `select!` branch that never wins).
async fn sleep_until_or_forever(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// What the services hold still; while one is restarting, not quiet.
async fn progress_of<B: Control>(control: &B) -> Progress {
    match control.progress().await {
        Ok(p) => p,
        Err(e) => {
            // A service is restarting: not quiet yet.
            tracing::debug!("progress: {e}");
            Progress {
                outbox_pending: u64::MAX,
                broker_pending: u64::MAX,
            }
        }
    }
}

/// The consumer ACKs recorded so far in scenario `name`.
fn acks(tallies: &Tallies, name: &str) -> u64 {
    let tallies = tallies.lock().expect("tally lock");
    tallies
        .iter()
        .find(|(s, _)| s == name)
        .map_or(0, |(_, t)| t.figures.acks())
}

/// One line, rewritten in place: how far the scenario has got.
pub fn show_progress(name: &str, tallies: &Tallies, elapsed: Duration) {
    let tallies = tallies.lock().expect("tally lock");
    let Some((_, t)) = tallies.iter().find(|(s, _)| s == name) else {
        return;
    };
    let f = t.figures.figures();
    eprint!(
        "\r  {name}: accepted {}  published {}  committed {}  acked {}  crashes {}  ({:.1} s)   ",
        f.tasks,
        f.stream_copies,
        f.effects,
        f.acks,
        f.crashes,
        elapsed.as_secs_f64()
    );
}
