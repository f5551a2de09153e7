//! Running one scenario: start the actors, restart the ones that crash, wait until the services are
//! quiet, read the ground truth back, and close the scenario with `run_end`.
//!
//! "Quiet" is read from the services, not guessed from time: the API finished, every actor is alive,
//! no outbox record is pending and the broker has nothing undelivered or unACKed, three checks in a
//! row. A scenario that does not get there before its deadline ends with `recovered: false`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use outbox_trace::{Event, Kind};
use serde_json::json;

use crate::actor::{ActorSpec, Role};
use crate::backend::etcd_jetstream::EtcdJetStream;
use crate::backend::sqlite_redis::SqliteRedis;
use crate::backend::{Backend, BackendKind, Connection, Control, Endpoints, Progress};
use crate::chaos::{Action, ChaosPlan};
use crate::clock::RunClock;
use crate::endpoints::Endpoint;
use crate::external::ExternalSpec;
use crate::faults::{FaultPlan, CRASH_EXIT_CODE};
use crate::journal::{Recorder, Tallies};
use crate::protocol::{Protocol, Timing};
use crate::scenario::Scenario;
use crate::services::{LocalService, ServiceKind};
use crate::supervisor::ActorProcess;

/// How often the driver looks at its actors and the services.
const TICK: Duration = Duration::from_millis(100);
/// Consecutive quiet checks that end a scenario.
const QUIET_CHECKS: u32 = 3;
/// Exits on an error (not a planned crash, not a chaos kill) after which the scenario gives up.
const MAX_ERRORS: u32 = 20;

/// What a scenario run shares with the rest of the run.
pub struct ScenarioEnv<'a> {
    /// The run's clock.
    pub clock: RunClock,
    /// Where events go.
    pub recorder: &'a Recorder,
    /// Which protocol variant.
    pub protocol: Protocol,
    /// Timing knobs (AckWait already adjusted for the variant).
    pub timing: Timing,
    /// How long a scenario may take to become quiet.
    pub deadline: Duration,
    /// Set by Ctrl-C.
    pub interrupted: &'a Arc<AtomicBool>,
    /// The run's own temporary directory (the external receiver keeps its database there).
    pub workdir: &'a std::path::Path,
    /// Live counts, for the progress line.
    pub tallies: Tallies,
    /// Show a live progress line (on a terminal).
    pub progress: bool,
    /// Random faults to inject, if any.
    pub chaos: Option<&'a ChaosPlan>,
    /// Record the actors' steps (false: only the recorder's own rows and crashes).
    pub trace: bool,
    /// The services the recorder started (restarted by the chaos plan).
    pub services: &'a std::sync::Mutex<Vec<LocalService>>,
}

struct Slot {
    role: Role,
    actor: String,
    plan: FaultPlan,
    incarnation: u32,
    errors: u32,
    process: Option<ActorProcess>,
    /// When a life that ended on an error is started again (a short backoff).
    respawn_at: Option<Instant>,
    /// The chaos plan SIGKILLed the current life.
    killed: bool,
    finished: bool,
}

