//! One scenario from fresh services to its end: ports and placeholders, services and setup, the
//! roles' first lives, the tasks, and the loop that takes spans in, carries out the faults,
//! restarts what exited and asks `quiet` until the system is quiet or the deadline passes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use outbox_trace::detail::{self, CounterValue};
use outbox_trace::otlp::LiveMapper;
use outbox_trace::Step;
use tokio::sync::{mpsc, watch};

use super::commands::{base_env, run_command, CommandError};
use super::ending::{end, Ending};
use super::faults::SystemTargets;
use super::kept::{self, ServiceSet};
use super::shared::{
    run_err, scenario_dir, ScenarioOutcome, SystemEnv, SystemError, Timeline, QUIET_AT_LEAST,
    QUIET_EVERY, SPAN_SILENCE,
};
use super::stage::Stage;
use crate::fault::apply::{apply, carry_out};
use crate::fault::chaos::SystemChaos;
use crate::fault::coverage::{Origin, Tally};
use crate::fault::pauses::Pauses;
use crate::fault::spec::{Nemesis, When};
use crate::fault::trigger::Trigger;
use crate::journal::author::Author;
use crate::journal::writer::Entry;
use crate::process::port::reserve;
use crate::process::reaper::SCENARIO_MARK;
use crate::system::file::Delivery;
use crate::system::proxy::Proxy;
use crate::system::receiver::{Intake, OtlpReceiver};
use crate::system::shape::ShapeLearner;
use crate::system::tasks::{make_tasks, Courier, Delivered};
use crate::system::template::Values;

