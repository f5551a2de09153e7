//! The context a protocol step runs in: [`ActorCtx`] reports each step as one JSON [`Line`] on
//! the actor process's standard output, hits armed crash points (a real `exit` after the crash
//! line is flushed) and notices when the recorder asks it to stop (standard input closed).

use std::io::Write;

use outbox_trace::{Kind, Step};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::model::{Intent, Timing};
use super::variant::Protocol;
use crate::fault::dice::Dice;
use crate::fault::plan::{CrashPoint, Fault, FaultPlan, CRASH_EXIT_CODE};
use crate::journal::clock::RunClock;
use crate::protocol::external::spec::ExternalSpec;

/// One line an actor writes to its standard output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "line", content = "body", rename_all = "kebab-case")]
pub enum Line {
    /// A protocol step and when it happened (who did it, and where, the recorder fills in).
    Step {
        /// Nanoseconds on the run's clock.
        ts_ns: i64,
        /// The step; the recorder adds the scenario, the author and the life.
        step: Box<Step>,
    },
    /// A fault of the plan fired and is spent.
    Fired(Fault),
}

/// Reports events; cheap to copy into tasks.
#[derive(Debug, Clone, Copy)]
pub struct Reporter {
    clock: RunClock,
    trace: bool,
}

impl Reporter {
    /// Reports one step.
    pub fn emit(&self, step: Step) {
        if !self.trace && step.kind() != Kind::Crash {
            return;
        }
        let kind = step.kind();
        write_line(&Line::Step {
            ts_ns: self.clock.now(),
            step: Box::new(step),
        });
        super::hold::after_report(kind);
    }
}

/// What a running actor uses to report, to hit crash points and to notice it should stop.
pub struct ActorCtx {
    clock: RunClock,
    /// Faults armed in this life.
    pub plan: FaultPlan,
    /// Rolls for the plan's chance faults, seeded by the plan.
    dice: Dice,
    /// The protocol variant, which decides the order of the actor's steps.
    pub protocol: Protocol,
    /// AckWait, publish timeout, batch sizes: the same for every actor of the run.
    pub timing: Timing,
    /// The external receiver to call, if the scenario has one.
    pub external: Option<ExternalSpec>,
    /// Set once the recorder closed the process's standard input.
    stop: CancellationToken,
    /// Whether steps are reported (crashes always are).
    trace: bool,
}

impl ActorCtx {
    /// The context of one actor life: steps stamped on `clock`, crashes armed by `plan` (its
    /// chance faults rolled from the plan's seed), stopping once `stop` is set.
    pub fn new(
        clock: RunClock,
        plan: FaultPlan,
        protocol: Protocol,
        timing: Timing,
        external: Option<ExternalSpec>,
        stop: CancellationToken,
        trace: bool,
    ) -> Self {
        ActorCtx {
            clock,
            dice: Dice::new(plan.seed),
            plan,
            protocol,
            timing,
            external,
            stop,
            trace,
        }
    }

    /// Reports one step.
    pub fn emit(&self, step: Step) {
        self.reporter().emit(step);
    }

    /// A reporter for tasks of this actor.
    pub fn reporter(&self) -> Reporter {
        Reporter {
            clock: self.clock,
            trace: self.trace,
        }
    }

    /// Reports that a fault fired.
    pub fn fired(&mut self, fault: Fault) {
        self.plan.disarm(&fault);
        write_line(&Line::Fired(fault));
    }

    /// Dies here if a crash at `point` is armed (or a chance fault's roll comes up).
    pub fn crash_point(&mut self, point: CrashPoint, about: Option<&Intent>) {
        let Some(fault) = self.plan.crash_at(point, &mut self.dice) else {
            return;
        };
        self.die(
            Step::crash(point.name(), about.map(|i| i.about().loose())),
            fault,
        );
    }

    /// Dies here like [`Self::crash_point`], naming in the crash row (`detail.committed_rev`)
    /// the transaction that went through just before.
    pub fn crash_point_after_commit(&mut self, point: CrashPoint, about: &Intent, store_rev: i64) {
        let Some(fault) = self.plan.crash_at(point, &mut self.dice) else {
            return;
        };
        let mut step = Step::crash(point.name(), Some(about.about().loose()));
        if let Step::Crash { crash, .. } = &mut step {
            crash.committed_rev = Some(store_rev);
        }
        self.die(step, fault);
    }

    fn die(&mut self, crash: Step, fault: Fault) -> ! {
        self.emit(crash);
        self.fired(fault);
        std::process::exit(CRASH_EXIT_CODE);
    }

    /// True once the recorder closed our standard input.
    pub fn stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Resolves once the recorder says stop.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.stop.clone().cancelled_owned()
    }
}

fn write_line(line: &Line) {
    let mut text = serde_json::to_string(line).expect("lines serialise");
    text.push('\n');
    let mut out = std::io::stdout().lock();
    // If the recorder is gone there is nobody to report to: stop.
    if out
        .write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .is_err()
    {
        std::process::exit(CRASH_EXIT_CODE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_line_reads_back_as_the_same_step() {
        let step = Step::crash("relay:before-publish", None);
        let text = serde_json::to_string(&Line::Step {
            ts_ns: 42,
            step: Box::new(step.clone()),
        })
        .unwrap();
        match serde_json::from_str::<Line>(&text).unwrap() {
            Line::Step { ts_ns, step: back } => assert_eq!((ts_ns, *back), (42, step)),
            other => panic!("{other:?}"),
        }
    }
}
