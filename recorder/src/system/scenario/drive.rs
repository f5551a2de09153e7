//! A scenario while its processes run: the loop that takes spans in, carries out the faults they
//! and the clock set off, restarts what exited, and asks `quiet` until the system is quiet, the
//! deadline passes, a signal comes, or the scenario turns out unable to run.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::commands::{run_command, CommandError};
use super::faults::SystemTargets;
use super::heard::Follow;
use super::service_set::ServiceSet;
use super::shared::{run_err, SystemError, Timeline, QUIET_AT_LEAST, QUIET_EVERY, SPAN_SILENCE};
use super::stage::{HeldExport, Stage};
use crate::fault::apply::{apply, carry_out};
use crate::fault::spec::{Nemesis, When};
use crate::process::child::Status;
use crate::system::receiver::Intake;
use crate::system::tasks::{Delivered, Unreachable};

/// A restart due: when, the role, the actor, and its next life.
type Restart = (Instant, String, String, u32);

/// What the loop keeps between its turns.
pub(super) struct Drive {
    /// Service faults a step set off, due after their delay.
    later: Vec<(Instant, Nemesis)>,
    /// Lives that ended on their own, to start again after their back-off.
    restarts: Vec<Restart>,
    /// The `quiet` asked now, and when the next may be asked.
    probe: Option<JoinHandle<Result<bool, CommandError>>>,
    quiet_next: Option<Instant>,
    /// When `quiet` was last asked.
    pub(super) probe_asked: Instant,
    deadline: Instant,
    /// The tasks' delivery, until it is done.
    pub(super) delivery: JoinHandle<Result<Delivered, Unreachable>>,
    pub(super) delivered: Option<Delivered>,
    /// The system was quiet before the deadline.
    pub(super) recovered: bool,
    /// Why the scenario could not run, once it is known.
    pub(super) could_not: Option<String>,
}

/// The scenario's own parts the loop works on.
pub(super) struct Parts<'s, 'a, 'e> {
    pub stage: &'s mut Stage<'a, 'e>,
    pub services: &'s mut ServiceSet,
    pub intake: &'s mut mpsc::Receiver<Intake>,
    pub exits: &'s mut mpsc::UnboundedReceiver<(String, u32, Status)>,
}

impl<'a, 'e> Parts<'_, 'a, 'e> {
    fn targets(&mut self) -> SystemTargets<'_, 'a, 'e> {
        SystemTargets {
            stage: &mut *self.stage,
            services: &mut self.services.services,
            intake: self.intake,
        }
    }
}

impl Drive {
    /// The loop of a scenario whose tasks go out through `delivery`, until `deadline`
    /// (`could_not`: why it cannot run, known already).
    pub(super) fn new(
        deadline: Instant,
        delivery: JoinHandle<Result<Delivered, Unreachable>>,
        could_not: Option<String>,
    ) -> Self {
        Drive {
            later: Vec::new(),
            restarts: Vec::new(),
            probe: None,
            quiet_next: None,
            probe_asked: Instant::now(),
            deadline,
            delivery,
            delivered: None,
            recovered: false,
            could_not,
        }
    }

