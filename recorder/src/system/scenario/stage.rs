//! The lives of a scenario's processes: the stage every part of a scenario works on, starting a
//! role's life with its environment, killing one (its crash row after the exports already on
//! their way), starting the next, and a life that ended on its own (its crash row, its next life
//! after a back-off).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use outbox_trace::detail::{self};
use outbox_trace::otlp::LiveMapper;
use outbox_trace::CrashSite;
use outbox_trace::Step;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

use super::commands;
use super::shared::{ScenarioOutcome, SystemEnv, SystemError, DRAIN, OWN_EXIT_RESTARTS};
use crate::fault::chaos::SystemChaos;
use crate::fault::coverage::Origin;
use crate::fault::ledger::Ledger;
use crate::fault::pauses::Pauses;
use crate::fault::spec::{Nemesis, WireFault};
use crate::fault::trigger::Trigger;
use crate::journal::author::Author;
use crate::journal::writer::Entry;
use crate::process::child::{Child, Launch, Status};
use crate::process::lives::{Lives, AT_ONCE, AT_ONCE_IN_A_ROW};
use crate::process::mark::SCENARIO_MARK;
use crate::system::file::{Delivery, OtlpProtocol};
use crate::system::receiver::{Answer, Intake, OtlpReceiver, TOKEN_HEADER};
use crate::system::shape::ShapeLearner;
use crate::system::template::Values;
use crate::wire::Proxy;

/// One life of one actor.
pub(super) struct Life {
    pub(super) role: String,
    pub(super) incarnation: u32,
    pub(super) child: Child,
    /// When it started.
    pub(super) started: Instant,
    /// When its end (an exit of its own) was recorded.
    pub(super) ended: Option<Instant>,
}

/// A kill to carry out.
pub(super) struct Kill {
    pub(super) actor: String,
    pub(super) incarnation: u32,
    pub(super) point: CrashSite,
    pub(super) announced: bool,
}

/// An export request taken in, whose answer waits for the kills it called for.
pub(super) struct HeldExport {
    /// The kills to carry out before it is answered.
    pub(super) kills: Vec<Kill>,
    /// Where its answer goes, and the answer (taken once it is sent).
    pub(super) reply: Option<(tokio::sync::oneshot::Sender<Answer>, Answer)>,
    /// For a fact a proxy told: the word that lets its connection go on.
    pub(super) go: Option<tokio::sync::oneshot::Sender<()>>,
}

impl HeldExport {
    /// A fact a proxy told, held for `kills`.
    pub(super) fn letting_go(kills: Vec<Kill>, go: tokio::sync::oneshot::Sender<()>) -> Self {
        HeldExport {
            kills,
            reply: None,
            go: Some(go),
        }
    }

    /// Sends its answer (or lets its connection go on), if it was not done yet.
    pub(super) fn answer(&mut self) {
        if let Some((reply, answer)) = self.reply.take() {
            let _ = reply.send(answer);
        }
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
    }
}

/// Where the task feeder finds the stdin role's current life: its incarnation and the sender
/// of lines to its standard input (`None` while no life is up).
pub(super) type StdinSlot = watch::Sender<Option<(u32, mpsc::UnboundedSender<String>)>>;

/// The scenario's state while it runs.
pub(super) struct Stage<'a, 'e> {
    pub(super) env: &'a SystemEnv<'e>,
    pub(super) name: String,
    pub(super) dir: PathBuf,
    pub(super) values: Values,
    pub(super) base_env: Vec<(String, String)>,
    pub(super) receiver: OtlpReceiver,
    pub(super) lives: BTreeMap<String, Life>,
    pub(super) ports: BTreeMap<String, u16>,
    pub(super) exits: mpsc::UnboundedSender<(String, u32, Status)>,
    pub(super) stdin_slot: Option<StdinSlot>,
    pub(super) answers: Option<mpsc::UnboundedSender<String>>,
    pub(super) mapper: LiveMapper,
    pub(super) trigger: Trigger,
    pub(super) chaos: Option<SystemChaos>,
    /// Pauses called for by a step and not begun, and the processes stopped now.
    pub(super) pauses: Pauses,
    pub(super) last_span: Instant,
    pub(super) outcome: ScenarioOutcome,
    /// Per actor, its lives that ended on their own (for the back-off).
    pub(super) failures: BTreeMap<String, Lives>,
    /// What the processes reported so far.
    pub(super) shape: ShapeLearner,
    /// When the first task went out (the zero of timed faults).
    pub(super) first_task: Instant,
    /// Service faults a step set off, to carry out before its export is answered.
    pub(super) service_faults: Vec<Nemesis>,
    /// The scenario's timed faults, to come in time order, each with how often it happened.
    pub(super) ledger: Ledger,
    /// Whether the scenario's faults are named or searched.
    pub(super) origin: Origin,
    /// Each process life's token: the exports that carry it are that life's, until the life's
    /// end is recorded and its exports drained.
    pub(super) tokens: HashMap<String, Sender>,
    /// The proxy between each actor and each service: `(actor, service)`.
    pub(super) proxies: BTreeMap<(String, String), Proxy>,
    /// Each wire fault that acted on traffic: `(actor, service, fault)`.
    pub(super) wire_acts: Vec<(String, String, WireFault)>,
    /// The `[steps]` mapping's reading of what the proxies hear (none without one).
    pub(super) reading: Option<crate::system::steps::Reading>,
    /// What the listening proxies tell (closed at once without `[steps]`).
    pub(super) heard: mpsc::Receiver<crate::wire::Told>,
    /// How many facts the proxies gave up telling (the scenario took none in for a whole
    /// hold).
    pub(super) missed: Arc<AtomicU64>,
    /// Facts of other lives taken in while a life ended on its own, whose kills and answers
    /// the loop carries out next.
    pub(super) held: Vec<HeldExport>,
}

