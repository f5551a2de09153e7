//! Carrying out one action of a chaos plan and recording it: a SIGKILL of an actor (its `crash`
//! row comes when the cast sees the life end) or a SIGKILL and restart of a service member (a
//! `fault` row naming the member and how long it was down).

use std::time::Instant;

use outbox_trace::{detail, Step};

use super::cast::{Cast, Slot};
use super::{ScenarioEnv, Stamp};
use crate::actor::{ActorSpec, Author, Role};
use crate::chaos::Action;
use crate::services::LocalService;

/// Carries out `action`.
pub async fn inject<F: Fn(&Slot) -> ActorSpec>(
    env: &ScenarioEnv<'_>,
    action: Action,
    cast: &mut Cast<'_, F>,
    stamp: &Stamp,
) -> anyhow::Result<()> {
    match action {
        Action::KillApi => cast.kill(Role::Api, 0),
        Action::KillRelay => cast.kill(Role::Relay, 0),
        Action::KillWorker { index } => cast.kill(Role::Worker, index),
        Action::RestartBroker { member } => restart(env, true, member, stamp).await?,
        Action::RestartStore { member } => restart(env, false, member, stamp).await?,
    }
    Ok(())
}

/// SIGKILLs member `member` (modulo their number) of the local brokers (or stores) and starts it
/// again on its data, if the recorder runs such a service.
async fn restart(
    env: &ScenarioEnv<'_>,
    broker: bool,
    member: usize,
    stamp: &Stamp,
) -> anyhow::Result<()> {
    let began = Instant::now();
    let restarted = tokio::task::block_in_place(|| {
        let mut services = env.services.lock().expect("services lock");
        let mut members: Vec<&mut LocalService> = services
            .iter_mut()
            .filter(|s| s.kind().is_broker() == broker)
            .collect();
        let count = members.len().max(1);
        members
            .get_mut(member % count)
            .map(|s| s.restart().map(|()| (s.kind(), s.name())))
    });
    if let Some(result) = restarted {
        let (kind, name) = result?;
        let fault = detail::Fault {
            fault: if broker {
                "broker-restart"
            } else {
                "store-restart"
            }
            .to_string(),
            service: Some(kind.program().to_string()),
            member: Some(name),
            signal: Some("SIGKILL".to_string()),
            down_ms: Some(began.elapsed().as_millis() as i64),
            ..detail::Fault::default()
        };
        env.recorder
            .record(stamp.entry(Author::Faults, Step::Fault(fault)))
            .await?;
    }
    Ok(())
}
