//! Running one scenario: start the actors, restart the ones that crash, wait until the services are
//! quiet, read the ground truth back, and close the scenario with `run_end`.
//!
//! "Quiet" is read from the services, not guessed from time: the API finished, every actor is alive,
//! no outbox record is pending and the broker has nothing undelivered or unACKed, three checks in a
//! row. A scenario that does not get there before its deadline ends with `recovered: false`.
//!
//! [`cast`](super::cast) keeps the actor processes alive, [`inject`] carries out the chaos plan
//! and [`observer`] reads the ground truth back at the end.

use std::time::{Duration, Instant};

use outbox_trace::detail::{FaultTried, RunEnd, RunStart};
use outbox_trace::{Kind, Step};

use std::sync::{Arc, Mutex};

use super::cast::{Cast, Slot};
use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use super::held::Aim;
use super::scenario::Scenario;
use super::wire::LabWire;
use super::{inject, observer};
use crate::backend::connection::{BackendKind, Connection, Endpoints};
use crate::backend::control::{Backend, Progress};
use crate::backend::endpoints::Endpoint;
use crate::backend::etcd_jetstream::EtcdJetStream;
use crate::backend::services::ServiceKind;
use crate::backend::sqlite_redis::SqliteRedis;
use crate::driver::actor::spec::ActorSpec;
use crate::fault::apply::apply;
use crate::fault::coverage::{why_not, wire_idle, Tally};
use crate::fault::spec::{Nemesis, What};
use crate::fault::trigger::Trigger;
use crate::journal::author::{Author, Role};
use crate::journal::writer::Tallies;
use crate::protocol::external::spec::ExternalSpec;
use crate::protocol::model::{TaskSpec, Timing};

/// How often the driver looks at its actors and the services.
const TICK: Duration = Duration::from_millis(100);
/// How long an actor asked to stop may take before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The same when the run was interrupted (Ctrl-C, SIGTERM, SIGHUP).
const INTERRUPTED_GRACE: Duration = Duration::from_secs(1);
/// Every kind the protocol's actors (and the payments receiver) report, declared in
/// `run_start.detail.records` of a traced run.
const PROTOCOL_KINDS: [Kind; 16] = [
    Kind::TaskAccepted,
    Kind::IntentRecorded,
    Kind::PublishAttempt,
    Kind::PublishAcked,
    Kind::PublishUnacked,
    Kind::PublishFailed,
    Kind::OutboxMarked,
    Kind::Delivered,
    Kind::Redelivered,
    Kind::EffectCommitted,
    Kind::DuplicateSuppressed,
    Kind::CommitConflict,
    Kind::Acked,
    Kind::ExternalRequest,
    Kind::ExternalApplied,
    Kind::ExternalReplayed,
];
/// Consecutive quiet checks that end a scenario.
const QUIET_CHECKS: u32 = 3;

