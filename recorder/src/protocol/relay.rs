//! The relay: reads pending outbox records in per-aggregate order, publishes each with its stable
//! `event_id`, and marks it published only after the broker's ACK, guarded by the record's revision.
//!
//! Records go out in batches ([`Timing::relay_batch`](super::Timing)): every publish of a batch is
//! in flight at once, in per-aggregate order on one connection, and the ACKed ones are then marked
//! by one guarded transaction. A batch of one is the step-by-step relay of the lab.
//!
//! A copy whose ACK is lost stays pending and is published again: duplicates are expected and the
//! worker absorbs them. When a publish of an aggregate fails, the rest of that aggregate waits for
//! the next pass, so first publications keep the aggregate's order.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;
use outbox_trace::detail::Note;
use outbox_trace::Step;

use super::ctx::ActorCtx;
use super::model::{because, Intent, Published};
use super::ports::{Broker, Store};
use crate::fault::plan::{CrashPoint, Fault};

/// Records read per pass.
const PASS_LIMIT: usize = 512;

/// Publishes until the recorder says stop.
pub async fn run<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
) -> anyhow::Result<()> {
    let mut attempts: HashMap<String, u32> = HashMap::new();
    let size = ctx.timing.relay_batch.max(1);
    while !ctx.stopping() {
        let pending = store.pending(PASS_LIMIT).await?;
        let mut blocked: HashSet<String> = HashSet::new();
        let mut next = pending.iter();
        loop {
            if ctx.stopping() {
                break;
            }
            let batch: Vec<&Intent> = next
                .by_ref()
                .filter(|i| !blocked.contains(&i.aggregate_id))
                .take(size)
                .collect();
            if batch.is_empty() {
                break;
            }
            blocked.extend(relay_batch(ctx, store, broker, &batch, &mut attempts).await?);
        }
        if pending.is_empty() || !blocked.is_empty() {
            tokio::time::sleep(ctx.timing.relay_idle).await;
        }
    }
    Ok(())
}

/// Publishes a batch and marks the ACKed records. Returns the aggregates of the records whose
/// publish got no ACK.
async fn relay_batch<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
    batch: &[&Intent],
    attempts: &mut HashMap<String, u32>,
) -> anyhow::Result<Vec<String>> {
    let mark_first = !ctx.protocol.publish_then_mark();
    if mark_first {
        mark(ctx, store, batch).await?;
        for intent in batch {
            ctx.crash_point(CrashPoint::RelayBetweenPublishAndMark, Some(intent));
        }
    }
    for intent in batch {
        ctx.crash_point(CrashPoint::RelayBeforePublish, Some(intent));
    }
    let mut sends = Vec::with_capacity(batch.len());
    for &intent in batch {
        let attempt = attempts.entry(intent.event_id.clone()).or_default();
        *attempt += 1;
        let attempt = *attempt;
        ctx.emit(Step::PublishAttempt {
            about: intent.about().loose(),
            attempt: Some(attempt),
            note: Note::default(),
        });
        let lose_ack = ctx.plan.take_lose_publish_ack();
        if lose_ack {
            ctx.fired(Fault::LosePublishAck);
        }
        sends.push((intent, attempt, lose_ack));
    }
    let msg_id = ctx.protocol.broker_msg_id();
    let outcomes = join_all(
        sends
            .iter()
            .map(|&(intent, _, lose_ack)| broker.publish(intent, lose_ack, msg_id)),
    )
    .await;
    let mut acked = Vec::with_capacity(batch.len());
    let mut failed = Vec::new();
    for ((intent, attempt, lose_ack), outcome) in sends.into_iter().zip(outcomes) {
        ctx.emit(outcome_step(intent, attempt, lose_ack, &outcome));
        if matches!(outcome, Published::Acked { .. }) {
            acked.push(intent);
        } else {
            failed.push(intent.aggregate_id.clone());
        }
    }
    if !mark_first && !acked.is_empty() {
        for intent in &acked {
            ctx.crash_point(CrashPoint::RelayBetweenPublishAndMark, Some(intent));
        }
        mark(ctx, store, &acked).await?;
    }
    Ok(failed)
}

/// The step that reports a publish's outcome.
fn outcome_step(intent: &Intent, attempt: u32, lose_ack: bool, outcome: &Published) -> Step {
    let about = intent.about().loose();
    match outcome {
        Published::Acked {
            broker_seq,
            duplicate,
        } => Step::PublishAcked {
            about,
            attempt: Some(attempt),
            broker_seq: Some(*broker_seq),
            partition: None,
            note: Note {
                broker_duplicate: duplicate.then_some(true),
                ..Note::default()
            },
        },
        Published::Unacked { reason } => Step::PublishUnacked {
            about,
            attempt: Some(attempt),
            note: Note {
                fault: lose_ack.then(|| "lose-publish-ack".to_string()),
                ..because(reason.as_str())
            },
        },
        Published::Failed { reason } => Step::PublishFailed {
            about,
            attempt: Some(attempt),
            note: because(reason.as_str()),
        },
    }
}

/// Marks the batch in one guarded transaction and reports each record it marked.
async fn mark<S: Store>(ctx: &mut ActorCtx, store: &S, batch: &[&Intent]) -> anyhow::Result<()> {
    let marked = store.mark_published(batch).await?;
    for (intent, rev) in batch.iter().zip(marked) {
        // `None`: the record changed since it was read (another relay marked it); nothing to report.
        if let Some(rev) = rev {
            ctx.emit(Step::OutboxMarked {
                about: intent.about().loose(),
                store_rev: Some(rev),
                note: Note::default(),
            });
        }
    }
    Ok(())
}