/// The life a token was given to.
#[derive(Debug, Clone)]
pub(super) struct Sender {
    pub(super) actor: String,
    pub(super) incarnation: u32,
    /// From when exports with the token are refused: the life ended.
    pub(super) revoked: Option<Instant>,
}

impl Sender {
    /// The life, while its token is still taken.
    pub(super) fn valid(&self, now: Instant) -> Option<(String, u32)> {
        match self.revoked {
            Some(at) if at <= now => None,
            _ => Some((self.actor.clone(), self.incarnation)),
        }
    }
}

/// How long after a life that ended on its own is recorded its token is still taken: for the
/// exports it sent before it ended and not yet read.
const EXPORTS_AFTER_EXIT: Duration = Duration::from_secs(1);

/// A fresh token, 128 random bits in hex: no other process can guess it.
fn token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Adds the token to the OTLP exporter's headers in `env`: to the traces exporter's own
/// variable when the environment sets it (it takes precedence over the general one), else to the
/// general one, after any headers already there.
fn with_token(env: &mut Vec<(String, String)>, token: &str) {
    let header = format!("{TOKEN_HEADER}={token}");
    let key = if env.iter().any(|(k, _)| k == TRACES_HEADERS) {
        TRACES_HEADERS
    } else {
        HEADERS
    };
    match env.iter_mut().rev().find(|(k, _)| k == key) {
        Some((_, value)) if !value.trim().is_empty() => *value = format!("{value},{header}"),
        Some((_, value)) => *value = header,
        None => env.push((key.to_string(), header)),
    }
}

const HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
const TRACES_HEADERS: &str = "OTEL_EXPORTER_OTLP_TRACES_HEADERS";

