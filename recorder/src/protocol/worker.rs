//! The worker: a durable consumer that commits dedup key + result + completed task + counter in one
//! guarded transaction, and ACKs only after that commit (or after finding the dedup key).
//!
//! A lost revision race is retried; a present dedup key means a duplicate and no effect. The
//! effect's computation may repeat; its commit may not.

use outbox_trace::Kind;

use super::{intent_event, CommitRules, Committed};
use crate::actor::ActorCtx;
use crate::backend::{Broker, Delivery, Store};
use crate::faults::CrashPoint;

/// Consumes until the recorder says stop.
pub async fn run<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
) -> anyhow::Result<()> {
    while !ctx.stopping() {
        for delivery in broker.fetch().await? {
            handle(ctx, store, broker, &delivery).await?;
        }
    }
    Ok(())
}

async fn handle<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
    delivery: &Delivery<B::Handle>,
) -> anyhow::Result<()> {
    let intent = &delivery.intent;
    let kind = if delivery.count <= 1 {
        Kind::Delivered
    } else {
        Kind::Redelivered
    };
    let mut received = intent_event(kind, intent);
    received.attempt = Some(delivery.count);
    received.broker_seq = Some(delivery.broker_seq);
    ctx.emit(received);

    let commit_first = ctx.protocol.commit_then_ack();
    if !commit_first {
        ack(ctx, broker, delivery).await?;
        ctx.crash_point(CrashPoint::WorkerBetweenCommitAndAck, Some(intent));
    }
    let rules = CommitRules {
        require_new_key: ctx.protocol.checks_dedup(),
        guard_counter: ctx.protocol.guards_counter(),
        dedup_ttl: ctx.protocol.dedup_ttl(),
    };
    loop {
        let read = store.snapshot(&intent.event_id).await?;
        let outcome = if rules.require_new_key && read.dedup_present {
            Committed::Duplicate
        } else {
            if let Some(stall) = ctx.plan.stall_before_commit() {
                tokio::time::sleep(stall).await;
            }
            store.commit(intent, &read, rules).await?
        };
        let mut event = match outcome {
            Committed::Applied { store_rev, counter } => {
                let mut e = intent_event(Kind::EffectCommitted, intent);
                e.store_rev = Some(store_rev);
                e.counter = Some(counter);
                e
            }
            Committed::Duplicate => intent_event(Kind::DuplicateSuppressed, intent),
            Committed::Conflict => intent_event(Kind::CommitConflict, intent),
        };
        event.broker_seq = Some(delivery.broker_seq);
        ctx.emit(event);
        if outcome != Committed::Conflict {
            break;
        }
    }
    if commit_first {
        ctx.crash_point(CrashPoint::WorkerBetweenCommitAndAck, Some(intent));
        ack(ctx, broker, delivery).await?;
    }
    Ok(())
}

async fn ack<B: Broker>(
    ctx: &mut ActorCtx,
    broker: &B,
    delivery: &Delivery<B::Handle>,
) -> anyhow::Result<()> {
    match broker.ack(delivery).await {
        Ok(()) => {
            let mut acked = intent_event(Kind::Acked, &delivery.intent);
            acked.broker_seq = Some(delivery.broker_seq);
            ctx.emit(acked);
        }
        // Not confirmed: the copy will come again after AckWait, and the dedup key absorbs it.
        Err(e) => tracing::warn!("ACK of {} not confirmed: {e}", delivery.intent.event_id),
    }
    Ok(())
}