/// Runs one scenario; `retry_of` names the scenario it tries again, which could not run.
pub async fn run_scenario(
    env: &SystemEnv<'_>,
    name: &str,
    retry_of: Option<&str>,
    faults: &[Nemesis],
    origin: Origin,
) -> Result<ScenarioOutcome, SystemError> {
    let system = env.system;
    let started = Instant::now();
    let timeline = Timeline::new(name, started);
    let deadline = started + env.deadline;
    let dir = scenario_dir(env.workdir, name).map_err(run_err)?;
    std::fs::create_dir_all(dir.join("logs")).map_err(run_err)?;

    // Ports and placeholder values.
    let mut set = kept::acquire(env, &dir).map_err(run_err)?;
    let mut ports = BTreeMap::new();
    // Held until the scenario ends: no other recorder is handed these ports meanwhile.
    let mut reserved = Vec::new();
    for (role, actor) in system.all_actors() {
        if system.file.roles[&role].port {
            let held = reserve().map_err(run_err)?;
            ports.insert(actor, held.port());
            reserved.push(held);
        }
    }
    // Services, then setup, within the deadline and never past a signal. A run interrupted
    // here still closes its scenario (run_start, then run_end saying why), so the trace keeps
    // what happened.
    let (values, base) = match prepare(env, &mut set, &ports, &dir, deadline, &timeline).await {
        Ok(prepared) => prepared,
        Err(e) => {
            kept::release(env, set, false).await;
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
    let mut services = set;

    // Every process reaches every service through a proxy of its own (wire faults).
    let mut proxies = BTreeMap::new();
    for (_, actor) in system.all_actors() {
        for (sname, service) in &services.services {
            let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], service.port));
            let wire = system.file.services[sname].wire;
            let proxy = Proxy::start(upstream, wire).await.map_err(run_err)?;
            proxies.insert((actor.clone(), sname.clone()), proxy);
        }
    }
    let (intake_tx, mut intake) = mpsc::channel::<Intake>(256);
    let receiver = OtlpReceiver::start(intake_tx).map_err(run_err)?;
    let (exits_tx, mut exits) = mpsc::unbounded_channel();
    let stdin_role = matches!(system.delivery, Delivery::Stdin { .. });
    let (slot_tx, slot_rx) = watch::channel(None);
    let (answers_tx, answers_rx) = mpsc::unbounded_channel();
    let mut all_faults: Vec<Nemesis> = faults.to_vec();
    all_faults.extend(env.faults.iter().cloned());
    let chaos = env
        .chaos
        .map(|(seed, _)| SystemChaos::draw(seed, env.tasks, &system.layout()));
    let mut timed: Vec<Tally> = all_faults
        .iter()
        .filter(|f| f.at().is_some())
        .cloned()
        .map(Tally::new)
        .collect();
    timed.sort_by_key(|t| t.nemesis.at());
    let faults_over = timed
        .iter()
        .filter_map(|t| t.nemesis.over_at())
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
        trigger: Trigger::new(&all_faults),
        chaos,
        pauses: Pauses::default(),
        last_span: Instant::now(),
        outcome: ScenarioOutcome::default(),
        failures: BTreeMap::new(),
        shape: ShapeLearner::default(),
        first_task: Instant::now(),
        service_faults: Vec::new(),
        timed,
        origin,
        tokens: HashMap::new(),
        proxies,
        wire_acts: Vec::new(),
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
        faults: match origin {
            Origin::Named => all_faults.iter().map(ToString::to_string).collect(),
            Origin::Searched => env.faults.iter().map(ToString::to_string).collect(),
        },
        searched: match origin {
            Origin::Named => Vec::new(),
            Origin::Searched => faults.iter().map(ToString::to_string).collect(),
        },
        chaos: stage
            .chaos
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok()),
        search: env.search.cloned(),
        retry_of: retry_of.map(str::to_string),
        ..detail::RunStart::default()
    };
    stage.own(Author::Recorder, Step::RunStart(start)).await?;

    // A role that cannot start, or no task reaching the roles, makes a scenario that could not
    // run: it ends (no `observed` row) with `run_end` saying why.
    let mut could_not = None;
    for (role, actor) in system.all_actors() {
        match stage.spawn(&role, &actor, 0) {
            Ok(()) => {}
            Err(SystemError::Unavailable(why)) => {
                could_not = Some(why);
                break;
            }
            Err(e) => return Err(e),
        }
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
        unreachable_for: env.first_task_within,
    };
    let first_task = Instant::now();
    stage.first_task = first_task;
    timeline.mark("roles started, first task sent");
    let mut delivery = tokio::spawn(courier.deliver(tasks));
    let mut delivered: Option<Delivered> = None;
    let mut timed: VecDeque<usize> = (0..stage.timed.len()).collect();
    // Service pauses a step set off, due after their delay.
    let mut later: Vec<(Instant, Nemesis)> = Vec::new();
    let mut restarts: Vec<(Instant, String, String, u32)> = Vec::new();
    let mut quiet_probe: Option<Instant> = None;
    let mut probe: Option<tokio::task::JoinHandle<Result<bool, CommandError>>> = None;
    let mut probe_asked = Instant::now();
    let mut recovered = false;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        if env.shutdown.is_cancelled() || could_not.is_some() {
            break;
        }
        if Instant::now() > deadline {
            let silent = stage.last_span.elapsed();
            if system.file.quiet.is_some() && silent >= SPAN_SILENCE {
                stage.outcome.quiet_waiting = Some(silent);
            }
            break;
        }
        let now = Instant::now();
        // Timed faults that are due, each counted when its target is there to take it.
        while let Some(&i) = timed.front() {
            let fault = stage.timed[i].nemesis.clone();
            if fault.at().is_none_or(|at| first_task + at > now) {
                break;
            }
            timed.pop_front();
            let present = match (fault.target(), fault.service()) {
                (Some(target), _) => stage.lives.contains_key(target),
                (None, Some(service)) => services
                    .services
                    .iter()
                    .any(|(n, s)| n == service && s.group().is_some()),
                (None, None) => false,
            };
            let mut targets = SystemTargets {
                stage: &mut stage,
                services: &mut services.services,
                intake: &mut intake,
            };
            apply(&mut targets, &fault).await?;
            if present {
                stage.timed[i].fire(first_task.elapsed());
            }
        }
        // Service pauses whose delay after their step has passed.
        for (_, fault) in extract_due(&mut later, now) {
            let mut targets = SystemTargets {
                stage: &mut stage,
                services: &mut services.services,
                intake: &mut intake,
            };
            carry_out(&mut targets, &fault).await?;
        }
        stage.pauses_due(now).await?;
        stage.wire_over(false).await?;
        let due: Vec<_> = restarts.iter().filter(|r| r.0 <= now).cloned().collect();
        restarts.retain(|r| r.0 > now);
        for (_, role, actor, incarnation) in due {
            stage.restart(&role, &actor, incarnation).await?;
        }
        // Quiet: tasks delivered, faults over, nothing waiting to restart.
        let settled = delivered.is_some()
            && timed.is_empty()
            && later.is_empty()
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
                    // At most the time left to the deadline (a hung `quiet` is not quiet).
                    let limit = deadline.saturating_duration_since(now).max(QUIET_AT_LEAST);
                    let shutdown = env.shutdown.clone();
                    probe_asked = now;
                    probe = Some(tokio::spawn(async move {
                        run_command("quiet", &argv, &env_vars, &root, log, limit, &shutdown)
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
                if stage.last_span < first_task {
                    timeline.mark("first span");
                }
                let held = stage.take(item).await?;
                // The services' faults this export set off, before it is answered.
                for fault in std::mem::take(&mut stage.service_faults) {
                    match fault.when {
                        When::After { delay, .. } if !delay.is_zero() => {
                            later.push((Instant::now() + delay, fault));
                        }
                        _ => {
                            let mut targets = SystemTargets {
                                stage: &mut stage,
                                services: &mut services.services,
                                intake: &mut intake,
                            };
                            carry_out(&mut targets, &fault).await?;
                        }
                    }
                }
                stage.carry_out(held, &mut intake).await?;
            }
            Some((actor, incarnation, status)) = exits.recv() => {
                if let Some(r) = stage.exited(actor, incarnation, status).await? {
                    restarts.push(r);
                }
            }
            done = &mut delivery, if delivered.is_none() => {
                match done.map_err(run_err)? {
                    Ok(done) => delivered = Some(done),
                    Err(unreachable) => could_not = Some(unreachable.to_string()),
                }
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
            _ = env.shutdown.cancelled() => {}
        }
    }
    timeline.mark_at("last span", stage.last_span);
    timeline.mark_at("last quiet asked", probe_asked);
    timeline.mark("quiet");
    if delivered.is_none() {
        delivery.abort();
    }
    if let Some(p) = probe {
        p.abort();
    }
    let delivered = delivered.unwrap_or_default();

    end(Ending {
        stage,
        services,
        intake,
        exits,
        started,
        recovered,
        delivered,
        could_not,
    })
    .await
}

