//! One scenario of a user's system, from fresh services to `run_end`: services up, setup, the
//! roles' processes, the tasks, the faults, the spans taken in over OTLP and written as rows, quiet,
//! the stores read back, everything stopped.
//!
//! The recorder's own rows (`run_start`, `crash`, `restart`, `fault`, `observed`, `run_end`) go
//! into the same journal as the spans' rows, on one clock, `seq` in the order they arrive. A kill
//! `after KIND` happens while the export that carried the step is held unanswered, so with a
//! synchronous exporter the process dies right after that step and before its next.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use outbox_trace::detail::{self, CounterValue};
use outbox_trace::otlp::LiveMapper;
use outbox_trace::Step;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use super::chaos::SystemChaos;
use super::child::{Child, Launch, SpawnError, Status};
use super::faults::FaultSpec;
use super::file::{Delivery, Export, OtlpProtocol, System};
use super::pauses::{Pauses, Pending};
use super::receiver::{Answer, Intake, OtlpReceiver};
use super::services::{free_port, Service, ServiceFailure};
use super::tasks::{make_tasks, Courier, Delivered};
use super::template::Values;
use crate::journal::author::Author;
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder};

/// How long a process may take to stop after SIGTERM.
const GRACE: Duration = Duration::from_secs(5);
/// Without a `quiet` command: quiet once no span arrived for this long.
const SPAN_SILENCE: Duration = Duration::from_secs(2);
/// How often `quiet` is asked.
const QUIET_EVERY: Duration = Duration::from_millis(250);
/// Restarts of processes that exit on their own, per run.
pub const OWN_EXIT_RESTARTS: u32 = 20;
/// After a kill, how long exports already on their way may take to arrive before the crash row.
const DRAIN: Duration = Duration::from_millis(30);

/// Why a scenario could not run.
#[derive(Debug, thiserror::Error)]
pub enum SystemError {
    /// A process that could not start, a service never ready, a failed setup: exit 4.
    #[error("{0}")]
    Unavailable(String),
    /// Anything else: exit 1.
    #[error("{0:#}")]
    Run(anyhow::Error),
}

impl From<SpawnError> for SystemError {
    fn from(e: SpawnError) -> Self {
        SystemError::Unavailable(e.to_string())
    }
}

impl From<ServiceFailure> for SystemError {
    fn from(e: ServiceFailure) -> Self {
        SystemError::Unavailable(e.to_string())
    }
}

fn run_err(e: impl Into<anyhow::Error>) -> SystemError {
    SystemError::Run(e.into())
}

/// What every scenario of a system run shares.
pub struct SystemEnv<'a> {
    /// The system file.
    pub system: &'a System,
    /// `--env`: added to every process's environment, over `[env]`.
    pub extra_env: &'a [(String, String)],
    /// `--fault`: added to every scenario's faults.
    pub faults: &'a [FaultSpec],
    /// Tasks per scenario.
    pub tasks: u32,
    /// `--chaos`: seed and window.
    pub chaos: Option<(u64, Duration)>,
    /// How long a scenario may take to become quiet.
    pub deadline: Duration,
    /// The journal.
    pub recorder: &'a Recorder,
    /// The run's clock.
    pub clock: RunClock,
    /// Unix nanoseconds at the clock's zero: a span's time minus this is its `ts_ns`.
    pub epoch_unix_ns: u64,
    /// The run.
    pub run_id: &'a str,
    /// Scenario directories go here.
    pub workdir: &'a Path,
    /// Set by Ctrl-C, SIGTERM or SIGHUP.
    pub interrupted: &'a AtomicBool,
    /// Restarts left for processes that exit on their own.
    pub restarts_left: &'a AtomicU32,
    /// The system's configuration for `run_start` (secrets masked).
    pub shown: &'a serde_json::Value,
}

