//! The worker: a durable consumer that commits dedup key + result + completed task + counter in one
//! guarded transaction, and ACKs only after that commit (or after finding the dedup key).
//!
//! The deliveries of one fetch are committed together, one transaction for up to
//! [`MAX_COMMIT_BATCH`] distinct events, and ACKed after it. A lost revision race is read again
//! and retried; a present dedup key means a duplicate and no effect. The effect's computation may
//! repeat; its commit may not.
//!
//! Where the scenario has an external receiver, every delivery first calls it with `event_id` as the
//! idempotency key, before the local commit: the receiver's key, not the worker's transaction, is
//! what keeps that effect single.

use std::time::Duration;

use outbox_trace::detail::Note;
use outbox_trace::Step;

use super::ctx::ActorCtx;
use super::model::{CommitRules, Committed, Intent};
use super::ports::{Broker, Delivery, Store, MAX_COMMIT_BATCH};
use crate::fault::plan::CrashPoint;
use crate::protocol::external::client;
use crate::protocol::external::spec::{ExternalSpec, Payment};

/// Consumes until the recorder says stop.
pub async fn run<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
) -> anyhow::Result<()> {
    while !ctx.stopping() {
        let deliveries = broker.fetch().await?;
        if !deliveries.is_empty() {
            handle(ctx, store, broker, &deliveries).await?;
        }
    }
    Ok(())
}

/// Handles one fetch: reports each delivery, commits their effects (as few transactions as the
/// batch allows), then ACKs each.
async fn handle<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
    deliveries: &[Delivery<B::Handle>],
) -> anyhow::Result<()> {
    for delivery in deliveries {
        ctx.emit(Step::delivery(
            delivery.intent.about().loose(),
            delivery.count,
            delivery.broker_seq,
        ));
    }
    let commit_first = ctx.protocol.commit_then_ack();
    if !commit_first {
        for delivery in deliveries {
            ack(ctx, broker, delivery).await?;
            ctx.crash_point(
                CrashPoint::WorkerBetweenCommitAndAck,
                Some(&delivery.intent),
            );
        }
    }
    if let Some(external) = ctx.external.clone() {
        for delivery in deliveries {
            call_external(ctx, &external, &delivery.intent).await?;
        }
    }
    for round in rounds(deliveries) {
        for chunk in round.chunks(MAX_COMMIT_BATCH) {
            commit(ctx, store, chunk).await?;
        }
    }
    if commit_first {
        for delivery in deliveries {
            ctx.crash_point(
                CrashPoint::WorkerBetweenCommitAndAck,
                Some(&delivery.intent),
            );
            ack(ctx, broker, delivery).await?;
        }
    }
    Ok(())
}

/// Splits a fetch into rounds of distinct events, keeping delivery order: a second copy of an
/// event in the same fetch waits for the next round, where it finds the first copy's dedup key.
fn rounds<H>(deliveries: &[Delivery<H>]) -> Vec<Vec<&Delivery<H>>> {
    let mut rounds: Vec<Vec<&Delivery<H>>> = Vec::new();
    for delivery in deliveries {
        let id = &delivery.intent.event_id;
        match rounds
            .iter_mut()
            .find(|r| r.iter().all(|d| &d.intent.event_id != id))
        {
            Some(round) => round.push(delivery),
            None => rounds.push(vec![delivery]),
        }
    }
    rounds
}

/// Commits the effects of distinct events in one guarded transaction; those whose dedup key exists
/// are suppressed, and a lost race is read again and retried.
async fn commit<S: Store, H>(
    ctx: &mut ActorCtx,
    store: &S,
    batch: &[&Delivery<H>],
) -> anyhow::Result<()> {
    let rules = CommitRules {
        require_new_key: ctx.protocol.checks_dedup(),
        guard_counter: ctx.protocol.guards_counter(),
        dedup_ttl: ctx.protocol.dedup_ttl(),
    };
    let mut todo: Vec<&Delivery<H>> = batch.to_vec();
    while !todo.is_empty() {
        let ids: Vec<&str> = todo.iter().map(|d| d.intent.event_id.as_str()).collect();
        let read = store.snapshot(&ids).await?;
        let mut fresh = Vec::with_capacity(todo.len());
        for (delivery, key) in todo.iter().zip(&read.dedup) {
            match key {
                Some(key) if rules.require_new_key => {
                    ctx.emit(suppressed(delivery, key.store_rev, key.counter));
                }
                _ => fresh.push(*delivery),
            }
        }
        if fresh.is_empty() {
            break;
        }
        if let Some(stall) = ctx.plan.stall_before_commit() {
            tokio::time::sleep(stall).await;
        }
        let intents: Vec<&Intent> = fresh.iter().map(|d| &d.intent).collect();
        match store.commit(&intents, &read, rules).await? {
            Committed::Applied {
                store_rev,
                counters,
            } => {
                for (delivery, counter) in fresh.iter().zip(counters) {
                    ctx.crash_point(
                        CrashPoint::WorkerBeforeReportingCommit,
                        Some(&delivery.intent),
                    );
                    ctx.emit(Step::EffectCommitted {
                        about: delivery.intent.about(),
                        store_rev: Some(store_rev),
                        amount: Some(delivery.intent.amount),
                        counter: Some(counter),
                        counter_key: None,
                        broker_seq: Some(delivery.broker_seq),
                        partition: None,
                        note: Note::default(),
                    });
                }
                break;
            }
            Committed::Duplicate(key) => {
                for delivery in &fresh {
                    ctx.emit(suppressed(delivery, key.store_rev, key.counter));
                }
                break;
            }
            Committed::Conflict => {
                for delivery in &fresh {
                    ctx.emit(Step::CommitConflict {
                        about: delivery.intent.about().loose(),
                        broker_seq: Some(delivery.broker_seq),
                        partition: None,
                        note: Note::default(),
                    });
                }
                todo = fresh;
            }
        }
    }
    Ok(())
}

/// A `duplicate_suppressed` step naming the commit that wrote the dedup key.
fn suppressed<H>(
    delivery: &Delivery<H>,
    committed_rev: Option<i64>,
    counter_after: Option<i64>,
) -> Step {
    let intent = &delivery.intent;
    Step::DuplicateSuppressed {
        about: intent.about().loose(),
        broker_seq: Some(delivery.broker_seq),
        partition: None,
        note: Note {
            committed_rev,
            counter_after,
            amount: Some(intent.amount),
            ..Note::default()
        },
    }
}

async fn ack<B: Broker>(
    ctx: &mut ActorCtx,
    broker: &B,
    delivery: &Delivery<B::Handle>,
) -> anyhow::Result<()> {
    match broker.ack(delivery).await {
        Ok(()) => ctx.emit(Step::Acked {
            about: delivery.intent.about().loose(),
            broker_seq: Some(delivery.broker_seq),
            partition: None,
            note: Note::default(),
        }),
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
        ctx.emit(Step::ExternalRequest {
            about: intent.about().loose(),
            attempt: Some(attempt),
            amount: Some(intent.amount),
            note: Note {
                idempotency_key: Some(key.is_some()),
                ..Note::default()
            },
        });
        let answer = match client::send(&external.addr, &payment, key).await {
            Ok(stream) => {
                ctx.crash_point(CrashPoint::WorkerAfterExternalRequest, Some(intent));
                client::receive(stream).await
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