/// Runs one scenario to its `run_end`. Returns whether it recovered.
pub async fn run_scenario(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> Result<bool, ScenarioError> {
    match connection.endpoints.kind() {
        BackendKind::EtcdJetstream => run_on::<EtcdJetStream>(env, scenario, connection).await,
        BackendKind::SqliteRedis => run_on::<SqliteRedis>(env, scenario, connection).await,
    }
}

/// Connects the recorder's own control, then drives the scenario.
async fn run_on<B: Backend>(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> Result<bool, ScenarioError> {
    let control = B::connect(connection, env.timing).await?;
    let name = scenario.name.as_str();
    control.setup().await?;
    let stamp = Stamp {
        clock: env.clock,
        scenario: name.to_string(),
    };
    // The scripted in-actor faults of every role, each as its JSON text, then the `--fault`
    // specs (`run_start.detail.faults`).
    let mut faults = [&scenario.api, &scenario.relay, &scenario.worker]
        .into_iter()
        .flatten()
        .map(serde_json::to_string)
        .collect::<Result<Vec<String>, _>>()
        .map_err(|e| drive(e.into()))?;
    faults.extend(env.faults.iter().map(ToString::to_string));
    let trigger = Trigger::new(env.faults);
    // A wire fault puts every actor behind proxies of its own.
    let lab_wire = if env
        .faults
        .iter()
        .any(|f| matches!(f.what, What::Wire { .. }))
    {
        let mut actors = vec!["api".to_string(), "relay".to_string()];
        actors.extend((1..=scenario.workers).map(|i| match scenario.workers {
            1 => "worker".to_string(),
            _ => format!("worker-{i}"),
        }));
        let wire = LabWire::start(&actors, &connection.endpoints)
            .await
            .map_err(|e| drive(e.into()))?;
        Some(Arc::new(wire))
    } else {
        None
    };
    let aim = (!trigger.is_empty()).then(|| Aim {
        trigger: Arc::new(Mutex::new(trigger)),
        wire: lab_wire.clone(),
    });
    let start = RunStart {
        protocol: Some(env.protocol.name().to_string()),
        ack_wait_ms: Some(env.timing.ack_wait.as_millis() as i64),
        workers: Some(scenario.workers as i64),
        tasks: Some(scenario.tasks.len() as i64),
        counter_start: Some(0.into()),
        faults,
        // `null` when the run has no chaos plan: the key is always there.
        chaos: Some(serde_json::to_value(env.chaos).map_err(|e| drive(e.into()))?),
        // The kinds the protocol's actors report: where one is absent, nothing of it happened.
        records: env.trace.then(|| {
            PROTOCOL_KINDS
                .iter()
                .map(|k| k.as_str().to_string())
                .collect()
        }),
        ..RunStart::default()
    };
    env.recorder
        .record(stamp.entry(Author::Recorder, Step::RunStart(start)))
        .await
        .map_err(drive)?;

    let external = scenario.external.then(|| ExternalSpec {
        addr: format!(
            "127.0.0.1:{}",
            crate::process::port::free_port().unwrap_or(9)
        ),
        db: env.workdir.join(format!(
            "receiver-{}.db",
            outbox_trace::output::path_component(name)
        )),
        slow_ms: 0,
    });
    let spec = |s: &Slot| {
        let mut connection = connection.clone();
        connection.member = s.id.to_string();
        if let Some(wire) = &lab_wire {
            connection.endpoints = wire.endpoints_for(&s.id.to_string(), &connection.endpoints);
        }
        if s.role == Role::Api && scenario.api_broker_down {
            connection.endpoints = with_dead_broker(connection.endpoints);
        }
        ActorSpec {
            role: s.role,
            incarnation: s.incarnation,
            clock: env.clock,
            connection,
            protocol: env.protocol,
            plan: s.plan.clone(),
            timing: Timing {
                fetch_batch: scenario.fetch_batch,
                relay_batch: scenario.relay_batch,
                api_inflight: scenario.api_inflight,
                ..env.timing
            },
            tasks: if s.role == Role::Api {
                unanswered(&scenario.tasks, &env.tallies, name)
            } else {
                Vec::new()
            },
            api_mode: scenario.api_mode,
            api_rate: scenario.api_rate,
            external: external.clone(),
            hold: held_kinds(aim.as_ref(), s),
            trace: env.trace,
        }
    };
    let mut cast = Cast::start(scenario, spec, env.recorder, env.chaos, aim.clone())
        .await
        .map_err(drive)?;

    let started = Instant::now();
    let mut relay_runs_left = scenario.relay_runs.saturating_sub(1);
    let mut last_progress = Instant::now();
    // The timed faults, `--fault` specs and the chaos plan's actions alike, in time order.
    let broker = match connection.endpoints.kind() {
        BackendKind::EtcdJetstream => ServiceKind::Nats,
        BackendKind::SqliteRedis => ServiceKind::Redis,
    };
    let mut timed: Vec<Nemesis> = env
        .faults
        .iter()
        .filter(|f| f.at().is_some())
        .cloned()
        .collect();
    timed.extend(
        env.chaos
            .iter()
            .flat_map(|c| &c.actions)
            .map(|(ms, action)| {
                inject::nemesis_of(*action, Duration::from_millis(*ms), cast.workers(), broker)
            }),
    );
    timed.sort_by_key(|f| f.at());
    let faults_over = timed
        .iter()
        .filter_map(Nemesis::over_at)
        .max()
        .unwrap_or_default();
    let mut chaos = timed.iter().peekable();
    // The named timed faults, each counted when it is carried out.
    let mut named_timed: Vec<Tally> = env
        .faults
        .iter()
        .filter(|f| f.at().is_some())
        .cloned()
        .map(Tally::new)
        .collect();
    let mut acks_before = 0;
    let mut quiet = 0;
    let mut end_reason = "quiet";
    let recovered = loop {
        if env.shutdown.is_cancelled() {
            end_reason = outbox_trace::detail::INTERRUPTED;
            break false;
        }
        if started.elapsed() > env.deadline {
            end_reason = "deadline";
            break false;
        }
        let acks_now = acks(&env.tallies, name);
        while let Some(&fault) = chaos.peek() {
            let at = fault.at().unwrap_or_default();
            let Some(overdue) = started.elapsed().checked_sub(at) else {
                break;
            };
            if !inject::ready(fault, overdue, acks_now > acks_before) {
                break;
            }
            chaos.next();
            if let Some(tally) = named_timed
                .iter_mut()
                .find(|t| t.fired == 0 && t.nemesis == *fault)
            {
                tally.fire(started.elapsed());
            }
            let mut targets = inject::LabTargets {
                env,
                cast: &mut cast,
                stamp: &stamp,
                groups: inject::service_groups(env).await,
                wire: lab_wire.as_deref(),
            };
            apply(&mut targets, fault).await?;
        }
        acks_before = acks_now;
        if let Some(wire) = &lab_wire {
            wire.record(env, &stamp, false).await?;
        }
        let all_alive = cast.tend(&stamp).await.map_err(drive)?;
        let progress = match control.progress().await {
            Ok(p) => p,
            Err(e) => {
                // A service is restarting: not quiet yet.
                tracing::debug!("progress: {e}");
                Progress {
                    outbox_pending: u64::MAX,
                    broker_pending: u64::MAX,
                }
            }
        };
        let chaos_done = chaos.peek().is_none() && started.elapsed() >= faults_over;
        if all_alive
            && cast.api_done()
            && chaos_done
            && progress.outbox_pending == 0
            && progress.broker_pending == 0
        {
            quiet += 1;
            if quiet >= QUIET_CHECKS && relay_runs_left > 0 {
                // Run the relay again from scratch: it must find nothing left to publish.
                relay_runs_left -= 1;
                quiet = 0;
                let mut seen = observer::patiently(|| control.observe()).await?;
                seen.phase = Some(format!(
                    "after relay run {}",
                    scenario.relay_runs - relay_runs_left - 1
                ));
                env.recorder
                    .record(stamp.entry(Author::Observer, Step::Observed(seen)))
                    .await
                    .map_err(drive)?;
                cast.restart(Role::Relay).await.map_err(drive)?;
            } else if quiet >= QUIET_CHECKS {
                break true;
            }
        } else {
            quiet = 0;
        }
        if env.progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            show_progress(name, &env.tallies, started.elapsed());
        }
        tokio::select! {
            _ = tokio::time::sleep(TICK) => {}
            _ = env.shutdown.cancelled() => {}
        }
    };
    if env.progress {
        show_progress(name, &env.tallies, started.elapsed());
        eprintln!();
    }

    // A quiet scenario lets its actors finish what they hold; an interrupted run (even one
    // interrupted as its scenario went quiet) is being waited for by someone at a terminal: what
    // the actors wrote so far is kept either way.
    let grace = if env.shutdown.is_cancelled() {
        INTERRUPTED_GRACE
    } else {
        STOP_GRACE
    };
    cast.stop_all(grace).await.map_err(drive)?;
    if let Some(wire) = &lab_wire {
        wire.record(env, &stamp, true).await?;
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if env.trace {
        observer::record_unreported_creates(env, &control, &stamp).await?;
        observer::record_unreported_commits(env, &control, &stamp).await?;
    }
    observer::record_observed(env, &control, external.as_ref(), &stamp).await?;
    let end = RunEnd {
        recovered: Some(recovered),
        reason: Some(end_reason.to_string()),
        elapsed_ms: Some(elapsed_ms),
        faults: tried(aim.as_ref(), &named_timed, started.elapsed()),
        ..RunEnd::default()
    };
    for fault in end.faults.iter().filter(|f| f.fired == 0) {
        eprintln!(
            "recorder: scenario {name}: fault `{}` never fired: {}",
            fault.spec,
            fault.why.as_deref().unwrap_or("no reason known")
        );
    }
    env.recorder
        .record(stamp.entry(Author::Recorder, Step::RunEnd(end)))
        .await
        .map_err(drive)?;
    Ok(recovered)
}

/// The tasks whose acceptance is not in the trace yet: what a restarted API is asked to create
/// (again, with the same idempotency keys), as clients whose answers never came retry. The
/// tallies must have taken in the previous life's rows (the cast syncs before an API restart).
fn unanswered(tasks: &[TaskSpec], tallies: &Tallies, scenario: &str) -> Vec<TaskSpec> {
    let tallies = tallies.lock().expect("tally lock");
    let Some((_, tally)) = tallies.iter().find(|(s, _)| s == scenario) else {
        return tasks.to_vec();
    };
    tasks
        .iter()
        .filter(|t| !tally.accepted.contains(&t.task_id))
        .cloned()
        .collect()
}

/// The `--fault` specs of a scenario with how often each fired (`run_end.detail.faults`): the
/// step-following ones as the trigger counted them (its count of the target's steps of the kind
/// says why one never fired), then the timed ones. A wire fault fired when it acted on traffic,
/// not when its step or its time came.
fn tried(aim: Option<&Aim>, timed: &[Tally], ran: Duration) -> Vec<FaultTried> {
    let trigger = aim.and_then(|a| a.trigger.lock().ok().map(|t| t.armed().to_vec()));
    let wire = aim.and_then(|a| a.wire.as_deref());
    let step = trigger.unwrap_or_default().into_iter().map(|a| {
        let tally = Tally {
            nemesis: a.nemesis,
            fired: u64::from(a.fired),
            first: a.first,
        };
        on_the_wire(wire, tally, |f| why_not(f, |_, _| u64::from(a.seen), ran))
    });
    let timed = timed
        .iter()
        .map(|t| on_the_wire(wire, t.clone(), |f| why_not(f, |_, _| 0, ran)));
    step.chain(timed).collect()
}

/// The entry of tally `t`, a wire fault's counted only as often as it acted on traffic (with
/// why, when it never did).
fn on_the_wire(
    wire: Option<&LabWire>,
    mut t: Tally,
    why: impl FnOnce(&Nemesis) -> String,
) -> FaultTried {
    let (
        Some(wire),
        What::Wire {
            target,
            service,
            fault,
        },
    ) = (wire, &t.nemesis.what)
    else {
        return t.entry(why);
    };
    let switched_on = t.fired > 0;
    t.fired = t.fired.min(wire.acted(target, service, *fault));
    let idle = (switched_on && t.fired == 0)
        .then(|| wire_idle(target, service, *fault, wire.passed(target, service)))
        .flatten();
    t.entry(|f| idle.unwrap_or_else(|| why(f)))
}

/// The kinds whose reports a slot's next life holds: those its step-following faults follow.
fn held_kinds(aim: Option<&Aim>, slot: &Slot) -> Vec<Kind> {
    aim.and_then(|aim| {
        aim.trigger
            .lock()
            .ok()
            .map(|t| t.held_kinds(&slot.id.to_string(), slot.role.name()))
    })
    .unwrap_or_default()
}

/// One line, rewritten in place: how far the scenario has got.
/// The consumer ACKs recorded so far in scenario `name`.
fn acks(tallies: &Tallies, name: &str) -> u64 {
    let tallies = tallies.lock().expect("tally lock");
    tallies
        .iter()
        .find(|(s, _)| s == name)
        .map_or(0, |(_, t)| t.figures.acks())
}

fn show_progress(name: &str, tallies: &Tallies, elapsed: Duration) {
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

/// The same endpoints with the broker moved to a loopback port nobody listens on.
fn with_dead_broker(endpoints: Endpoints) -> Endpoints {
    let port = crate::process::port::free_port().unwrap_or(9);
    match endpoints {
        Endpoints::EtcdJetstream {
            etcd,
            nats_creds,
            replicas,
            ..
        } => Endpoints::EtcdJetstream {
            etcd,
            nats_creds,
            replicas,
            nats: Endpoint::local(format!("nats://127.0.0.1:{port}")),
        },
        Endpoints::SqliteRedis { db_dir, .. } => Endpoints::SqliteRedis {
            db_dir,
            redis: Endpoint::local(format!("redis://127.0.0.1:{port}")),
        },
    }
}
