//! The API's create: the task, its idempotency key and its outbox record in one transaction.
//!
//! Creating again with the same idempotency key returns the task created before and writes nothing.
//! The broken `split-outbox` variant writes the outbox record in a second transaction, so a crash
//! between the two leaves an accepted task that will never be published.

use outbox_trace::Kind;

use super::{intent_event, Created, Intent, TaskSpec};
use crate::actor::ActorCtx;
use crate::backend::Store;
use crate::faults::CrashPoint;

/// Creates every task in order.
pub async fn create_all<S: Store>(
    ctx: &mut ActorCtx,
    store: &S,
    tasks: &[TaskSpec],
) -> anyhow::Result<()> {
    for task in tasks {
        create(ctx, store, task).await?;
    }
    Ok(())
}

/// Creates one task.
pub async fn create<S: Store>(
    ctx: &mut ActorCtx,
    store: &S,
    task: &TaskSpec,
) -> anyhow::Result<()> {
    let mut intent = Intent {
        event_id: task.event_id(),
        task_id: task.task_id.clone(),
        aggregate_id: task.aggregate_id.clone(),
        aggregate_seq: 0,
        amount: task.amount,
        revision: 0,
    };
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