impl<'a, 'e> Stage<'a, 'e> {
    pub(super) async fn record(
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

    pub(super) async fn own(&self, author: Author, step: Step) -> Result<(), SystemError> {
        self.record(author, 0, self.env.clock.now(), step).await
    }

    /// The environment of `actor`'s life `incarnation`: see [`commands::role_env`] for what
    /// overrides what. `values` are the role's placeholder values.
    pub(super) fn role_env(
        &self,
        role: &str,
        actor: &str,
        instance: u32,
        incarnation: u32,
        values: &Values,
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
        let mut own = Vec::from([
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
            (SCENARIO_MARK.to_string(), self.dir.display().to_string()),
        ]);
        if let Some(port) = self.ports.get(actor) {
            own.push(("PORT".to_string(), port.to_string()));
        }
        commands::role_env(self.env.system, role, values, self.env.extra_env, own)
    }

    /// Starts one life of `actor`.
    pub(super) fn spawn(
        &mut self,
        role: &str,
        actor: &str,
        incarnation: u32,
    ) -> Result<(), SystemError> {
        let spec = &self.env.system.file.roles[role];
        let instance = actor
            .rsplit_once('-')
            .and_then(|(r, n)| (r == role).then(|| n.parse().ok()).flatten())
            .unwrap_or(1);
        let mut values = self.values.clone();
        if let Some(port) = self.ports.get(actor) {
            values.insert("port".into(), port.to_string());
        }
        // Its services, through its own proxies.
        for ((a, service), proxy) in &self.proxies {
            if a == actor {
                values.insert(format!("services.{service}.port"), proxy.port().to_string());
            }
        }
        let argv: Vec<String> = spec.command.iter().map(|t| t.expand(&values)).collect();
        let mut env = self.role_env(role, actor, instance, incarnation, &values);
        let token = token().map_err(|e| SystemError::Run(e.into()))?;
        with_token(&mut env, &token);
        let sender = Sender {
            actor: actor.to_string(),
            incarnation,
            revoked: None,
        };
        self.tokens.insert(token, sender);
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
                started: Instant::now(),
                ended: None,
            },
        );
        Ok(())
    }

    /// The token of `actor`'s life `incarnation` is refused from `after` on.
    fn revoke(&mut self, actor: &str, incarnation: u32, after: Duration) {
        let at = Instant::now() + after;
        for sender in self.tokens.values_mut() {
            if sender.actor == actor && sender.incarnation == incarnation {
                sender.revoked.get_or_insert(at);
            }
        }
    }

    pub(super) fn author(actor: &str) -> Author {
        Author::Process(Arc::from(actor))
    }

    /// Kills a life, records its crash, starts its next life.
    pub(super) async fn kill(
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
        later.extend(self.hear_before_end(&kill.actor, kill.incarnation).await?);
        self.record(
            Self::author(&kill.actor),
            kill.incarnation,
            self.env.clock.now(),
            Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: kill.point,
                    announced: Some(kill.announced),
                    ..detail::Crash::default()
                },
            },
        )
        .await?;
        // Its exports are drained: a process it left behind has no say as this life.
        self.revoke(&kill.actor, kill.incarnation, Duration::ZERO);
        self.restart(&role, &kill.actor, kill.incarnation + 1)
            .await?;
        for held in later {
            Box::pin(self.carry_out(held, intake)).await?;
        }
        Ok(())
    }

    /// Carries out the kills an export called for, then answers it.
    pub(super) async fn carry_out(
        &mut self,
        mut held: HeldExport,
        intake: &mut mpsc::Receiver<Intake>,
    ) -> Result<(), SystemError> {
        for kill in std::mem::take(&mut held.kills) {
            self.kill(kill, intake).await?;
        }
        held.answer();
        Ok(())
    }

    pub(super) async fn restart(
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

    /// A life that ended on its own: its crash, and its next life after a back-off.
    pub(super) async fn exited(
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
        let others = self.hear_before_end(&actor, incarnation).await?;
        self.held.extend(others);
        if let Some(life) = self.lives.get_mut(&actor) {
            life.ended = Some(Instant::now());
        }
        self.record(
            Self::author(&actor),
            incarnation,
            self.env.clock.now(),
            Step::Crash {
                about: None,
                crash: detail::Crash {
                    point: CrashSite::Exit,
                    status: Some(status),
                    announced: Some(false),
                    ..detail::Crash::default()
                },
            },
        )
        .await?;
        self.revoke(&actor, incarnation, EXPORTS_AFTER_EXIT);
        eprintln!(
            "recorder: {actor} (life {incarnation}) exited with status {status}; {}",
            self.lives[&actor].child.last_lines()
        );
        let left = self.env.restarts_left.load(Ordering::Relaxed);
        if left == 0 {
            // Waiting for the deadline would not bring it back: the run stops here, saying so.
            return Err(SystemError::Unavailable(format!(
                "{actor} exited with status {status} and is not restarted: the run's \
                 {OWN_EXIT_RESTARTS} restarts of processes that exited on their own are used; {}",
                self.lives[&actor].child.last_lines()
            )));
        }
        self.env.restarts_left.store(left - 1, Ordering::Relaxed);
        let lived = self.lives[&actor].started.elapsed();
        let Some(delay) = self.failures.entry(actor.clone()).or_default().ended(lived) else {
            return Err(SystemError::Unavailable(format!(
                "{actor} cannot run: its last {AT_ONCE_IN_A_ROW} lives each exited within {}s of \
                 starting (status {status}); {}",
                AT_ONCE.as_secs(),
                self.lives[&actor].child.last_lines()
            )));
        };
        Ok(Some((Instant::now() + delay, role, actor, incarnation + 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_joins_the_headers_the_environment_already_sets() {
        let mut env = vec![];
        with_token(&mut env, "ab");
        assert_eq!(
            env,
            [(HEADERS.to_string(), "x-outbox-token=ab".to_string())]
        );
        let mut env = vec![(HEADERS.to_string(), "api-key=1".to_string())];
        with_token(&mut env, "ab");
        assert_eq!(env[0].1, "api-key=1,x-outbox-token=ab");
        let mut env = vec![
            (HEADERS.to_string(), "a=1".to_string()),
            (TRACES_HEADERS.to_string(), "b=2".to_string()),
        ];
        with_token(&mut env, "ab");
        assert_eq!(
            (env[0].1.as_str(), env[1].1.as_str()),
            ("a=1", "b=2,x-outbox-token=ab")
        );
        let (one, two) = (token().unwrap(), token().unwrap());
        assert!(one.len() == 32 && one != two);
    }
}
