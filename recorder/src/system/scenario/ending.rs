//! The end of a scenario: the stores read back with every process still up (`observe`), every
//! process stopped while its last exports are taken in, the services stopped (or kept), and
//! `run_end`. A scenario interrupted by a signal, or past its deadline without becoming quiet,
//! stops its processes first and reads the stores back after, so its `observed` row comes after
//! every commit its processes made (its `run_end` says `interrupted`, or `deadline`).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use outbox_trace::detail::{self};
use outbox_trace::Step;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::commands::{run_command, CommandError};
use super::heard::Follow;
use super::kept;
use super::service_set::ServiceSet;
use super::shared::{run_err, ScenarioOutcome, SystemError, Timeline, GRACE};
use super::stage::Stage;
use crate::fault::apply::continue_group;
use crate::fault::coverage::Origin;
use crate::journal::author::Author;
use crate::process::child::Status;
use crate::system::receiver::Intake;
use crate::system::tasks::Delivered;

/// How long `observe` may take once the run was interrupted.
const OBSERVE_AFTER_SIGNAL: Duration = Duration::from_secs(5);

/// What the end of a scenario takes over from its run.
pub(super) struct Ending<'a, 'e> {
    pub stage: Stage<'a, 'e>,
    pub services: ServiceSet,
    pub intake: mpsc::Receiver<Intake>,
    pub exits: mpsc::UnboundedReceiver<(String, u32, Status)>,
    pub started: Instant,
    pub recovered: bool,
    pub delivered: Delivered,
    /// Why the scenario could not run, if it could not.
    pub could_not: Option<String>,
}

/// Reads the stores back, stops everything and writes `run_end`.
pub(super) async fn end(ending: Ending<'_, '_>) -> Result<ScenarioOutcome, SystemError> {
    let Ending {
        mut stage,
        services,
        mut intake,
        exits,
        started,
        recovered,
        delivered,
        could_not,
    } = ending;
    let ran = could_not.is_none();
    let timeline =
        observe_and_stop(&mut stage, &mut intake, exits, started, recovered, ran).await?;
    release_services(&mut stage, services, ran, &timeline).await?;
    let end = run_end(&stage, started, recovered, &delivered, could_not.as_deref());
    let named = stage.origin == Origin::Named;
    crate::fault::ledger::tell_faults(&stage.name, &end, named, "roles");
    stage.outcome.tried = end.faults.clone();
    stage.outcome.shape = end.shape.clone();
    stage.outcome.wire = end.wire.clone();
    stage.own(Author::Recorder, Step::RunEnd(end)).await?;
    stage.outcome.recovered = recovered && ran;
    stage.outcome.first_reached = delivered.first_reached;
    stage.outcome.could_not_run = could_not;
    Ok(stage.outcome)
}

/// Every paused process continued, then the stores read back and every process stopped, in the
/// order the scenario's end calls for; the scenario's timeline from here on.
async fn observe_and_stop(
    stage: &mut Stage<'_, '_>,
    intake: &mut mpsc::Receiver<Intake>,
    exits: mpsc::UnboundedReceiver<(String, u32, Status)>,
    started: Instant,
    recovered: bool,
    ran: bool,
) -> Result<Timeline, SystemError> {
    let env = stage.env;
    for actor in stage.pauses.stopped() {
        if let Some(life) = stage.lives.get(actor) {
            life.child.signal(Signal::SIGCONT);
        }
    }
    let timeline = Timeline::new(&stage.name, started);
    // Everything stops; exits from here on are no crashes.
    drop(exits);
    if !ran {
        // Nothing ran: there is nothing to read back.
        stop_processes(stage, intake).await?;
    } else if env.shutdown.is_cancelled() || !recovered {
        // Interrupted, or past the deadline without becoming quiet: the processes may be in the
        // middle of their work, so they are stopped before the stores are read back; no commit
        // lands after the snapshot.
        stop_processes(stage, intake).await?;
        timeline.mark("processes stopped");
        observe(stage).await?;
        timeline.mark("store read back");
    } else {
        // Quiet: the stores read back with every process still up.
        observe(stage).await?;
        timeline.mark("store read back");
        stop_processes(stage, intake).await?;
        timeline.mark("processes stopped");
    }
    Ok(timeline)
}

/// The services stopped (or kept), what the scenario's processes left behind swept, and the
/// wire faults' proxies finished.
async fn release_services(
    stage: &mut Stage<'_, '_>,
    services: ServiceSet,
    ran: bool,
    timeline: &Timeline,
) -> Result<(), SystemError> {
    // A paused service heeds no SIGTERM until it is continued (nor a kept one a reset).
    for (_, service) in &services.services {
        if let Some(group) = service.group() {
            continue_group(group);
        }
    }
    // The services stop together, each waited for only until it is gone; kept ones stay up.
    kept::release(stage.env, services, ran).await;
    timeline.mark("services stopped or kept");
    // What the scenario's processes left behind (daemons included) goes with them.
    let swept = crate::process::reaper::sweep(Some(&stage.dir.display().to_string())).await;
    // A scenario that could not run says so in one line; what it had started is its own.
    if swept > 0 && ran {
        eprintln!(
            "recorder: scenario {}: stopped {swept} process(es) its processes had left running",
            stage.name
        );
    }
    timeline.mark("swept");
    stage.wire_over(true).await
}

