//! The relay: reads pending outbox records in per-aggregate order, publishes each with its stable
//! `event_id`, and marks it published only after the broker's ACK, guarded by the record's revision.
//!
//! A copy whose ACK is lost stays pending and is published again: duplicates are expected and the
//! worker absorbs them. When a publish of an aggregate fails, the rest of that aggregate waits for
//! the next pass, so first publications keep the aggregate's order.

use std::collections::{HashMap, HashSet};

use outbox_trace::Kind;
use serde_json::json;

use super::{intent_event, Intent, Published};
use crate::actor::ActorCtx;
use crate::backend::{Broker, Store};
use crate::faults::{CrashPoint, Fault};

/// Records read per pass.
const PASS_LIMIT: usize = 512;

/// Publishes until the recorder says stop.
pub async fn run<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
) -> anyhow::Result<()> {
    let mut attempts: HashMap<String, u32> = HashMap::new();
    while !ctx.stopping() {
        let pending = store.pending(PASS_LIMIT).await?;
        let mut blocked: HashSet<String> = HashSet::new();
        for intent in &pending {
            if ctx.stopping() {
                break;
            }
            if blocked.contains(&intent.aggregate_id) {
                continue;
            }
            if !relay_one(ctx, store, broker, intent, &mut attempts).await? {
                blocked.insert(intent.aggregate_id.clone());
            }
        }
        if pending.is_empty() || !blocked.is_empty() {
            tokio::time::sleep(ctx.timing.relay_idle).await;
        }
    }
    Ok(())
}

/// Publishes and marks one record; false when the publish did not get an ACK.
async fn relay_one<S: Store, B: Broker>(
    ctx: &mut ActorCtx,
    store: &S,
    broker: &B,
    intent: &Intent,
    attempts: &mut HashMap<String, u32>,
) -> anyhow::Result<bool> {
    let mark_first = !ctx.protocol.publish_then_mark();
    if mark_first {
        mark(ctx, store, intent).await?;
        ctx.crash_point(CrashPoint::RelayBetweenPublishAndMark, Some(intent));
    }
    ctx.crash_point(CrashPoint::RelayBeforePublish, Some(intent));
    let attempt = attempts.entry(intent.event_id.clone()).or_default();
    *attempt += 1;
    let attempt = *attempt;
    let mut sent = intent_event(Kind::PublishAttempt, intent);
    sent.attempt = Some(attempt);
    ctx.emit(sent);
    let lose_ack = ctx.plan.take_lose_publish_ack();
    if lose_ack {
        ctx.fired(Fault::LosePublishAck);
    }
    let outcome = broker
        .publish(intent, lose_ack, ctx.protocol.broker_msg_id())
        .await;
    let acked = matches!(outcome, Published::Acked { .. });
    let mut event = match outcome {
        Published::Acked {
            broker_seq,
            duplicate,
        } => {
            let mut e = intent_event(Kind::PublishAcked, intent);
            e.broker_seq = Some(broker_seq);
            if duplicate {
                e.detail = Some(json!({ "broker_duplicate": true }).to_string());
            }
            e
        }
        Published::Unacked { reason } => {
            let mut e = intent_event(Kind::PublishUnacked, intent);
            let fault = lose_ack.then_some("lose-publish-ack");
            e.detail = Some(json!({ "reason": reason, "fault": fault }).to_string());
            e
        }
        Published::Failed { reason } => {
            let mut e = intent_event(Kind::PublishFailed, intent);
            e.detail = Some(json!({ "reason": reason }).to_string());
            e
        }
    };
    event.attempt = Some(attempt);
    ctx.emit(event);
    if !acked {
        return Ok(false);
    }
    if !mark_first {
        ctx.crash_point(CrashPoint::RelayBetweenPublishAndMark, Some(intent));
        mark(ctx, store, intent).await?;
    }
    Ok(true)
}

async fn mark<S: Store>(ctx: &mut ActorCtx, store: &S, intent: &Intent) -> anyhow::Result<()> {
    // `None`: the record changed since it was read (another relay marked it); nothing to report.
    if let Some(rev) = store.mark_published(intent).await? {
        let mut marked = intent_event(Kind::OutboxMarked, intent);
        marked.store_rev = Some(rev);
        ctx.emit(marked);
    }
    Ok(())
}
