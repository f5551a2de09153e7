//! The end of a scenario: the stores read back with every process still up (`observe`), every
//! process stopped while its last exports are taken in, the services stopped, and `run_end`.


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

use crate::system::chaos::SystemChaos;
use crate::system::child::{Child, Launch, SpawnError, Status};
use crate::system::file::{Delivery, Export, OtlpProtocol, System};
use crate::fault::pauses::{Pauses, Pending};
use crate::system::receiver::{Answer, Intake, OtlpReceiver};
use crate::system::services::{free_port, Service, ServiceFailure};
use crate::system::tasks::{make_tasks, Courier, Delivered};
use crate::system::template::Values;
use crate::fault::spec::{Nemesis, What};
use crate::fault::trigger::{Reporter, Trigger};
use crate::journal::author::Author;
use crate::journal::clock::RunClock;
use crate::journal::writer::{Entry, Recorder};
use super::commands::{base_env, run_command};
use super::faults::apply_timed;
use super::stage::{Held, Kill, Life, Stage, StdinSlot};
use super::{
    run_err, ScenarioOutcome, SystemEnv, SystemError, DRAIN, GRACE, OWN_EXIT_RESTARTS,
    QUIET_EVERY, SPAN_SILENCE,
};

/// What the end of a scenario takes over from its run.
pub(super) struct Ending<'a, 'e> {
    pub stage: Stage<'a, 'e>,
    pub services: Vec<(String, Service)>,
    pub intake: mpsc::Receiver<Intake>,
    pub exits: mpsc::UnboundedReceiver<(String, u32, Status)>,
    pub started: Instant,
    pub recovered: bool,
    pub delivered: Delivered,
}

/// Reads the stores back, stops everything and writes `run_end`.
pub(super) async fn end(ending: Ending<'_, '_>) -> Result<ScenarioOutcome, SystemError> {
    let Ending {
        mut stage,
        mut services,
        mut intake,
        exits,
        started,
        recovered,
        delivered,
    } = ending;
    let env = stage.env;
    let system = env.system;
    let values = stage.values.clone();
    let base = stage.base_env.clone();
    let dir = stage.dir.clone();
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
