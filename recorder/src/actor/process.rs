//! The actor side of the recorder: one OS process per actor life (API, relay, worker).
//!
//! The recorder starts `recorder actor`, writes an [`ActorSpec`] as one JSON line to its standard
//! input and keeps the pipe open; the process reports every step as a JSON [`Line`] on its standard
//! output. Closing standard input asks it to stop (so a dying recorder takes its actors with it). A
//! crash point is a real `exit`, after the crash line was flushed.

use std::fmt;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use outbox_trace::{detail, Kind, Step};
use serde::{Deserialize, Serialize};

use crate::backend::etcd_jetstream::EtcdJetStream;
use crate::backend::sqlite_redis::SqliteRedis;
use crate::backend::{Backend, BackendKind, Connection};
use crate::chaos::Dice;
use crate::clock::RunClock;
use crate::external::ExternalSpec;
use crate::faults::{CrashPoint, Fault, FaultPlan, CRASH_EXIT_CODE};
use crate::protocol::{self, Intent, Protocol, TaskSpec, Timing};
use crate::scenario::ApiMode;

/// The roles an actor process can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Creates the scenario's tasks, then exits.
    Api,
    /// Publishes pending outbox records until told to stop.
    Relay,
    /// Consumes and commits effects until told to stop.
    Worker,
    /// Serves the external payments API until told to stop.
    Receiver,
}

impl Role {
    /// The actor name prefix.
    pub fn name(self) -> &'static str {
        match self {
            Role::Api => "api",
            Role::Relay => "relay",
            Role::Worker => "worker",
            Role::Receiver => "receiver",
        }
    }
}

/// One actor of a scenario: its role, and which of the role's actors when there are several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActorId {
    /// What it does.
    pub role: Role,
    /// 1-based, among several actors of the role (`None`: the only one).
    pub index: Option<u32>,
}

impl ActorId {
    /// The only actor of `role`.
    pub fn only(role: Role) -> Self {
        ActorId { role, index: None }
    }
}

/// `worker`, `worker-2`, ...: the actor's name in the trace.
impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.role.name())?;
        match self.index {
            Some(i) => write!(f, "-{i}"),
            None => Ok(()),
        }
    }
}

/// Who writes a row: an actor process, or the recorder itself in one of its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Author {
    /// An actor's own report.
    Actor(ActorId),
    /// The recorder: `run_start`, `run_end`, and the crash of a life that could not report it.
    Recorder,
    /// What was read back from the services.
    Observer,
    /// Faults injected on the services.
    Faults,
}

impl From<ActorId> for Author {
    fn from(id: ActorId) -> Self {
        Author::Actor(id)
    }
}

/// The `actor` column.
impl fmt::Display for Author {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Author::Actor(id) => id.fmt(f),
            Author::Recorder => f.write_str("recorder"),
            Author::Observer => f.write_str("observer"),
            Author::Faults => f.write_str("faults"),
        }
    }
}

/// Everything one actor life needs, sent over its standard input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActorSpec {
    /// What to do.
    pub role: Role,
    /// Which life this is.
    pub incarnation: u32,
    /// The run's clock.
    pub clock: RunClock,
    /// Where the services are.
    pub connection: Connection,
    /// Which protocol variant.
    pub protocol: Protocol,
    /// Faults armed in this life.
    pub plan: FaultPlan,
    /// Timing knobs.
    pub timing: Timing,
    /// The tasks to create (API only).
    pub tasks: Vec<TaskSpec>,
    /// How the API publishes (API only).
    pub api_mode: ApiMode,
    /// Tasks the API creates per second (0: no pacing).
    pub api_rate: u32,
    /// The external receiver (the receiver serves it; workers call it).
    pub external: Option<ExternalSpec>,
    /// Report every step; when false, only crashes (to measure what tracing costs).
    #[serde(default = "yes")]
    pub trace: bool,
}

fn yes() -> bool {
    true
}

/// One line an actor writes to its standard output.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "line", content = "body", rename_all = "kebab-case")]
pub enum Line {
    /// A protocol step and when it happened (who did it, and where, the recorder fills in).
    Step {
        /// Nanoseconds on the run's clock.
        ts_ns: i64,
        /// What happened.
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
        write_line(&Line::Step {
            ts_ns: self.clock.now(),
            step: Box::new(step),
        });
    }
}

