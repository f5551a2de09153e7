//! The worker: a durable consumer that commits dedup key + result + completed task + counter in one
//! guarded transaction, and ACKs only after that commit (or after finding the dedup key).
//!
//! A lost revision race is retried; a present dedup key means a duplicate and no effect. The
//! effect's computation may repeat; its commit may not.
//!
//! Where the scenario has an external receiver, every delivery first calls it with `event_id` as the
//! idempotency key, before the local commit: the receiver's key, not the worker's transaction, is
//! what keeps that effect single.

use std::time::Duration;

use outbox_trace::Kind;
use serde_json::json;

use super::{intent_event, CommitRules, Committed, Intent};
use crate::actor::ActorCtx;
use crate::backend::{Broker, Delivery, Store};
use crate::external::{self, ExternalSpec, Payment};
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
    if let Some(external) = ctx.external.clone() {
        call_external(ctx, &external, intent).await?;
    }
    let rules = CommitRules {
        require_new_key: ctx.protocol.checks_dedup(),
        guard_counter: ctx.protocol.guards_counter(),
        dedup_ttl: ctx.protocol.dedup_ttl(),
    };
    loop {
        let read = store.snapshot(&intent.event_id).await?;
        let outcome = match read.dedup {
            Some(key) if rules.require_new_key => Committed::Duplicate(key),
            _ => {
                if let Some(stall) = ctx.plan.stall_before_commit() {
                    tokio::time::sleep(stall).await;
                }
                store.commit(intent, &read, rules).await?
            }
        };
        let mut event = match outcome {
            Committed::Applied { store_rev, counter } => {
                ctx.crash_point(CrashPoint::WorkerBeforeReportingCommit, Some(intent));
                let mut e = intent_event(Kind::EffectCommitted, intent);
                e.store_rev = Some(store_rev);
                e.counter = Some(counter);
                e
            }
            Committed::Duplicate(key) => {
                let mut e = intent_event(Kind::DuplicateSuppressed, intent);
                e.detail = Some(
                    json!({ "committed_rev": key.store_rev, "counter_after": key.counter, "amount": intent.amount })
                        .to_string(),
                );
                e
            }
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

/// Calls the external receiver until it answers with a result (a `409` "in progress" or a failure
/// is retried after a pause).
async fn call_external(
    ctx: &mut ActorCtx,
    external: &ExternalSpec,
    intent: &Intent,
) -> anyhow::Result<()> {
    let payment = Payment {
        event_id: intent.event_id.clone(),
        task_id: intent.task_id.clone(),
        amount: intent.amount,
    };
    let key = ctx
        .protocol
        .sends_idempotency_key()
        .then_some(intent.event_id.as_str());
    for attempt in 1.. {
        let mut request = intent_event(Kind::ExternalRequest, intent);
        request.attempt = Some(attempt);
        request.detail = Some(json!({ "idempotency_key": key.is_some() }).to_string());
        ctx.emit(request);
        let answer = match external::send(&external.addr, &payment, key).await {
            Ok(stream) => {
                ctx.crash_point(CrashPoint::WorkerAfterExternalRequest, Some(intent));
                external::receive(stream).await
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(a) if a.status == 200 || a.status == 201 => {
                ctx.crash_point(CrashPoint::WorkerAfterExternalAnswer, Some(intent));
                return Ok(());
            }
            Ok(a) => tracing::info!(
                "receiver answered {} for {}: retrying",
                a.status,
                intent.event_id
            ),
            Err(e) => tracing::warn!(
                "receiver call for {} failed: {e:#}; retrying",
                intent.event_id
            ),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    unreachable!("the loop returns")
}
