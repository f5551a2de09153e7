//! One scenario from fresh services to its end: ports and placeholders, services and setup
//! ([`super::prepare`]), the stage with its proxies and receiver, `run_start`, the roles' first
//! lives and the tasks, the loop ([`super::drive`]), and the end ([`super::ending`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use outbox_trace::detail::{self, CounterValue};
use outbox_trace::otlp::LiveMapper;
use outbox_trace::Step;
use tokio::sync::{mpsc, watch};

use super::drive::{Drive, Parts};
use super::ending::{end, Ending};
use super::kept;
use super::prepare::{closed_early, prepare, role_ports};
use super::service_set::ServiceSet;
use super::shared::{run_err, scenario_dir, ScenarioOutcome, SystemEnv, SystemError, Timeline};
use super::stage::Stage;
use crate::fault::chaos::SystemChaos;
use crate::fault::coverage::Origin;
use crate::fault::ledger::Ledger;
use crate::fault::pauses::Pauses;
use crate::fault::spec::Nemesis;
use crate::fault::trigger::Trigger;
use crate::journal::author::Author;
use crate::process::child::Status;
use crate::system::file::Delivery;
use crate::system::receiver::{Intake, OtlpReceiver};
use crate::system::shape::ShapeLearner;
use crate::system::steps::Reading;
use crate::system::tasks::{make_tasks, Courier};
use crate::system::template::Values;
use crate::wire::heard::Heard;
use crate::wire::{Listener, Proxy, Told};

/// How many facts the proxies may have told and the scenario not yet taken in (a proxy waits
/// past that).
const HEARD_AT_ONCE: usize = 1024;

/// Runs one scenario; `retry_of` names the scenario it tries again, which could not run.
pub async fn run_scenario(
    env: &SystemEnv<'_>,
    name: &str,
    retry_of: Option<&str>,
    faults: &[Nemesis],
    origin: Origin,
) -> Result<ScenarioOutcome, SystemError> {
    let started = Instant::now();
    let timeline = Timeline::new(name, started);
    let deadline = started + env.deadline;
    let dir = scenario_dir(env.workdir, name).map_err(run_err)?;
    std::fs::create_dir_all(dir.join("logs")).map_err(run_err)?;
    let mut services = kept::acquire(env, &dir).map_err(run_err)?;
    let (ports, _reserved) = role_ports(env.system)?;
    // Services, then setup, within the deadline and never past a signal. A run interrupted
    // here still closes its scenario (run_start, then run_end saying why), so the trace keeps
    // what happened.
    let prepared = prepare(env, &mut services, &ports, &dir, deadline, &timeline).await;
    let (values, base) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            kept::release(env, services, false).await;
            return match e {
                SystemError::Interrupted => {
                    let reason = outbox_trace::detail::INTERRUPTED;
                    closed_early(env, name, retry_of, started, reason).await
                }
                e => Err(e),
            };
        }
    };
    timeline.mark("setup done");

    let mut all_faults: Vec<Nemesis> = faults.to_vec();
    all_faults.extend(env.faults.iter().cloned());
    let scene = Scene {
        env,
        name,
        dir: &dir,
        values: &values,
        base: &base,
        faults: &all_faults,
        origin,
    };
    let (mut stage, wiring) = scene.stage(&services, ports).await?;
    let start = scene.run_start(&stage, faults, retry_of);
    stage.own(Author::Recorder, Step::RunStart(start)).await?;

    // A role that cannot start, or no task reaching the roles, makes a scenario that could not
    // run: it ends (no `observed` row) with `run_end` saying why.
    let could_not = start_roles(&mut stage)?;
    let tasks = make_tasks(
        env.tasks,
        env.system.file.tasks.aggregates,
        env.chaos.map_or(0, |c| c.0),
    );
    let courier = scene.courier(deadline, wiring.slot, wiring.answers);
    stage.first_task = Instant::now();
    timeline.mark("roles started, first task sent");
    let delivery = tokio::spawn(courier.deliver(tasks));
    let (mut intake, mut exits) = (wiring.intake, wiring.exits);
    let mut drive = Drive::new(deadline, delivery, could_not);
    let mut parts = Parts {
        stage: &mut stage,
        services: &mut services,
        intake: &mut intake,
        exits: &mut exits,
    };
    drive.run(&mut parts, &timeline).await?;
    timeline.mark_at("last span", stage.last_span);
    timeline.mark_at("last quiet asked", drive.probe_asked);
    timeline.mark("quiet");
    drive.stop();

    end(Ending {
        stage,
        services,
        intake,
        exits,
        started,
        recovered: drive.recovered,
        delivered: drive.delivered.take().unwrap_or_default(),
        could_not: drive.could_not.take(),
    })
    .await
}

