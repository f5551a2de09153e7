//! What the observer records at the end of a scenario, read from the services themselves: the
//! creates no API life reported and the effect commits no worker reported, then the ground truth
//! (`observed`).

use std::future::Future;
use std::time::{Duration, Instant};

use outbox_trace::detail::Note;
use outbox_trace::{About, Step};

use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use crate::backend::control::Control;
use crate::journal::author::Author;
use crate::protocol::external::receiver;
use crate::protocol::external::spec::ExternalSpec;
use crate::protocol::ports::BackendError;

/// How long a read of the ground truth is retried: a cluster member restarted moments before may
/// still be electing its leaders.
const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `read` until it succeeds or [`PATIENCE`] has passed.
pub async fn patiently<T, F, Fut>(mut read: F) -> Result<T, BackendError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, BackendError>>,
{
    let began = Instant::now();
    loop {
        match read().await {
            Err(e) if began.elapsed() < PATIENCE => {
                tracing::info!("reading the ground truth: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            done => return done,
        }
    }
}

/// Records, as the observer saw them in the store, the tasks and outbox records the API committed
/// and never reported: an API life killed between a create's commit and its report, when no
/// later life's retry reported it either. Each carries the transaction read back from the store
/// and is marked `detail.seen_in: "store"`.
pub async fn record_unreported_creates<B: Control>(
    env: &ScenarioEnv<'_>,
    control: &B,
    stamp: &Stamp,
) -> Result<(), ScenarioError> {
    env.recorder.sync().await.map_err(drive)?;
    let (accepted, intents) = {
        let tallies = env.tallies.lock().expect("tally lock");
        tallies
            .iter()
            .find(|(s, _)| *s == stamp.scenario)
            .map(|(_, t)| (t.accepted.clone(), t.intents.clone()))
            .unwrap_or_default()
    };
    let (tasks, records) = patiently(|| control.creates()).await?;
    let mut missing: Vec<(i64, u8, Step)> = Vec::new();
    let note = || Note {
        seen_in: Some("store".to_string()),
        why: Some("the creating API died before reporting it".to_string()),
        ..Note::default()
    };
    for task in tasks {
        if accepted.contains(&task.task_id) {
            continue;
        }
        let mut about = About::new(task.event_id, task.task_id);
        about.aggregate_id = task.aggregate_id;
        missing.push((
            task.store_rev,
            0,
            Step::TaskAccepted {
                about,
                store_rev: Some(task.store_rev),
                amount: task.amount,
                note: note(),
            },
        ));
    }
    for intent in records {
        if intents.contains(&intent.event_id) {
            continue;
        }
        let about = About {
            event_id: intent.event_id,
            task_id: (!intent.task_id.is_empty()).then_some(intent.task_id),
            aggregate_id: intent.aggregate_id,
            aggregate_seq: intent.aggregate_seq,
        };
        missing.push((
            intent.store_rev,
            1,
            Step::IntentRecorded {
                about,
                store_rev: Some(intent.store_rev),
                amount: intent.amount,
                note: note(),
            },
        ));
    }
    // In transaction order; within one, the task before its outbox record.
    missing.sort_by_key(|(rev, order, _)| (*rev, *order));
    for (_, _, step) in missing {
        env.recorder
            .record(stamp.entry(Author::Observer, step))
            .await
            .map_err(drive)?;
    }
    Ok(())
}

/// Records, as the observer saw them in the store, the effect commits no worker reported: a worker
/// killed between its commit and its report leaves the commit in the store and not in the trace.
/// Each is read from the dedup key the commit wrote (its revision, the counter after it) and
/// marked `detail.seen_in: "store"`.
pub async fn record_unreported_commits<B: Control>(
    env: &ScenarioEnv<'_>,
    control: &B,
    stamp: &Stamp,
) -> Result<(), ScenarioError> {
    env.recorder.sync().await.map_err(drive)?;
    let reported = {
        let tallies = env.tallies.lock().expect("tally lock");
        tallies
            .iter()
            .find(|(s, _)| *s == stamp.scenario)
            .map(|(_, t)| t.committed.clone())
            .unwrap_or_default()
    };
    let mut missing: Vec<_> = patiently(|| control.commits())
        .await?
        .into_iter()
        .filter(|c| !reported.contains(&(c.store_rev, c.event_id.clone())))
        .collect();
    // One transaction may commit several effects: within it, the counter tells their order.
    missing.sort_by_key(|c| (c.store_rev, c.counter));
    for commit in missing {
        let step = Step::EffectCommitted {
            about: About::new(commit.event_id, commit.task_id),
            store_rev: Some(commit.store_rev),
            amount: Some(commit.amount),
            counter: Some(commit.counter),
            counter_key: None,
            broker_seq: None,
            partition: None,
            note: Note {
                seen_in: Some("store".to_string()),
                why: Some("the committing worker died before reporting it".to_string()),
                ..Note::default()
            },
        };
        env.recorder
            .record(stamp.entry(Author::Observer, step))
            .await
            .map_err(drive)?;
    }
    Ok(())
}

/// Records the ground truth: the backend's own view, plus the external receiver's totals.
pub async fn record_observed<B: Control>(
    env: &ScenarioEnv<'_>,
    control: &B,
    external: Option<&ExternalSpec>,
    stamp: &Stamp,
) -> Result<(), ScenarioError> {
    let mut observed = patiently(|| control.observe()).await?;
    if let Some(external) = external {
        let (payments, keys) = receiver::totals(&external.db).map_err(drive)?;
        observed.external_payments = Some(payments);
        observed.external_keys = Some(keys);
    }
    env.recorder
        .record(stamp.entry(Author::Observer, Step::Observed(observed)))
        .await
        .map_err(drive)
}