    /// Turns until the scenario is over.
    pub(super) async fn run(
        &mut self,
        parts: &mut Parts<'_, '_, '_>,
        timeline: &Timeline,
    ) -> Result<(), SystemError> {
        let env = parts.stage.env;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            if env.shutdown.is_cancelled() || self.could_not.is_some() {
                return Ok(());
            }
            if Instant::now() > self.deadline {
                let silent = parts.stage.last_span.elapsed();
                if env.system.file.quiet.is_some() && silent >= SPAN_SILENCE {
                    parts.stage.outcome.quiet_waiting = Some(silent);
                }
                return Ok(());
            }
            let now = Instant::now();
            self.due(parts, now).await?;
            if self.settled(parts.stage, now) && self.ask_quiet(parts.stage, now) {
                self.recovered = true;
                return Ok(());
            }
            if self.turn(parts, timeline, &mut tick).await? {
                self.recovered = true;
                return Ok(());
            }
        }
    }

    /// Carries out what is due at `now`: timed faults, service faults whose delay after their
    /// step passed, pauses to begin or end, wire faults over, restarts.
    async fn due(
        &mut self,
        parts: &mut Parts<'_, '_, '_>,
        now: Instant,
    ) -> Result<(), SystemError> {
        let first_task = parts.stage.first_task;
        // Timed faults that are due, each counted when its target is there to take it.
        let since = now.saturating_duration_since(first_task);
        while let Some(due) = parts.stage.ledger.next_due(since, |_, _| true) {
            let fault = &due.nemesis;
            let present = match (fault.target(), fault.service()) {
                (Some(target), _) => parts.stage.lives.contains_key(target),
                (None, Some(service)) => parts
                    .services
                    .services
                    .iter()
                    .any(|(n, s)| n == service && s.group().is_some()),
                (None, None) => false,
            };
            apply(&mut parts.targets(), fault).await?;
            if present {
                parts.stage.ledger.fired(&due, first_task.elapsed());
            }
        }
        let (due, wait) = std::mem::take(&mut self.later)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.later = wait;
        for (_, fault) in due {
            carry_out(&mut parts.targets(), &fault).await?;
        }
        parts.stage.pauses_due(now).await?;
        parts.stage.wire_over(false).await?;
        let (due, wait) = std::mem::take(&mut self.restarts)
            .into_iter()
            .partition(|r| r.0 <= now);
        self.restarts = wait;
        for (_, role, actor, incarnation) in due {
            parts.stage.restart(&role, &actor, incarnation).await?;
        }
        Ok(())
    }

    /// Tasks delivered, faults over, nothing waiting to restart.
    fn settled(&self, stage: &Stage<'_, '_>, now: Instant) -> bool {
        self.delivered.is_some()
            && !stage.ledger.pending()
            && self.later.is_empty()
            && stage.pauses.is_empty()
            && self.restarts.is_empty()
            && now >= stage.first_task + stage.ledger.over()
    }

    /// Asks `quiet` when it may be asked (in a task of its own: exports keep being answered
    /// meanwhile); without a `quiet`, whether no span came for [`SPAN_SILENCE`].
    fn ask_quiet(&mut self, stage: &Stage<'_, '_>, now: Instant) -> bool {
        if self.probe.is_some() || self.quiet_next.is_some_and(|at| at > now) {
            return false;
        }
        let env = stage.env;
        let Some(q) = &env.system.file.quiet else {
            return stage.last_span.elapsed() >= SPAN_SILENCE;
        };
        let argv: Vec<String> = q.command.iter().map(|t| t.expand(&stage.values)).collect();
        let (vars, root, log) = (
            stage.base_env.clone(),
            env.system.root.clone(),
            stage.dir.join("logs/quiet.log"),
        );
        // At most the time left to the deadline (a hung `quiet` is not quiet).
        let limit = self
            .deadline
            .saturating_duration_since(now)
            .max(QUIET_AT_LEAST);
        let shutdown = env.shutdown.clone();
        self.probe_asked = now;
        self.probe = Some(tokio::spawn(async move {
            run_command("quiet", &argv, &vars, &root, log, limit, &shutdown)
                .await
                .map(|(status, _, _)| status == 0)
        }));
        false
    }

    /// Waits for the next thing to happen and takes it; true when `quiet` said yes.
    async fn turn(
        &mut self,
        parts: &mut Parts<'_, '_, '_>,
        timeline: &Timeline,
        tick: &mut tokio::time::Interval,
    ) -> Result<bool, SystemError> {
        let env = parts.stage.env;
        let probe = &mut self.probe;
        let pauses_next = parts.stage.pauses.next();
        tokio::select! {
            Some(item) = parts.intake.recv() => {
                if parts.stage.last_span < parts.stage.first_task {
                    timeline.mark("first span");
                }
                self.took(parts, item).await?;
            }
            Some(told) = parts.stage.heard.recv() => {
                let held = parts.stage.hear(told, Follow::Faults).await?;
                self.carried(parts, held).await?;
            }
            Some((actor, incarnation, status)) = parts.exits.recv() => {
                if let Some(r) = parts.stage.exited(actor, incarnation, status).await? {
                    self.restarts.push(r);
                }
                for held in std::mem::take(&mut parts.stage.held) {
                    self.carried(parts, held).await?;
                }
            }
            done = &mut self.delivery, if self.delivered.is_none() => {
                match done.map_err(run_err)? {
                    Ok(done) => self.delivered = Some(done),
                    Err(unreachable) => self.could_not = Some(unreachable.to_string()),
                }
            }
            answer = async { probe.as_mut().expect("a probe").await }, if probe.is_some() => {
                self.probe = None;
                if answer.map_err(run_err)?? {
                    return Ok(true);
                }
                self.quiet_next = Some(Instant::now() + QUIET_EVERY);
            }
            _ = sleep_until_or_forever(pauses_next) => {}
            _ = tick.tick() => {}
            _ = env.shutdown.cancelled() => {}
        }
        Ok(false)
    }

    /// An export taken in: its rows, the service faults it set off (before it is answered), then
    /// the kills it called for and its answer.
    async fn took(
        &mut self,
        parts: &mut Parts<'_, '_, '_>,
        item: Intake,
    ) -> Result<(), SystemError> {
        let held = parts.stage.take(item).await?;
        self.carried(parts, held).await
    }

    /// The service faults a step set off (before its export is answered or its connection let
    /// go), then the kills it called for, then the answer.
    async fn carried(
        &mut self,
        parts: &mut Parts<'_, '_, '_>,
        held: HeldExport,
    ) -> Result<(), SystemError> {
        for fault in std::mem::take(&mut parts.stage.service_faults) {
            match fault.when {
                When::After { delay, .. } if !delay.is_zero() => {
                    self.later.push((Instant::now() + delay, fault));
                }
                _ => carry_out(&mut parts.targets(), &fault).await?,
            }
        }
        parts.stage.carry_out(held, parts.intake).await
    }

    /// Stops what still runs of the loop's own: the delivery and a `quiet` asked.
    pub(super) fn stop(&mut self) {
        if self.delivered.is_none() {
            self.delivery.abort();
        }
        if let Some(p) = self.probe.take() {
            p.abort();
        }
    }
}

/// Sleeps until `at`, or forever without one (a `select!` branch that never wins).
async fn sleep_until_or_forever(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