/// What a running actor uses to report, to hit crash points and to notice it should stop.
pub struct ActorCtx {
    clock: RunClock,
    /// Faults armed in this life.
    pub plan: FaultPlan,
    /// Rolls for the plan's chance faults.
    dice: Dice,
    /// Which protocol variant.
    pub protocol: Protocol,
    /// Timing knobs.
    pub timing: Timing,
    /// The external receiver to call, if the scenario has one.
    pub external: Option<ExternalSpec>,
    stop: Arc<AtomicBool>,
    trace: bool,
}

impl ActorCtx {
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
            crash
                .other
                .insert("committed_rev".to_string(), store_rev.into());
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
        self.stop.load(Ordering::Relaxed)
    }

    /// Resolves once the recorder says stop.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let stop = self.stop.clone();
        async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
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

/// Runs the external receiver on its own (`recorder receiver`) until standard input closes.
pub fn receiver_main(spec: ExternalSpec) -> i32 {
    let ctx = ActorCtx {
        clock: RunClock::start(),
        plan: FaultPlan::default(),
        dice: Dice::new(0),
        protocol: Protocol::Reference,
        timing: Timing::default(),
        external: None,
        stop: stop_on_stdin_eof(),
        trace: true,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(crate::external::serve(&ctx, &spec)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("recorder receiver: {e:#}");
            1
        }
    }
}

/// A flag that turns true when standard input reaches its end.
fn stop_on_stdin_eof() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut sink);
        flag.store(true, Ordering::Relaxed);
    });
    stop
}

/// Runs one actor life: reads the spec, connects, plays the role, and returns the exit code.
pub fn main() -> i32 {
    let mut first = String::new();
    let stdin = std::io::stdin();
    if stdin.lock().read_line(&mut first).is_err() || first.trim().is_empty() {
        eprintln!("recorder actor: expected an actor spec on standard input (this command is started by `recorder run`)");
        return 2;
    }
    let spec: ActorSpec = match serde_json::from_str(&first) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("recorder actor: unreadable actor spec: {e}");
            return 2;
        }
    };
    let stop = stop_on_stdin_eof();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut ctx = ActorCtx {
        clock: spec.clock,
        plan: spec.plan.clone(),
        dice: Dice::new(spec.plan.seed),
        protocol: spec.protocol,
        timing: spec.timing,
        external: spec.external.clone(),
        stop,
        trace: spec.trace,
    };
    match runtime.block_on(play(&spec, &mut ctx)) {
        Ok(()) => 0,
        Err(e) => {
            ctx.emit(Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: "error".to_string(),
                    error: Some(format!("{e:#}")),
                    ..detail::Crash::default()
                },
            });
            eprintln!(
                "recorder actor {}#{}: {e:#}",
                spec.role.name(),
                spec.incarnation
            );
            CRASH_EXIT_CODE
        }
    }
}

async fn play(spec: &ActorSpec, ctx: &mut ActorCtx) -> anyhow::Result<()> {
    if spec.incarnation > 0 {
        ctx.emit(Step::Restart);
    }
    if spec.role == Role::Receiver {
        let external = spec
            .external
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a receiver needs its address"))?;
        return crate::external::serve(ctx, external).await;
    }
    match spec.connection.endpoints.kind() {
        BackendKind::EtcdJetstream => {
            play_on(
                spec,
                ctx,
                EtcdJetStream::connect(&spec.connection, spec.timing).await?,
            )
            .await
        }
        BackendKind::SqliteRedis => {
            play_on(
                spec,
                ctx,
                SqliteRedis::connect(&spec.connection, spec.timing).await?,
            )
            .await
        }
    }
}

async fn play_on<B: Backend>(
    spec: &ActorSpec,
    ctx: &mut ActorCtx,
    backend: B,
) -> anyhow::Result<()> {
    match spec.role {
        Role::Api => {
            protocol::api::create_all(ctx, &backend, &spec.tasks, spec.api_mode, spec.api_rate)
                .await
        }
        Role::Relay => protocol::relay::run(ctx, &backend, &backend).await,
        Role::Worker => protocol::worker::run(ctx, &backend, &backend).await,
        Role::Receiver => unreachable!("the receiver needs no backend"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actors_are_named_by_role_and_index() {
        let worker = |index| ActorId {
            role: Role::Worker,
            index,
        };
        assert_eq!(worker(Some(2)).to_string(), "worker-2");
        assert_eq!(worker(None).to_string(), "worker");
        assert_eq!(
            Author::from(ActorId::only(Role::Relay)).to_string(),
            "relay"
        );
        assert_eq!(Author::Observer.to_string(), "observer");
        assert_eq!(Author::Faults.to_string(), "faults");
        assert_eq!(Author::Recorder.to_string(), "recorder");
    }

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