/// Takes the entries of `later` that are due at `now`, in their order.
fn extract_due(later: &mut Vec<(Instant, Nemesis)>, now: Instant) -> Vec<(Instant, Nemesis)> {
    let (due, wait) = std::mem::take(later)
        .into_iter()
        .partition(|(at, _)| *at <= now);
    *later = wait;
    due
}

/// Sleeps until `at`, or forever without one (a `select!` branch that never wins).
async fn sleep_until_or_forever(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The scenario's placeholder values: its directory, its services' and its roles' ports.
fn values_of(
    dir: &std::path::Path,
    set: &ServiceSet,
    ports: &BTreeMap<String, u16>,
    env: &SystemEnv<'_>,
) -> Values {
    let mut values = Values::from([("dir".to_string(), dir.display().to_string())]);
    set.placeholders(&mut values);
    for (role, actor) in env.system.all_actors() {
        if let (true, Some(port)) = (actor == role, ports.get(&actor)) {
            values.insert(format!("roles.{role}.port"), port.to_string());
        }
    }
    values
}

/// Makes the services ready (a kept set reset, or renewed if it cannot be; a set not started,
/// started) and runs `setup`, within the deadline and never past a signal. Returns the
/// scenario's placeholder values and the environment every command of it starts from.
async fn prepare(
    env: &SystemEnv<'_>,
    set: &mut ServiceSet,
    ports: &BTreeMap<String, u16>,
    dir: &std::path::Path,
    deadline: Instant,
    timeline: &Timeline,
) -> Result<(Values, Vec<(String, String)>), SystemError> {
    let system = env.system;
    let ready = async {
        loop {
            let values = values_of(dir, set, ports, env);
            let mut base = base_env(system, &values, env.extra_env);
            // What this scenario starts carries its mark: its end sweeps its own strays only.
            base.push((SCENARIO_MARK.to_string(), dir.display().to_string()));
            if kept::reuse(env, set, &values, &base, &dir.join("logs")).await? {
                continue;
            }
            set.start(&values, &base, &system.root).await?;
            return Ok::<_, SystemError>((values, base));
        }
    };
    let (values, base) = tokio::select! {
        ready = ready => ready?,
        _ = env.shutdown.cancelled() => return Err(SystemError::Interrupted),
        _ = tokio::time::sleep_until(deadline.into()) => {
            return Err(SystemError::Unavailable(format!(
                "the services did not get ready within --deadline {}s",
                env.deadline.as_secs_f64()
            )));
        }
    };
    timeline.mark("services ready");
    if let Some(setup) = &system.file.setup {
        let argv: Vec<String> = setup.command.iter().map(|t| t.expand(&values)).collect();
        let (status, _, last) = run_command(
            "setup",
            &argv,
            &base,
            &system.root,
            dir.join("logs/setup.log"),
            deadline.saturating_duration_since(Instant::now()),
            env.shutdown,
        )
        .await?;
        if status != 0 {
            return Err(SystemError::Unavailable(format!(
                "setup exited with status {status}; {last}"
            )));
        }
    }
    Ok((values, base))
}

/// A scenario that ended before its processes started (interrupted, or one that could not
/// run): its `run_start` and a `run_end` that says why.
pub async fn closed_early(
    env: &SystemEnv<'_>,
    name: &str,
    retry_of: Option<&str>,
    started: Instant,
    reason: &str,
) -> Result<ScenarioOutcome, SystemError> {
    let record = |step| {
        env.recorder.record(Entry {
            scenario: name.to_string(),
            author: Author::Recorder,
            incarnation: 0,
            ts_ns: env.clock.now(),
            step,
        })
    };
    let start = detail::RunStart {
        tasks: Some(i64::from(env.tasks)),
        system: Some(env.shown.clone()),
        search: env.search.cloned(),
        retry_of: retry_of.map(str::to_string),
        ..detail::RunStart::default()
    };
    record(Step::RunStart(start))
        .await
        .map_err(SystemError::Run)?;
    let end = detail::RunEnd {
        recovered: Some(false),
        elapsed_ms: Some(started.elapsed().as_millis() as u64),
        reason: Some(reason.into()),
        ..detail::RunEnd::default()
    };
    record(Step::RunEnd(end)).await.map_err(SystemError::Run)?;
    Ok(ScenarioOutcome::default())
}