/// Starts the first life of every actor; why one could not start, if one could not.
fn start_roles(stage: &mut Stage<'_, '_>) -> Result<Option<String>, SystemError> {
    for (role, actor) in stage.env.system.all_actors() {
        match stage.spawn(&role, &actor, 0) {
            Ok(()) => {}
            Err(SystemError::Unavailable(why)) => return Ok(Some(why)),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// What a scenario is, once its services are ready: what its stage, its `run_start` and its
/// tasks' courier are made of.
struct Scene<'s, 'e> {
    env: &'s SystemEnv<'e>,
    name: &'s str,
    dir: &'s std::path::Path,
    values: &'s Values,
    base: &'s [(String, String)],
    /// Its own faults and the run's (`--fault`).
    faults: &'s [Nemesis],
    origin: Origin,
}

/// Where a stdin role's courier finds the role's current life (its incarnation) and the sender of
/// its answers.
type LifeSlot = watch::Receiver<Option<(u32, mpsc::UnboundedSender<String>)>>;

/// The channels the stage's parts talk over, kept by the scenario's loop.
struct Wiring {
    intake: mpsc::Receiver<Intake>,
    exits: mpsc::UnboundedReceiver<(String, u32, Status)>,
    /// For a stdin role: where the courier finds its current life, and its answers.
    slot: Option<LifeSlot>,
    answers: Option<mpsc::UnboundedReceiver<String>>,
}

impl<'s, 'e> Scene<'s, 'e> {
    /// The stage: a proxy between every process and every service (wire faults), the OTLP
    /// receiver, the timed faults in their order, the chaos plan.
    async fn stage(
        &self,
        services: &ServiceSet,
        ports: BTreeMap<String, u16>,
    ) -> Result<(Stage<'s, 'e>, Wiring), SystemError> {
        let (env, system) = (self.env, self.env.system);
        let (heard_tx, heard) = mpsc::channel::<Told>(HEARD_AT_ONCE);
        let missed = Arc::new(AtomicU64::new(0));
        let mut proxies = BTreeMap::new();
        for (_, actor) in system.all_actors() {
            for (sname, service) in &services.services {
                let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], service.port));
                let wire = system.file.services[sname].wire;
                let listener = system.steps.listens_to(sname).then(|| Listener {
                    to: heard_tx.clone(),
                    actor: actor.clone(),
                    service: sname.clone(),
                    missed: missed.clone(),
                    wants: {
                        let (steps, service) = (system.steps.clone(), sname.clone());
                        Arc::new(move |heard: &Heard| steps.concerns(&service, heard))
                    },
                });
                let proxy = Proxy::start_listening(upstream, wire, listener)
                    .await
                    .map_err(run_err)?;
                proxies.insert((actor.clone(), sname.clone()), proxy);
            }
        }
        drop(heard_tx);
        let (intake_tx, intake) = mpsc::channel::<Intake>(256);
        let receiver = OtlpReceiver::start(intake_tx).map_err(run_err)?;
        let (exits_tx, exits) = mpsc::unbounded_channel();
        let stdin_role = matches!(system.delivery, Delivery::Stdin { .. });
        let (slot_tx, slot_rx) = watch::channel(None);
        let (answers_tx, answers_rx) = mpsc::unbounded_channel();
        // A system reports its timed faults in time order.
        let mut by_time = self.faults.to_vec();
        by_time.sort_by_key(Nemesis::at);
        let stage = Stage {
            env,
            name: self.name.to_string(),
            dir: self.dir.to_path_buf(),
            values: self.values.clone(),
            base_env: self.base.to_vec(),
            receiver,
            lives: BTreeMap::new(),
            ports,
            exits: exits_tx,
            stdin_slot: stdin_role.then_some(slot_tx),
            answers: stdin_role.then_some(answers_tx),
            mapper: LiveMapper::new(),
            trigger: Trigger::new(self.faults),
            chaos: env
                .chaos
                .map(|(seed, _)| SystemChaos::draw(seed, env.tasks, &system.layout())),
            pauses: Pauses::default(),
            last_span: Instant::now(),
            outcome: ScenarioOutcome::default(),
            failures: BTreeMap::new(),
            shape: ShapeLearner::default(),
            first_task: Instant::now(),
            service_faults: Vec::new(),
            ledger: Ledger::new(&by_time, Vec::new()),
            origin: self.origin,
            tokens: HashMap::new(),
            proxies,
            wire_acts: Vec::new(),
            reading: (!system.steps.is_empty()).then(|| Reading::new(system.steps.clone())),
            heard,
            missed,
            held: Vec::new(),
        };
        let wiring = Wiring {
            intake,
            exits,
            slot: stdin_role.then_some(slot_rx),
            answers: stdin_role.then_some(answers_rx),
        };
        Ok((stage, wiring))
    }

    /// `run_start.detail`: named faults as named, a search's as searched.
    fn run_start(
        &self,
        stage: &Stage<'_, '_>,
        own: &[Nemesis],
        retry_of: Option<&str>,
    ) -> detail::RunStart {
        let (env, file) = (self.env, &self.env.system.file);
        let specs = |faults: &[Nemesis]| faults.iter().map(ToString::to_string).collect();
        detail::RunStart {
            tasks: Some(i64::from(env.tasks)),
            records: file.records.clone(),
            counter_start: file
                .counter_start
                .as_ref()
                .and_then(CounterValue::from_json),
            system: Some(env.shown.clone()),
            faults: match self.origin {
                Origin::Named => specs(self.faults),
                Origin::Searched => specs(env.faults),
            },
            searched: match self.origin {
                Origin::Named => Vec::new(),
                Origin::Searched => specs(own),
            },
            chaos: stage
                .chaos
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok()),
            search: env.search.cloned(),
            retry_of: retry_of.map(str::to_string),
            wire_steps: env
                .system
                .steps
                .kinds()
                .iter()
                .map(|k| k.as_str().to_string())
                .collect(),
            ..detail::RunStart::default()
        }
    }

    /// What sends the tasks.
    fn courier(
        &self,
        deadline: Instant,
        stdin: Option<LifeSlot>,
        answers: Option<mpsc::UnboundedReceiver<String>>,
    ) -> Courier {
        let system = self.env.system;
        Courier {
            delivery: system.delivery.clone(),
            values: self.values.clone(),
            env: self.base.to_vec(),
            cwd: system.root.clone(),
            logs: self.dir.join("logs"),
            stdin,
            answers,
            deadline,
            unreachable_for: self.env.first_task_within,
        }
    }
}