/// How a scenario ended.
#[derive(Debug, Clone, Default)]
pub struct ScenarioOutcome {
    /// `run_end.recovered`.
    pub recovered: bool,
    /// Spans that gave no row, with why (first few).
    pub skipped: Vec<String>,
    /// How many spans gave no row.
    pub skipped_count: u64,
    /// Why there is no `observed` row, if there is none.
    pub no_observed: Option<String>,
}

/// One life of one actor.
struct Life {
    role: String,
    incarnation: u32,
    child: Child,
}

/// A kill to carry out.
struct Kill {
    actor: String,
    incarnation: u32,
    point: String,
    announced: bool,
}

/// An export request taken in, whose answer waits for the kills it called for.
struct Held {
    kills: Vec<Kill>,
    reply: Option<(tokio::sync::oneshot::Sender<Answer>, Answer)>,
}

impl Held {
    fn answer(&mut self) {
        if let Some((reply, answer)) = self.reply.take() {
            let _ = reply.send(answer);
        }
    }
}

/// A fault that follows a step (`kill`/`pause ... after KIND`), with how many of its steps passed.
struct Following {
    spec: FaultSpec,
    seen: u32,
    done: bool,
}

/// Where the task feeder finds the stdin role's current life: its incarnation and the sender
/// of lines to its standard input (`None` while no life is up).
type StdinSlot = watch::Sender<Option<(u32, mpsc::UnboundedSender<String>)>>;

/// The scenario's state while it runs.
struct Stage<'a, 'e> {
    env: &'a SystemEnv<'e>,
    name: String,
    dir: PathBuf,
    values: Values,
    base_env: Vec<(String, String)>,
    receiver: OtlpReceiver,
    lives: BTreeMap<String, Life>,
    ports: BTreeMap<String, u16>,
    exits: mpsc::UnboundedSender<(String, u32, Status)>,
    stdin_slot: Option<StdinSlot>,
    answers: Option<mpsc::UnboundedSender<String>>,
    mapper: LiveMapper,
    after: Vec<Following>,
    chaos: Option<SystemChaos>,
    /// Pauses called for by a step and not begun, and the processes stopped now.
    pauses: Pauses,
    last_span: Instant,
    outcome: ScenarioOutcome,
    backoff: BTreeMap<String, u32>,
}

impl<'a, 'e> Stage<'a, 'e> {
    async fn record(
        &self,
        author: Author,
        incarnation: u32,
        ts_ns: i64,
        step: Step,
    ) -> Result<(), SystemError> {
        self.env
            .recorder
            .record(Entry {
                scenario: self.name.clone(),
                author,
                incarnation,
                ts_ns,
                step,
            })
            .await
            .map_err(SystemError::Run)
    }

    async fn own(&self, author: Author, step: Step) -> Result<(), SystemError> {
        self.record(author, 0, self.env.clock.now(), step).await
    }

    fn role_env(
        &self,
        role: &str,
        actor: &str,
        instance: u32,
        incarnation: u32,
    ) -> Vec<(String, String)> {
        let spec = &self.env.system.file.roles[role];
        let endpoint = match spec.protocol {
            OtlpProtocol::Grpc => self.receiver.grpc_endpoint(),
            _ => self.receiver.http_endpoint(),
        };
        let attrs = format!(
            "outbox.actor={actor},outbox.incarnation={incarnation},outbox.run_id={},outbox.scenario={}",
            self.env.run_id, self.name
        );
        let mut env = self.base_env.clone();
        env.extend([
            ("OTEL_EXPORTER_OTLP_ENDPOINT".to_string(), endpoint),
            (
                "OTEL_EXPORTER_OTLP_PROTOCOL".to_string(),
                spec.protocol.env_value().to_string(),
            ),
            ("OTEL_SERVICE_NAME".to_string(), actor.to_string()),
            ("OTEL_RESOURCE_ATTRIBUTES".to_string(), attrs),
            ("OTEL_TRACES_SAMPLER".to_string(), "always_on".to_string()),
            ("OUTBOX_ROLE".to_string(), role.to_string()),
            ("OUTBOX_INSTANCE".to_string(), instance.to_string()),
            ("OUTBOX_INCARNATION".to_string(), incarnation.to_string()),
        ]);
        if let Some(port) = self.ports.get(actor) {
            env.push(("PORT".to_string(), port.to_string()));
        }
        env
    }