/// The scenario's `run_end`: the delivery, why it ended as it did, what was dropped, the faults
/// tried and drawn, the shape learned and the wire's traffic.
fn run_end(
    stage: &Stage<'_, '_>,
    started: Instant,
    recovered: bool,
    delivered: &Delivered,
    could_not: Option<&str>,
) -> detail::RunEnd {
    let interrupted = stage.env.shutdown.is_cancelled();
    let mut end = detail::RunEnd {
        recovered: Some(recovered),
        elapsed_ms: Some(started.elapsed().as_millis() as u64),
        tasks_sent: Some(delivered.sent),
        tasks_answered: Some(delivered.answered),
        tasks_resent: Some(delivered.resent),
        tasks_unanswered: Some(delivered.unanswered),
        reason: if let Some(why) = could_not {
            Some(format!("{}: {why}", super::shared::COULD_NOT_RUN))
        } else if interrupted {
            Some(outbox_trace::detail::INTERRUPTED.into())
        } else if !recovered {
            Some("deadline".into())
        } else {
            None
        },
        ..detail::RunEnd::default()
    };
    stage.outcome.dropped.fill(&mut end);
    end.faults = stage.tried();
    end.chaos = stage.chaos.as_ref().map(|c| c.report(&stage.trigger));
    // A drawn wire fault fired as its count in `faults` says (when it acted on traffic).
    for armed in end.chaos.iter_mut().flat_map(|c| c.armed.iter_mut()) {
        if let Some(tried) = end.faults.iter().find(|t| t.spec == armed.fault) {
            armed.fired = armed.fired.min(tried.fired);
        }
    }
    end.shape = stage.shape.summary();
    end.wire = stage.wire_traffic();
    end
}

/// Runs `observe` (if the file has one) and writes its `observed` row, or says why there is none.
async fn observe(stage: &mut Stage<'_, '_>) -> Result<(), SystemError> {
    let env = stage.env;
    let system = env.system;
    let Some(observe) = &system.file.observe else {
        return Ok(());
    };
    let argv: Vec<String> = observe
        .command
        .iter()
        .map(|t| t.expand(&stage.values))
        .collect();
    // The stores are read back even after a signal (what was recorded is kept, and the ground
    // truth with it), within a short bound then, and never past a second signal's worth of
    // patience.
    let limit = if env.shutdown.is_cancelled() {
        OBSERVE_AFTER_SIGNAL.min(env.deadline)
    } else {
        env.deadline
    };
    let observed = run_command(
        "observe",
        &argv,
        &stage.base_env,
        &system.root,
        stage.dir.join("logs/observe.log"),
        limit,
        &CancellationToken::new(),
    )
    .await;
    match observed {
        Ok((status, out, last)) => match serde_json::from_str::<serde_json::Value>(out.trim()) {
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
        },
        Err(CommandError::Spawn(e)) => return Err(e.into()),
        Err(e) => stage.outcome.no_observed = Some(e.to_string()),
    }
    Ok(())
}

/// Stops every process of the scenario (SIGTERM, then SIGKILL after [`GRACE`]) while their last
/// exports are taken in and answered, so none waits on one; the wait ends as soon as the last of
/// them is gone.
async fn stop_processes(
    stage: &mut Stage<'_, '_>,
    intake: &mut mpsc::Receiver<Intake>,
) -> Result<(), SystemError> {
    for life in stage.lives.values_mut() {
        life.child.terminate();
    }
    let until = tokio::time::Instant::now() + GRACE;
    let watches: Vec<_> = stage.lives.values().map(|l| l.child.exit_watch()).collect();
    let mut gone = std::pin::pin!(async move {
        for mut watch in watches {
            let _ = watch.wait_for(Option::is_some).await;
        }
    });
    // The loop is over: what the proxies still tell is recorded, followed by no fault.
    loop {
        tokio::select! {
            Some(item) = intake.recv() => stage.take(item).await?.answer(),
            Some(told) = stage.heard.recv() => stage.hear(told, Follow::Nothing).await?.answer(),
            _ = &mut gone => break,
            _ = tokio::time::sleep_until(until) => break,
        }
    }
    for life in stage.lives.values_mut() {
        life.child.kill().await;
    }
    while let Ok(item) = intake.try_recv() {
        stage.take(item).await?.answer();
    }
    stage.stop_hearing().await
}
