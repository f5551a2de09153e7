//! The end of a lab scenario: its actors stopped (with a grace to finish what they hold), the
//! wire's last rows, what the observer reads back from the services, and `run_end` with every
//! named or drawn fault and how often it fired, and what the chaos draw armed.

use std::time::Duration;

use outbox_trace::detail::{ChaosArmed, FaultTried, RunEnd};
use outbox_trace::Step;

use super::cast::{Cast, Slot};
use super::drive::{show_progress, Drive};
use super::env::{drive, ScenarioError};
use super::held::Aim;
use super::observer;
use super::prepare::Scene;
use crate::backend::control::Control;
use crate::driver::actor::spec::ActorSpec;
use crate::fault::ledger::Ledger;
use crate::fault::trigger::Armed;
use crate::journal::author::Author;

/// How long an actor asked to stop may take before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// The same when the run was interrupted (Ctrl-C, SIGTERM, SIGHUP).
const INTERRUPTED_GRACE: Duration = Duration::from_secs(1);

/// Closes the scenario whose loop ended as `ended` says with `run_end`. Returns whether it
/// recovered.
pub async fn end<B: Control, F: Fn(&Slot) -> ActorSpec>(
    scene: &Scene<'_, '_>,
    control: &B,
    mut cast: Cast<'_, F>,
    ended: &Drive,
) -> Result<bool, ScenarioError> {
    let (env, stamp, name) = (scene.env, &scene.stamp, scene.name());
    let started = ended.started;
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
    if let Some(wire) = &scene.wire {
        wire.record(env, stamp, true).await?;
    }
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if env.trace {
        observer::record_unreported_creates(env, control, stamp).await?;
        observer::record_unreported_commits(env, control, stamp).await?;
    }
    observer::record_observed(env, control, scene.external.as_ref(), stamp).await?;
    let mut end = RunEnd {
        recovered: Some(ended.recovered),
        reason: Some(ended.end_reason.to_string()),
        elapsed_ms: Some(elapsed_ms),
        faults: tried(scene.aim.as_ref(), &ended.ledger, started.elapsed()),
        ..RunEnd::default()
    };
    end.chaos = armed(scene.aim.as_ref(), &end.faults);
    crate::fault::ledger::tell_faults(name, &end, true, "actors");
    env.recorder
        .record(stamp.entry(Author::Recorder, Step::RunEnd(end)))
        .await
        .map_err(drive)?;
    Ok(ended.recovered)
}

/// The faults of a scenario with how often each fired (`run_end.detail.faults`): the
/// step-following `--fault` specs as the trigger counted them (its count of the target's steps
/// of the kind says why one never fired), then the timed ones, then those the chaos draw armed.
/// A wire fault fired when it acted on traffic, not when its step or its time came.
fn tried(aim: Option<&Aim>, ledger: &Ledger, ran: Duration) -> Vec<FaultTried> {
    let trigger = aim.and_then(|a| a.trigger.lock().ok().map(|t| t.armed().to_vec()));
    let drawn = aim
        .and_then(|a| a.chaos.as_ref())
        .and_then(|c| c.lock().ok().map(|c| c.indexes()));
    let wire = aim.and_then(|a| a.wire.as_deref());
    let seen = |a: &Armed, _: Option<&str>, _| u64::from(a.seen);
    let drawn = drawn.unwrap_or_default();
    ledger.tried(&trigger.unwrap_or_default(), &drawn, seen, wire, ran)
}

/// What the chaos draw armed on the actors' steps, each with how often it fired
/// (`run_end.detail.chaos`): a wire fault as often as `faults` says it acted on traffic.
fn armed(aim: Option<&Aim>, faults: &[FaultTried]) -> Option<ChaosArmed> {
    let aim = aim?;
    // The trigger first, as a held report takes them.
    let trigger = aim.trigger.lock().ok()?;
    let chaos = aim.chaos.as_ref()?.lock().ok()?;
    let mut armed = chaos.report(&trigger);
    for step in &mut armed.armed {
        if let Some(tried) = faults.iter().find(|t| t.spec == step.fault) {
            step.fired = step.fired.min(tried.fired);
        }
    }
    Some(armed)
}
