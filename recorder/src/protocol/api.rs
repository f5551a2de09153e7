//! The API's create: the task, its idempotency key and its outbox record in one transaction.
//!
//! Creating again with the same idempotency key returns the task created before and writes nothing.
//! A client whose answer never came (the API life died) retries with the same key in the API's next
//! life; the answer names the original transaction, and the API reports the acceptance then, with
//! that transaction's `store_rev`.
//! Requests can overlap ([`Timing::api_inflight`](super::Timing)), as a busy API's do; each task's
//! steps are reported in task order either way.
//! The broken `split-outbox` variant writes the outbox record in a second transaction, so a crash
//! between the two leaves an accepted task that will never be published. The dual-write mode is
//! what the outbox replaces: save the task, then publish it directly.

use futures::StreamExt as _;
use outbox_trace::detail::Note;
use outbox_trace::Step;

use super::ctx::ActorCtx;
use super::model::{because, ApiMode, Created, Intent, Published, TaskSpec};
use super::ports::{Broker, Store};
use crate::fault::plan::CrashPoint;

/// Creates every task, `rate` per second (0: as fast as the store takes them).
pub async fn create_all<B: Store + Broker>(
    ctx: &mut ActorCtx,
    backend: &B,
    tasks: &[TaskSpec],
    mode: ApiMode,
    rate: u32,
) -> anyhow::Result<()> {
    let started = tokio::time::Instant::now();
    let arrive = |i: usize| async move {
        if rate > 0 {
            let due = started + std::time::Duration::from_secs_f64(i as f64 / f64::from(rate));
            tokio::time::sleep_until(due).await;
        }
    };
    let inflight = ctx.timing.api_inflight.max(1);
    if mode == ApiMode::Outbox && ctx.protocol.atomic_intent() && inflight > 1 {
        // One transaction per task, so requests can overlap; their outcomes are taken in order.
        let mut created = futures::stream::iter(tasks.iter().enumerate())
            .map(|(i, task)| async move {
                arrive(i).await;
                (task, backend.create(task, true).await)
            })
            .buffered(inflight);
        while let Some((task, outcome)) = created.next().await {
            accepted_with_intent(ctx, task, outcome?);
            // Asked to stop (the run is interrupted): the requests still out are dropped, as a
            // client that goes away drops them.
            if ctx.stopping() {
                break;
            }
        }
        return Ok(());
    }
    for (i, task) in tasks.iter().enumerate() {
        if ctx.stopping() {
            break;
        }
        arrive(i).await;
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
    let created = backend.create(task, false).await?;
    let Some(commit) = Commit::of(task, &created) else {
        return Ok(());
    };
    let intent = task.intent();
    commit.before_reporting(ctx, &intent);
    ctx.emit(Step::TaskAccepted {
        about: intent.about(),
        store_rev: Some(commit.store_rev),
        amount: Some(intent.amount),
        note: Note::default(),
    });
    if commit.retried {
        // The first life saved it and died; the retry returns the saved task and publishes nothing.
        return Ok(());
    }
    let about = intent.about().loose();
    ctx.emit(Step::PublishAttempt {
        about: about.clone(),
        attempt: Some(1),
        note: Note::default(),
    });
    ctx.emit(match backend.publish(&intent, false, false).await {
        Published::Acked { broker_seq, .. } => Step::PublishAcked {
            about,
            attempt: Some(1),
            broker_seq: Some(broker_seq),
            partition: None,
            note: Note::default(),
        },
        Published::Unacked { reason } => Step::PublishUnacked {
            about,
            attempt: Some(1),
            note: because(reason),
        },
        Published::Failed { reason } => Step::PublishFailed {
            about,
            attempt: Some(1),
            note: because(reason),
        },
    });
    Ok(())
}

/// Creates one task.
pub async fn create<S: Store>(
    ctx: &mut ActorCtx,
    store: &S,
    task: &TaskSpec,
) -> anyhow::Result<()> {
    let atomic = ctx.protocol.atomic_intent();
    let created = store.create(task, atomic).await?;
    if atomic {
        accepted_with_intent(ctx, task, created);
        return Ok(());
    }
    let Some(commit) = Commit::of(task, &created) else {
        // The idempotency key belongs to another task: nothing new happens.
        return Ok(());
    };
    let mut intent = task.intent();
    commit.before_reporting(ctx, &intent);
    ctx.emit(Step::TaskAccepted {
        about: intent.about(),
        store_rev: Some(commit.store_rev),
        amount: Some(intent.amount),
        note: Note::default(),
    });
    if commit.retried {
        // The task was created before: nothing new happens (its outbox record, if the first life
        // wrote it, is in the store; if not, this broken variant has lost it).
        return Ok(());
    }
    ctx.crash_point(CrashPoint::ApiBetweenTaskAndOutbox, Some(&intent));
    let (rev, seq) = store.record_intent(task).await?;
    intent.aggregate_seq = seq;
    ctx.emit(Step::IntentRecorded {
        about: intent.about().loose(),
        store_rev: Some(rev),
        amount: Some(intent.amount),
        note: Note::default(),
    });
    Ok(())
}

/// Reports a task created together with its outbox record.
fn accepted_with_intent(ctx: &mut ActorCtx, task: &TaskSpec, created: Created) {
    let Some(commit) = Commit::of(task, &created) else {
        // Rolled back, or the idempotency key belongs to another task: nothing to report.
        return;
    };
    let Commit {
        store_rev,
        aggregate_seq,
        ..
    } = commit;
    let mut intent = task.intent();
    intent.aggregate_seq = aggregate_seq.unwrap_or_default();
    commit.before_reporting(ctx, &intent);
    let mut about = intent.about();
    about.aggregate_seq = aggregate_seq;
    ctx.emit(Step::TaskAccepted {
        about,
        store_rev: Some(store_rev),
        amount: Some(intent.amount),
        note: Note::default(),
    });
    ctx.crash_point(CrashPoint::ApiBeforeReportingIntent, Some(&intent));
    ctx.emit(Step::IntentRecorded {
        about: intent.about().loose(),
        store_rev: Some(store_rev),
        amount: Some(intent.amount),
        note: Note::default(),
    });
    ctx.crash_point(CrashPoint::ApiBetweenTaskAndOutbox, Some(&intent));
}

/// The transaction a create's answer names for this very task: the one it just committed, or,
/// on a retry with the same idempotency key, the one an earlier life committed and never reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Commit {
    store_rev: i64,
    aggregate_seq: Option<u64>,
    /// The idempotency key was committed before this request.
    retried: bool,
}

impl Commit {
    fn of(task: &TaskSpec, created: &Created) -> Option<Commit> {
        match created {
            Created::Accepted {
                store_rev,
                aggregate_seq,
            } => Some(Commit {
                store_rev: *store_rev,
                aggregate_seq: *aggregate_seq,
                retried: false,
            }),
            Created::Existing {
                task_id,
                store_rev: Some(store_rev),
                aggregate_seq,
            } if *task_id == task.task_id => Some(Commit {
                store_rev: *store_rev,
                aggregate_seq: *aggregate_seq,
                retried: true,
            }),
            _ => None,
        }
    }

    /// Dies here, after the commit and before its report, if that crash is armed (only a fresh
    /// commit: a retry's report is the one that must get through). The crash row names the commit.
    fn before_reporting(self, ctx: &mut ActorCtx, intent: &Intent) {
        if !self.retried {
            ctx.crash_point_after_commit(
                CrashPoint::ApiBeforeReportingCreate,
                intent,
                self.store_rev,
            );
        }
    }
}
