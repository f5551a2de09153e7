//! Carrying out one action of a chaos plan and recording it: a SIGKILL of an actor (its `crash`
//! row comes when the cast sees the life end) or a SIGKILL and restart of a service member (a
//! `fault` row naming the member and how long it was down), a broker's right after consumer ACKs.

use std::time::{Duration, Instant};

use outbox_trace::{detail, Step};

use super::cast::{Cast, Slot};
use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use crate::actor::wire::ActorSpec;
use crate::backend::services::LocalService;
use crate::fault::chaos::Action;
use crate::journal::author::{Author, Role};

/// How long a broker restart waits for a tick in which consumer ACKs came.
const ACK_BURST_WAIT: Duration = Duration::from_secs(1);

/// Whether `action`, due `overdue` ago, goes now. A broker restart waits (up to
/// [`ACK_BURST_WAIT`]) until consumer ACKs came since the last tick (`acks_moved`): an ACK the
/// broker confirmed a moment before a SIGKILL is the one it may not have made durable.
pub fn ready(action: Action, overdue: Duration, acks_moved: bool) -> bool {
    match action {
        Action::RestartBroker { .. } => acks_moved || overdue >= ACK_BURST_WAIT,
        _ => true,
    }
}

/// Carries out `action`.
pub async fn inject<F: Fn(&Slot) -> ActorSpec>(
    env: &ScenarioEnv<'_>,
    action: Action,
    cast: &mut Cast<'_, F>,
    stamp: &Stamp,
) -> Result<(), ScenarioError> {
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
) -> Result<(), ScenarioError> {
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
            .into(),
            service: Some(kind.program().to_string()),
            member: Some(name),
            signal: Some("SIGKILL".to_string()),
            down_ms: Some(began.elapsed().as_millis() as i64),
            ..detail::Fault::default()
        };
        env.recorder
            .record(stamp.entry(Author::Faults, Step::Fault(fault)))
            .await
            .map_err(drive)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_restart_waits_for_acks_up_to_a_second_and_other_actions_never_wait() {
        let broker = Action::RestartBroker { member: 0 };
        let now = Duration::ZERO;
        assert!(!ready(broker, now, false));
        assert!(ready(broker, now, true));
        assert!(ready(broker, ACK_BURST_WAIT, false));
        assert!(ready(Action::KillRelay, now, false));
        assert!(ready(Action::RestartStore { member: 0 }, now, false));
    }
}