/// Runs one scenario to its `run_end`. Returns whether it recovered.
pub async fn run_scenario(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> anyhow::Result<bool> {
    match connection.endpoints.kind() {
        BackendKind::EtcdJetstream => run_on::<EtcdJetStream>(env, scenario, connection).await,
        BackendKind::SqliteRedis => run_on::<SqliteRedis>(env, scenario, connection).await,
    }
}

async fn run_on<B: Backend>(
    env: &ScenarioEnv<'_>,
    scenario: &Scenario,
    connection: &Connection,
) -> anyhow::Result<bool> {
    let name = scenario.name.as_str();
    let control = B::connect(connection, env.timing).await?;
    control
        .setup()
        .await
        .with_context(|| format!("setting up scenario {name}"))?;
    let own = |kind: Kind, actor: &str, detail: serde_json::Value| {
        let mut event = Event::new(kind);
        event.ts_ns = env.clock.now();
        event.scenario = name.to_string();
        event.actor = actor.to_string();
        event.detail = Some(detail.to_string());
        event
    };
    env.recorder
        .record(own(
            Kind::RunStart,
            "recorder",
            json!({
                "protocol": env.protocol.name(),
                "ack_wait_ms": env.timing.ack_wait.as_millis() as u64,
                "workers": scenario.workers,
                "tasks": scenario.tasks.len(),
                "faults": { "api": scenario.api, "relay": scenario.relay, "worker": scenario.worker },
                "chaos": env.chaos,
                "counter_start": 0,
            }),
        ))
        .await?;

    let mut slots = vec![
        slot(Role::Api, "api".into(), &scenario.api),
        slot(Role::Relay, "relay".into(), &scenario.relay),
    ];
    for i in 1..=scenario.workers {
        let actor = if scenario.workers == 1 {
            "worker".to_string()
        } else {
            format!("worker-{i}")
        };
        slots.push(slot(Role::Worker, actor, &scenario.worker));
    }
    let external = if scenario.external {
        slots.insert(0, slot(Role::Receiver, "receiver".into(), &[]));
        Some(ExternalSpec {
            addr: format!("127.0.0.1:{}", free_port()),
            db: env.workdir.join(format!("receiver-{name}.db")),
            slow_ms: 0,
        })
    } else {
        None
    };
    let spec = |s: &Slot| {
        let mut connection = connection.clone();
        connection.member.clone_from(&s.actor);
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
                scenario.tasks.clone()
            } else {
                Vec::new()
            },
            api_mode: scenario.api_mode,
            api_rate: scenario.api_rate,
            external: external.clone(),
            trace: env.trace,
        }
    };
    for s in &mut slots {
        s.process =
            Some(ActorProcess::spawn(&spec(s), &s.actor, name, env.recorder.clone()).await?);
    }

    let started = Instant::now();
    let mut relay_runs_left = scenario.relay_runs.saturating_sub(1);
    let mut last_progress = Instant::now();
    let mut chaos = env
        .chaos
        .map(|c| c.actions.as_slice())
        .unwrap_or_default()
        .iter()
        .peekable();
    let mut quiet = 0;
    let mut end_reason = "quiet";
    let recovered = loop {
        if env.interrupted.load(Ordering::Relaxed) {
            end_reason = "interrupted";
            break false;
        }
        if started.elapsed() > env.deadline {
            end_reason = "deadline";
            break false;
        }
        while let Some((at, action)) = chaos.peek() {
            if started.elapsed() < Duration::from_millis(*at) {
                break;
            }
            let action = *action;
            chaos.next();
            inject(env, action, &mut slots, &own).await?;
        }
        let mut all_alive = true;
        for s in &mut slots {
            if s.respawn_at.is_some_and(|at| Instant::now() >= at) {
                s.respawn_at = None;
                s.incarnation += 1;
                s.process = Some(
                    ActorProcess::spawn(&spec(s), &s.actor, name, env.recorder.clone()).await?,
                );
            }
            let Some(process) = s.process.as_mut() else {
                all_alive &= s.finished;
                continue;
            };
            let Some(status) = process.try_exit()? else {
                continue;
            };
            let process = s.process.take().expect("present");
            let report = process.collect().await?;
            for fault in &report.fired {
                s.plan.disarm(fault);
            }
            if s.role == Role::Api && status.success() {
                s.finished = true;
                continue;
            }
            all_alive = false;
            let killed = std::mem::take(&mut s.killed);
            if !report.crash_reported {
                let point = if killed { "chaos:sigkill" } else { "exit" };
                let mut crash = own(
                    Kind::Crash,
                    &s.actor,
                    json!({ "point": point, "status": status.to_string() }),
                );
                crash.incarnation = s.incarnation;
                env.recorder.record(crash).await?;
            }
            let planned = killed
                || (status.code() == Some(CRASH_EXIT_CODE)
                    && report.crash_reported
                    && !report.fired.is_empty());
            if planned {
                s.incarnation += 1;
                s.process = Some(
                    ActorProcess::spawn(&spec(s), &s.actor, name, env.recorder.clone()).await?,
                );
                continue;
            }
            // An error (a service went away, say): start again after a short, growing pause.
            s.errors += 1;
            if s.errors > MAX_ERRORS {
                anyhow::bail!(
                    "{} kept failing ({MAX_ERRORS} times) in scenario {name}; see its errors above",
                    s.actor
                );
            }
            s.respawn_at =
                Some(Instant::now() + Duration::from_millis(u64::from(s.errors.min(10)) * 200));
        }
        let api_done = slots.iter().any(|s| s.role == Role::Api && s.finished);
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
        let chaos_done = chaos.peek().is_none();
        if all_alive
            && api_done
            && chaos_done
            && progress.outbox_pending == 0
            && progress.broker_pending == 0
        {
            quiet += 1;
            if quiet >= QUIET_CHECKS && relay_runs_left > 0 {
                // Run the relay again from scratch: it must find nothing left to publish.
                relay_runs_left -= 1;
                quiet = 0;
                let mut seen = control.observe().await?;
                seen["phase"] = json!(format!(
                    "after relay run {}",
                    scenario.relay_runs - relay_runs_left - 1
                ));
                env.recorder
                    .record(own(Kind::Observed, "observer", seen))
                    .await?;
                let s = slots
                    .iter_mut()
                    .find(|s| s.role == Role::Relay)
                    .expect("a relay");
                if let Some(process) = s.process.take() {
                    process.stop(Duration::from_secs(5)).await?;
                }
                s.incarnation += 1;
                s.process = Some(
                    ActorProcess::spawn(&spec(s), &s.actor, name, env.recorder.clone()).await?,
                );
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
        tokio::time::sleep(TICK).await;
    };
    if env.progress {
        show_progress(name, &env.tallies, started.elapsed());
        eprintln!();
    }

    for s in &mut slots {
        if let Some(process) = s.process.take() {
            process.stop(Duration::from_secs(5)).await?;
        }
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if env.trace {
        record_unreported_commits(env, name, &control, &own).await?;
    }
    let mut observed = control.observe().await?;
    if let Some(external) = &external {
        let (payments, keys) = crate::external::totals(&external.db)?;
        observed["external_payments"] = json!(payments);
        observed["external_keys"] = json!(keys);
    }
    env.recorder
        .record(own(Kind::Observed, "observer", observed))
        .await?;
    env.recorder
        .record(own(
            Kind::RunEnd,
            "recorder",
            json!({ "recovered": recovered, "reason": end_reason, "elapsed_ms": elapsed_ms }),
        ))
        .await?;
    Ok(recovered)
}

/// Records, as the observer saw them in the store, the effect commits no worker reported: a worker
/// killed between its commit and its report leaves the commit in the store and not in the trace.
/// Each is read from the dedup key the commit wrote (its revision, the counter after it) and
/// marked `detail.seen_in: "store"`.
async fn record_unreported_commits<B: Control, F>(
    env: &ScenarioEnv<'_>,
    scenario: &str,
    control: &B,
    own: &F,
) -> anyhow::Result<()>
where
    F: Fn(Kind, &str, serde_json::Value) -> Event,
{
    env.recorder.sync().await?;
    let reported = {
        let tallies = env.tallies.lock().expect("tally lock");
        tallies
            .iter()
            .find(|(s, _)| s == scenario)
            .map(|(_, t)| t.committed.clone())
            .unwrap_or_default()
    };
    let mut missing: Vec<_> = control
        .commits()
        .await?
        .into_iter()
        .filter(|c| !reported.contains(&(c.store_rev, c.event_id.clone())))
        .collect();
    // One transaction may commit several effects: within it, the counter tells their order.
    missing.sort_by_key(|c| (c.store_rev, c.counter));
    for commit in missing {
        let mut event = own(
            Kind::EffectCommitted,
            "observer",
            json!({ "seen_in": "store", "why": "the committing worker died before reporting it" }),
        );
        event.event_id = Some(commit.event_id);
        event.task_id = Some(commit.task_id);
        event.amount = Some(commit.amount);
        event.store_rev = Some(commit.store_rev);
        event.counter = Some(commit.counter);
        env.recorder.record(event).await?;
    }
    Ok(())
}

/// Carries out one chaos action and records it.
async fn inject<F>(
    env: &ScenarioEnv<'_>,
    action: Action,
    slots: &mut [Slot],
    own: &F,
) -> anyhow::Result<()>
where
    F: Fn(Kind, &str, serde_json::Value) -> Event,
{
    let target = match action {
        Action::KillApi => slots.iter_mut().find(|s| s.role == Role::Api),
        Action::KillRelay => slots.iter_mut().find(|s| s.role == Role::Relay),
        Action::KillWorker { index } => {
            let workers = slots
                .iter()
                .filter(|s| s.role == Role::Worker)
                .count()
                .max(1);
            slots
                .iter_mut()
                .filter(|s| s.role == Role::Worker)
                .nth(index % workers)
        }
        Action::RestartBroker { member } | Action::RestartStore { member } => {
            let kind = if matches!(action, Action::RestartBroker { .. }) {
                ServiceKind::Nats
            } else {
                ServiceKind::Etcd
            };
            let began = Instant::now();
            let restarted = tokio::task::block_in_place(|| {
                let mut services = env.services.lock().expect("services lock");
                let mut members: Vec<&mut LocalService> =
                    services.iter_mut().filter(|s| s.kind() == kind).collect();
                let count = members.len().max(1);
                members
                    .get_mut(member % count)
                    .map(|s| s.restart().map(|()| s.name()))
            });
            if let Some(result) = restarted {
                let name = result?;
                let detail = json!({
                    "fault": if kind == ServiceKind::Nats { "broker-restart" } else { "store-restart" },
                    "service": kind.program(),
                    "member": name,
                    "signal": "SIGKILL",
                    "down_ms": began.elapsed().as_millis() as u64,
                });
                env.recorder
                    .record(own(Kind::Fault, "faults", detail))
                    .await?;
            }
            return Ok(());
        }
    };
    if let Some(slot) = target {
        if let Some(process) = slot.process.as_mut() {
            slot.killed = true;
            process.kill_now();
        }
    }
    Ok(())
}

/// One line, rewritten in place: how far the scenario has got.
fn show_progress(name: &str, tallies: &Tallies, elapsed: Duration) {
    use outbox_trace::Kind::*;
    let tallies = tallies.lock().expect("tally lock");
    let Some((_, t)) = tallies.iter().find(|(s, _)| s == name) else {
        return;
    };
    eprint!(
        "\r  {name}: accepted {}  published {}  committed {}  acked {}  crashes {}  ({:.1} s)   ",
        t.count(TaskAccepted),
        t.count(PublishAcked),
        t.count(EffectCommitted),
        t.count(Acked),
        t.count(Crash),
        elapsed.as_secs_f64()
    );
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9)
}

/// The same endpoints with the broker moved to a loopback port nobody listens on.
fn with_dead_broker(endpoints: Endpoints) -> Endpoints {
    let port = free_port();
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

fn slot(role: Role, actor: String, faults: &[crate::faults::Fault]) -> Slot {
    Slot {
        role,
        actor,
        plan: FaultPlan::new(faults.to_vec()),
        incarnation: 0,
        errors: 0,
        process: None,
        respawn_at: None,
        killed: false,
        finished: false,
    }
}