    /// Starts one life of `actor`.
    fn spawn(&mut self, role: &str, actor: &str, incarnation: u32) -> Result<(), SystemError> {
        let spec = &self.env.system.file.roles[role];
        let instance = actor
            .rsplit_once('-')
            .and_then(|(r, n)| (r == role).then(|| n.parse().ok()).flatten())
            .unwrap_or(1);
        let mut values = self.values.clone();
        if let Some(port) = self.ports.get(actor) {
            values.insert("port".into(), port.to_string());
        }
        let argv: Vec<String> = spec.command.iter().map(|t| t.expand(&values)).collect();
        let env = self.role_env(role, actor, instance, incarnation);
        let takes_tasks =
            matches!(&self.env.system.delivery, Delivery::Stdin { role: r, .. } if r == role);
        let mut child = Child::spawn(Launch {
            what: format!("role {role}"),
            argv: &argv,
            env: &env,
            cwd: &self.env.system.root,
            log: self
                .dir
                .join("logs")
                .join(format!("{actor}-{incarnation}.log")),
            stdin: takes_tasks,
            watch_stdout: if takes_tasks {
                self.answers.clone()
            } else {
                None
            },
        })?;
        if takes_tasks {
            if let (Some(mut stdin), Some(slot)) = (child.take_stdin(), &self.stdin_slot) {
                let (tx, mut rx) = mpsc::unbounded_channel::<String>();
                tokio::spawn(async move {
                    while let Some(line) = rx.recv().await {
                        let mut bytes = line.into_bytes();
                        bytes.push(b'\n');
                        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                            break;
                        }
                    }
                });
                let _ = slot.send(Some((incarnation, tx)));
            }
        }
        let mut watch = child.exit_watch();
        let exits = self.exits.clone();
        let who = actor.to_string();
        tokio::spawn(async move {
            loop {
                if let Some(status) = *watch.borrow_and_update() {
                    let _ = exits.send((who, incarnation, status));
                    return;
                }
                if watch.changed().await.is_err() {
                    return;
                }
            }
        });
        self.lives.insert(
            actor.to_string(),
            Life {
                role: role.to_string(),
                incarnation,
                child,
            },
        );
        Ok(())
    }

    fn author(actor: &str) -> Author {
        Author::Process(Arc::from(actor))
    }

    /// Kills a life, records its crash, starts its next life.
    async fn kill(
        &mut self,
        kill: Kill,
        intake: &mut mpsc::Receiver<Intake>,
    ) -> Result<(), SystemError> {
        let Some(life) = self.lives.get_mut(&kill.actor) else {
            return Ok(());
        };
        if life.incarnation != kill.incarnation {
            return Ok(());
        }
        if let Some(slot) = &self.stdin_slot {
            if matches!(&self.env.system.delivery, Delivery::Stdin { role, .. } if *role == life.role)
            {
                let _ = slot.send(None);
            }
        }
        life.child.kill().await;
        let role = life.role.clone();
        // A pause of the dead life ends with it.
        self.pauses.gone(&kill.actor);
        // Exports already on their way from the dead life are its steps: in before its crash.
        tokio::time::sleep(DRAIN).await;
        let mut later = Vec::new();
        while let Ok(item) = intake.try_recv() {
            later.push(self.take(item).await?);
        }
        self.record(
            Self::author(&kill.actor),
            kill.incarnation,
            self.env.clock.now(),
            Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: kill.point.into(),
                    announced: Some(kill.announced),
                    ..detail::Crash::default()
                },
            },
        )
        .await?;
        self.restart(&role, &kill.actor, kill.incarnation + 1)
            .await?;
        for held in later {
            Box::pin(self.carry_out(held, intake)).await?;
        }
        Ok(())
    }

    /// Carries out the kills an export called for, then answers it.
    async fn carry_out(
        &mut self,
        mut held: Held,
        intake: &mut mpsc::Receiver<Intake>,
    ) -> Result<(), SystemError> {
        for kill in std::mem::take(&mut held.kills) {
            self.kill(kill, intake).await?;
        }
        held.answer();
        Ok(())
    }

    async fn restart(
        &mut self,
        role: &str,
        actor: &str,
        incarnation: u32,
    ) -> Result<(), SystemError> {
        self.spawn(role, actor, incarnation)?;
        self.record(
            Self::author(actor),
            incarnation,
            self.env.clock.now(),
            Step::Restart,
        )
        .await
    }

    /// Records the rows of one export request and answers it, unless it calls for kills: then
    /// they are returned with the answer, which waits until they are done (see [`Stage::kill`]).
    async fn take(&mut self, item: Intake) -> Result<Held, SystemError> {
        self.last_span = Instant::now();
        let mapped = self.mapper.map(&item.request);
        let mut kills = Vec::new();
        // The pauses this export queues: which entry of `after` called for each, and whom.
        let mut queued: Vec<(usize, String, u32)> = Vec::new();
        for reason in &mapped.rejected {
            self.skip(reason.clone());
        }
        for live in mapped.events {
            if let Some(kind) = &live.unknown_kind {
                self.skip(format!("a span of unknown kind `{kind}`"));
                continue;
            }
            let event = live.event;
            let actor = event.actor.clone();
            let incarnation = event.incarnation;
            let step = match Step::try_from(&event) {
                Ok(step) => step,
                Err(missing) => {
                    self.skip(missing.to_string());
                    continue;
                }
            };
            let kind = step.kind();
            let ts_ns = i64::try_from(live.at_unix_ns.saturating_sub(self.env.epoch_unix_ns))
                .unwrap_or(i64::MAX);
            self.record(Self::author(&actor), incarnation, ts_ns, step)
                .await?;
            let Some(life) = self.lives.get(&actor) else {
                continue;
            };
            if life.incarnation != incarnation {
                continue;
            }
            let role = life.role.clone();
            let sync = self.env.system.file.roles[&role].export == Export::Sync;
            let mut strike = false;
            let mut may_pause =
                self.may_pause(&actor, &role) && !kills.iter().any(|k: &Kill| k.actor == actor);
            for (i, following) in self.after.iter_mut().enumerate() {
                match &following.spec {
                    FaultSpec::KillAfter {
                        target,
                        kind: k,
                        nth,
                    } if *k == kind && (*target == actor || *target == role) => {
                        following.seen += 1;
                        strike |= following.seen == *nth;
                    }
                    FaultSpec::PauseAfter {
                        target,
                        kind: k,
                        nth,
                        delay,
                        hold,
                    } if *k == kind && (*target == actor || *target == role) => {
                        following.seen += 1;
                        // A process already stopped, or the last one of its role still running
                        // (nobody would take its message over): the pause waits for the next
                        // such step.
                        if following.seen >= *nth && !following.done && may_pause {
                            following.done = true;
                            may_pause = false;
                            queued.push((i, actor.clone(), incarnation));
                            self.pauses.queue(Pending {
                                at: Instant::now() + *delay,
                                actor: actor.clone(),
                                life: incarnation,
                                hold: *hold,
                            });
                        }
                    }
                    _ => {}
                }
            }
            if !strike {
                if let Some(chaos) = &mut self.chaos {
                    strike = chaos.strikes(&role, kind);
                }
            }
            if strike && !kills.iter().any(|k: &Kill| k.actor == actor) {
                kills.push(Kill {
                    actor,
                    incarnation,
                    point: format!("{role}:after-{kind}"),
                    announced: sync,
                });
            }
        }
        // A process this export kills is not paused by it: its pauses wait for a later step.
        for (i, actor, life) in queued {
            if kills
                .iter()
                .any(|k| k.actor == actor && k.incarnation == life)
            {
                self.after[i].done = false;
                self.pauses.unqueue(&actor, life);
            }
        }
        let answer = Answer {
            rejected_spans: mapped.rejected.len() as u64,
            error: mapped.rejected.first().cloned(),
        };
        let mut held = Held {
            kills,
            reply: Some((item.reply, answer)),
        };
        if held.kills.is_empty() {
            held.answer();
        }
        Ok(held)
    }

    /// Whether `actor` may be paused after a step: it is not stopped (nor about to be), and
    /// another process of its `role` runs on to take its message over.
    fn may_pause(&self, actor: &str, role: &str) -> bool {
        !self.pauses.holds(actor)
            && self.lives.iter().any(|(a, l)| {
                a != actor && l.role == role && !self.pauses.holds(a) && l.child.exited().is_none()
            })
    }

    /// SIGSTOPs `actor`'s life `incarnation` (if it still runs) until `hold` has passed.
    async fn pause(
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
                fault: "pause".into(),
                target: Some(actor.to_string()),
                duration_ms: Some(hold.as_millis() as u64),
                ..detail::Fault::default()
            }),
        )
        .await
    }

    /// Begins the pauses that are due and continues the processes whose pause is over.
    async fn pauses_due(&mut self, now: Instant) -> Result<(), SystemError> {
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

    fn skip(&mut self, reason: String) {
        self.outcome.skipped_count += 1;
        if self.outcome.skipped.len() < 3 {
            self.outcome.skipped.push(reason);
        }
    }

    /// A life that ended on its own: its crash, and its next life after a back-off.
    async fn exited(
        &mut self,
        actor: String,
        incarnation: u32,
        status: Status,
    ) -> Result<Option<(Instant, String, String, u32)>, SystemError> {
        let Some(life) = self.lives.get(&actor) else {
            return Ok(None);
        };
        if life.incarnation != incarnation {
            return Ok(None);
        }
        let role = life.role.clone();
        self.record(
            Self::author(&actor),
            incarnation,
            self.env.clock.now(),
            Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: "exit".into(),
                    status: Some(status),
                    announced: Some(false),
                    ..detail::Crash::default()
                },
            },
        )
        .await?;
        eprintln!(
            "recorder: {actor} (life {incarnation}) exited with status {status}; {}",
            self.lives[&actor].child.last_lines()
        );
        let left = self.env.restarts_left.load(Ordering::Relaxed);
        if left == 0 {
            eprintln!("recorder: {actor} is not restarted: {OWN_EXIT_RESTARTS} restarts of processes that exited on their own were used");
            return Ok(None);
        }
        self.env.restarts_left.store(left - 1, Ordering::Relaxed);
        let n = self.backoff.entry(actor.clone()).or_default();
        *n += 1;
        let delay = Duration::from_millis(100u64 << (*n).min(6)).min(Duration::from_secs(5));
        Ok(Some((Instant::now() + delay, role, actor, incarnation + 1)))
    }
}

