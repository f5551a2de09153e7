//! The API's create: the task, its idempotency key and its outbox record in one transaction.
//!
//! Creating again with the same idempotency key returns the task created before and writes nothing.
//! The broken `split-outbox` variant writes the outbox record in a second transaction, so a crash
//! between the two leaves an accepted task that will never be published. The dual-write mode is
//! what the outbox replaces: save the task, then publish it directly.

use outbox_trace::Kind;
use serde_json::json;

use super::{intent_event, Created, Published, TaskSpec};
use crate::actor::ActorCtx;
use crate::backend::{Broker, Store};
use crate::faults::CrashPoint;
use crate::scenario::ApiMode;

/// Creates every task in order.
pub async fn create_all<B: Store + Broker>(
    ctx: &mut ActorCtx,
    backend: &B,
    tasks: &[TaskSpec],
    mode: ApiMode,
    rate: u32,
) -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    for (i, task) in tasks.iter().enumerate() {
        if rate > 0 {
            let due = started + std::time::Duration::from_secs_f64(i as f64 / f64::from(rate));
            tokio::time::sleep_until(due).await;
        }
        match mode {
            ApiMode::Outbox => create(ctx, backend, task).await?,
            ApiMode::DualWrite => dual_write(ctx, backend, task).await?,
        }
    }
    Ok(())
}

/// Saves the task without an outbox record, then publishes it straight to the broker. If the
/// publish fails, the saved task is never published by anyone.
pub async fn dual_write<B: Store + Broker>(
    ctx: &mut ActorCtx,
    backend: &B,
    task: &TaskSpec,
) -> anyhow::Result<()> {
    let Created::Accepted { store_rev, .. } = backend.create(task, false).await? else {
        return Ok(());
    };
    let intent = task.intent();
    let mut accepted = intent_event(Kind::TaskAccepted, &intent);
    accepted.store_rev = Some(store_rev);
    ctx.emit(accepted);
    let mut sent = intent_event(Kind::PublishAttempt, &intent);
    sent.attempt = Some(1);
    ctx.emit(sent);
    let mut outcome = match backend.publish(&intent, false, false).await {
        Published::Acked { broker_seq, .. } => {
            let mut e = intent_event(Kind::PublishAcked, &intent);
            e.broker_seq = Some(broker_seq);
            e
        }
        Published::Unacked { reason } => {
            let mut e = intent_event(Kind::PublishUnacked, &intent);
            e.detail = Some(json!({ "reason": reason }).to_string());
            e
        }
        Published::Failed { reason } => {
            let mut e = intent_event(Kind::PublishFailed, &intent);
            e.detail = Some(json!({ "reason": reason }).to_string());
            e
        }
    };
    outcome.attempt = Some(1);
    ctx.emit(outcome);
    Ok(())
}

/// Creates one task.
pub async fn create<S: Store>(
    ctx: &mut ActorCtx,
    store: &S,
    task: &TaskSpec,
) -> anyhow::Result<()> {
    let mut intent = task.intent();
    let atomic = ctx.protocol.atomic_intent();
    let Created::Accepted {
        store_rev,
        aggregate_seq,
    } = store.create(task, atomic).await?
    else {
        // The idempotency key exists: the task was created before; nothing new happens.
        return Ok(());
    };
    let mut accepted = intent_event(Kind::TaskAccepted, &intent);
    accepted.store_rev = Some(store_rev);
    if atomic {
        intent.aggregate_seq = aggregate_seq.unwrap_or_default();
        accepted.aggregate_seq = aggregate_seq;
        ctx.emit(accepted);
        let mut recorded = intent_event(Kind::IntentRecorded, &intent);
        recorded.store_rev = Some(store_rev);
        ctx.emit(recorded);
        ctx.crash_point(CrashPoint::ApiBetweenTaskAndOutbox, Some(&intent));
    } else {
        accepted.aggregate_seq = None;
        ctx.emit(accepted);
        ctx.crash_point(CrashPoint::ApiBetweenTaskAndOutbox, Some(&intent));
        let (rev, seq) = store.record_intent(task).await?;
        intent.aggregate_seq = seq;
        let mut recorded = intent_event(Kind::IntentRecorded, &intent);
        recorded.store_rev = Some(rev);
        ctx.emit(recorded);
    }
    Ok(())
}