/// Environment of every command: `[env]` expanded, then `--env`.
fn base_env(system: &System, values: &Values, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = system
        .file
        .env
        .iter()
        .map(|(k, t)| (k.clone(), t.expand(values)))
        .collect();
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env.into_iter().collect()
}

/// Runs a command to its end and returns its status and standard output.
async fn run_command(
    what: &str,
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    log: PathBuf,
) -> Result<(Status, String, String), SpawnError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut child = Child::spawn(Launch {
        what: what.to_string(),
        argv,
        env,
        cwd,
        log,
        stdin: false,
        watch_stdout: Some(tx),
    })?;
    let status = child.wait().await;
    let mut out = String::new();
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
        out.push('\n');
    }
    Ok((status, out, child.last_lines()))
}

/// Runs one scenario.
pub async fn run_scenario(
    env: &SystemEnv<'_>,
    name: &str,
    faults: &[FaultSpec],
) -> Result<ScenarioOutcome, SystemError> {
    let system = env.system;
    let started = Instant::now();
    let deadline = started + env.deadline;
    let dir = env.workdir.join(name);
    std::fs::create_dir_all(dir.join("logs")).map_err(run_err)?;

    // Ports and placeholder values.
    let mut services: Vec<(String, Service)> = Vec::new();
    for (sname, spec) in &system.file.services {
        services.push((
            sname.clone(),
            Service::plan(sname, spec, &dir).map_err(run_err)?,
        ));
    }
    let mut values = Values::from([("dir".to_string(), dir.display().to_string())]);
    for (sname, s) in &services {
        values.insert(format!("services.{sname}.port"), s.port.to_string());
        values.insert(format!("services.{sname}.dir"), s.dir.display().to_string());
    }
    let mut ports = BTreeMap::new();
    for (role, actor) in system.all_actors() {
        if system.file.roles[&role].port {
            let port = free_port().map_err(run_err)?;
            if actor == role {
                values.insert(format!("roles.{role}.port"), port.to_string());
            }
            ports.insert(actor, port);
        }
    }
    let base = base_env(system, &values, env.extra_env);

    // Services, then setup.
    for (_, service) in &mut services {
        service.start(&values, &base, &system.root).await?;
    }
    if let Some(setup) = &system.file.setup {
        let argv: Vec<String> = setup.command.iter().map(|t| t.expand(&values)).collect();
        let (status, _, last) = run_command(
            "setup",
            &argv,
            &base,
            &system.root,
            dir.join("logs/setup.log"),
        )
        .await?;
        if status != 0 {
            return Err(SystemError::Unavailable(format!(
                "setup exited with status {status}; {last}"
            )));
        }
    }

    let (intake_tx, mut intake) = mpsc::channel::<Intake>(256);
    let receiver = OtlpReceiver::start(intake_tx).map_err(run_err)?;
    let (exits_tx, mut exits) = mpsc::unbounded_channel();
    let stdin_role = matches!(system.delivery, Delivery::Stdin { .. });
    let (slot_tx, slot_rx) = watch::channel(None);
    let (answers_tx, answers_rx) = mpsc::unbounded_channel();
    let mut all_faults: Vec<FaultSpec> = faults.to_vec();
    all_faults.extend(env.faults.iter().cloned());
    let chaos = env
        .chaos
        .map(|(seed, window)| SystemChaos::draw(seed, window, env.tasks, system));
    let mut timed: Vec<FaultSpec> = all_faults
        .iter()
        .filter(|f| f.at().is_some())
        .cloned()
        .collect();
    if let Some(c) = &chaos {
        timed.extend(c.timed().cloned());
    }
    timed.sort_by_key(|f| f.at());
    let faults_over = timed
        .iter()
        .filter_map(FaultSpec::over_at)
        .max()
        .unwrap_or_default();

    let mut stage = Stage {
        env,
        name: name.to_string(),
        dir: dir.clone(),
        values: values.clone(),
        base_env: base.clone(),
        receiver,
        lives: BTreeMap::new(),
        ports,
        exits: exits_tx,
        stdin_slot: stdin_role.then_some(slot_tx),
        answers: stdin_role.then_some(answers_tx),
        mapper: LiveMapper::new(),
        after: all_faults
            .iter()
            .chain(chaos.iter().flat_map(|c| c.following()))
            .filter(|f| f.follows_a_step())
            .map(|f| Following {
                spec: f.clone(),
                seen: 0,
                done: false,
            })
            .collect(),
        chaos,
        pauses: Pauses::default(),
        last_span: Instant::now(),
        outcome: ScenarioOutcome::default(),
        backoff: BTreeMap::new(),
    };

    let tasks = make_tasks(
        env.tasks,
        system.file.tasks.aggregates,
        env.chaos.map_or(0, |c| c.0),
    );
    let start = detail::RunStart {
        tasks: Some(i64::from(env.tasks)),
        records: system.file.records.clone(),
        counter_start: system
            .file
            .counter_start
            .as_ref()
            .and_then(CounterValue::from_json),
        system: Some(env.shown.clone()),
        faults: all_faults.iter().map(ToString::to_string).collect(),
        chaos: stage
            .chaos
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok()),
        ..detail::RunStart::default()
    };
    stage.own(Author::Recorder, Step::RunStart(start)).await?;

    for (role, actor) in system.all_actors() {
        stage.spawn(&role, &actor, 0)?;
    }

    let courier = Courier {
        delivery: system.delivery.clone(),
        values: values.clone(),
        env: base.clone(),
        cwd: system.root.clone(),
        logs: dir.join("logs"),
        stdin: stdin_role.then_some(slot_rx),
        answers: stdin_role.then_some(answers_rx),
        deadline,
    };
    let first_task = Instant::now();
    let mut delivery = tokio::spawn(courier.deliver(tasks));
    let mut delivered: Option<Delivered> = None;
    let mut timed: VecDeque<FaultSpec> = timed.into();
    let mut restarts: Vec<(Instant, String, String, u32)> = Vec::new();
    let mut quiet_probe: Option<Instant> = None;
    let mut probe: Option<tokio::task::JoinHandle<Result<bool, SpawnError>>> = None;
    let mut recovered = false;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        if env.interrupted.load(Ordering::Relaxed) || Instant::now() > deadline {
            break;
        }
        let now = Instant::now();
        // Timed faults that are due.
        while timed
            .front()
            .and_then(FaultSpec::at)
            .is_some_and(|at| first_task + at <= now)
        {
            let fault = timed.pop_front().expect("a due fault");
            apply_timed(&mut stage, &mut services, &fault, &mut intake).await?;
        }
        stage.pauses_due(now).await?;
        let due: Vec<_> = restarts.iter().filter(|r| r.0 <= now).cloned().collect();
        restarts.retain(|r| r.0 > now);
        for (_, role, actor, incarnation) in due {
            stage.restart(&role, &actor, incarnation).await?;
        }
        // Quiet: tasks delivered, faults over, nothing waiting to restart.
        let settled = delivered.is_some()
            && timed.is_empty()
            && stage.pauses.is_empty()
            && restarts.is_empty()
            && now >= first_task + faults_over;
        if settled && probe.is_none() && quiet_probe.is_none_or(|at| at <= now) {
            match &system.file.quiet {
                Some(q) => {
                    // Asked in a task of its own: exports keep being answered meanwhile.
                    let argv: Vec<String> = q.command.iter().map(|t| t.expand(&values)).collect();
                    let (env_vars, root, log) = (
                        base.clone(),
                        system.root.clone(),
                        dir.join("logs/quiet.log"),
                    );
                    probe = Some(tokio::spawn(async move {
                        run_command("quiet", &argv, &env_vars, &root, log)
                            .await
                            .map(|(status, _, _)| status == 0)
                    }));
                }
                None if stage.last_span.elapsed() >= SPAN_SILENCE => {
                    recovered = true;
                    break;
                }
                None => {}
            }
        }
        tokio::select! {
            Some(item) = intake.recv() => {
                let held = stage.take(item).await?;
                stage.carry_out(held, &mut intake).await?;
            }
            Some((actor, incarnation, status)) = exits.recv() => {
                if let Some(r) = stage.exited(actor, incarnation, status).await? {
                    restarts.push(r);
                }
            }
            done = &mut delivery, if delivered.is_none() => {
                delivered = Some(done.map_err(run_err)?);
            }
            answer = async { probe.as_mut().expect("a probe").await }, if probe.is_some() => {
                probe = None;
                if answer.map_err(run_err)?? {
                    recovered = true;
                    break;
                }
                quiet_probe = Some(Instant::now() + QUIET_EVERY);
            }
            _ = sleep_until_or_forever(stage.pauses.next()) => {}
            _ = tick.tick() => {}
        }
    }
    if delivered.is_none() {
        delivery.abort();
    }
    if let Some(p) = probe {
        p.abort();
    }
    let delivered = delivered.unwrap_or_default();

    // The stores read back, with every process still up.
    for actor in stage.pauses.stopped() {
        if let Some(life) = stage.lives.get(actor) {
            life.child.signal(Signal::SIGCONT);
        }
    }
    if let Some(observe) = &system.file.observe {
        let argv: Vec<String> = observe.command.iter().map(|t| t.expand(&values)).collect();
        let (status, out, last) = run_command(
            "observe",
            &argv,
            &base,
            &system.root,
            dir.join("logs/observe.log"),
        )
        .await?;
        match serde_json::from_str::<serde_json::Value>(out.trim()) {
            Ok(value @ serde_json::Value::Object(_)) => {
                let observed: detail::Observed = serde_json::from_value(value).map_err(run_err)?;
                stage
                    .own(Author::Observer, Step::Observed(observed))
                    .await?;
            }
            _ => {
                stage.outcome.no_observed = Some(format!(
                    "observe (status {status}) printed no JSON object; {last}"
                ));
            }
        }
    }

    // Everything stops; exits from here on are no crashes.
    drop(exits);
    for life in stage.lives.values_mut() {
        life.child.terminate();
    }
    // While they stop, their last exports are taken in and answered, so none waits on one.
    let until = Instant::now() + GRACE;
    while Instant::now() < until && stage.lives.values().any(|l| l.child.exited().is_none()) {
        tokio::select! {
            Some(item) = intake.recv() => stage.take(item).await?.answer(),
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    for life in stage.lives.values_mut() {
        life.child.kill().await;
    }
    while let Ok(item) = intake.try_recv() {
        stage.take(item).await?.answer();
    }
    for (_, service) in &mut services {
        service.stop(GRACE).await;
    }
    let interrupted = env.interrupted.load(Ordering::Relaxed);
    let end = detail::RunEnd {
        recovered: Some(recovered),
        elapsed_ms: Some(started.elapsed().as_millis() as u64),
        tasks_sent: Some(delivered.sent),
        tasks_answered: Some(delivered.answered),
        tasks_resent: Some(delivered.resent),
        tasks_unanswered: Some(delivered.unanswered),
        reason: if interrupted {
            Some("interrupted".into())
        } else if !recovered {
            Some("deadline".into())
        } else {
            None
        },
        ..detail::RunEnd::default()
    };
    stage.own(Author::Recorder, Step::RunEnd(end)).await?;
    stage.outcome.recovered = recovered;
    Ok(stage.outcome)
}

async fn apply_timed(
    stage: &mut Stage<'_, '_>,
    services: &mut [(String, Service)],
    fault: &FaultSpec,
    intake: &mut mpsc::Receiver<Intake>,
) -> Result<(), SystemError> {
    // A role's timed faults hit its first instance, which has the role's name.
    let actor_of = |target: &str| target.to_string();
    match fault {
        FaultSpec::KillAfter { .. } | FaultSpec::PauseAfter { .. } => {}
        FaultSpec::KillAt { target, .. } => {
            let actor = actor_of(target);
            if let Some(life) = stage.lives.get(&actor) {
                let kill = Kill {
                    actor: actor.clone(),
                    incarnation: life.incarnation,
                    point: "kill".into(),
                    announced: false,
                };
                stage.kill(kill, intake).await?;
            }
        }
        FaultSpec::PauseAt { target, hold, .. } => {
            stage.pause(&actor_of(target), None, *hold).await?;
        }
        FaultSpec::RestartAt { service, .. } => {
            stage
                .own(
                    Author::Faults,
                    Step::Fault(detail::Fault {
                        fault: "service-restart".into(),
                        target: Some(service.clone()),
                        service: Some(service.clone()),
                        ..detail::Fault::default()
                    }),
                )
                .await?;
            if let Some((_, s)) = services.iter_mut().find(|(n, _)| n == service) {
                s.restart().await?;
            }
        }
    }
    Ok(())
}

/// Sleeps until `at`, or forever without one (a `select!` branch that never wins).
async fn sleep_until_or_forever(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
