//! The steps of a trace, typed: one variant of [`Step`] per kind, holding the fields that
//! identify a step of that kind (never optional: `event_id`, `task_id` where listed, a required
//! `detail`) and the columns it may carry (optional, among them the ones only some invariants
//! read: `store_rev`, `amount`, `counter`, `attempt`).
//!
//! A step is complete by construction, so the row made from it by [`Step::into_event`] (the one
//! conversion from a step to the flat columns) always passes the reader's checks.
//! [`Step::try_from`] reads a row back and names the required fields it lacks. Steps serialize
//! with serde (`{"effect_committed": {...}}`): that is how an actor reports one.
//!
//! Reading a row keeps the columns its kind's variant holds; any other optional column the row
//! happens to carry is not part of the step. A `detail` that is not a JSON object reads as an
//! empty [`Note`] on a protocol step, and as a missing `detail` where the kind requires one.
//!
//! Both conversions come from one table in `row.rs`, a row per kind: a new kind is a variant
//! here and a row there.

use serde::{Deserialize, Serialize};

use crate::detail::{self, Note};
use crate::CrashSite;

mod about;
mod identity;
mod row;
#[cfg(test)]
mod tests;

pub use about::{About, TaskColumn};
pub use identity::{Identity, MissingFields};

/// One step of the protocol, or one of the recorder's own rows, with the fields of its kind.
///
/// Field names are the contract's column names; `note` is the `detail` of a protocol step
/// (written only when it says something).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// `run_start`: a scenario begins.
    RunStart(detail::RunStart),
    /// `task_accepted`: the task and its idempotency key committed.
    TaskAccepted {
        /// The accepted task and the event its outbox record will publish.
        about: About<String>,
        /// The `store_rev` of the transaction that wrote the task and its idempotency key, where
        /// the store numbers its transactions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_rev: Option<i64>,
        /// What the task's effect will add to the counter.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `intent_recorded`: the outbox record committed.
    IntentRecorded {
        /// The event the outbox record will publish.
        about: About,
        /// The `store_rev` of the transaction that wrote the record; a correct protocol writes it
        /// with the task, so it equals the task's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_rev: Option<i64>,
        /// What the task's effect will add to the counter.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The detail (`seen_in`, `why` when the observer read the record from the store).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_attempt`: the relay sends one copy.
    PublishAttempt {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based), where the relay counts them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_acked`: the broker's ACK reached the relay.
    PublishAcked {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based), where the relay counts them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The copy's position in the broker, where the broker numbers its copies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail (`broker_duplicate`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_unacked`: no ACK came back.
    PublishUnacked {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based), where the relay counts them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The detail (`reason`, `fault`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_failed`: the broker refused or was down.
    PublishFailed {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The detail (`reason`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `outbox_marked`: the outbox record is marked published.
    OutboxMarked {
        /// The event whose outbox record was marked.
        about: About,
        /// The `store_rev` of the transaction that marked the record.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_rev: Option<i64>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `delivered`: the first delivery of a copy.
    Delivered {
        /// The event the copy carries.
        about: About,
        /// The broker's delivery count (1), where the broker counts deliveries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The copy's position in the broker, where the broker numbers its copies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `redelivered`: the broker delivers a copy again.
    Redelivered {
        /// The event the copy carries.
        about: About,
        /// The broker's delivery count (above 1), where the broker counts deliveries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The copy's position in the broker, where the broker numbers its copies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `effect_committed`: dedup key, result, completed task and counter in one transaction.
    EffectCommitted {
        /// The event that caused the effect and the task it completes.
        about: About<String>,
        /// The `store_rev` of the effect's transaction; effects committed in one batch share it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_rev: Option<i64>,
        /// What this effect added to the counter, where the service keeps one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The counter right after this commit, where the service keeps one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter: Option<i64>,
        /// Which counter, for a service with one counter per key; `None` = the run's one counter.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter_key: Option<String>,
        /// The position of the copy that brought it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail (`seen_in: "store"` when the observer read it back).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `duplicate_suppressed`: the dedup key was there; no effect.
    DuplicateSuppressed {
        /// The event whose dedup key was already stored.
        about: About,
        /// The position of the copy suppressed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail (`committed_rev`, `counter_after`, `amount`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `commit_conflict`: the guarded commit lost a revision race and will be retried.
    CommitConflict {
        /// The event whose effect was being committed.
        about: About,
        /// The position of the copy being committed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `acked`: the consumer ACK was sent.
    Acked {
        /// The event the ACKed copy carries.
        about: About,
        /// The position of the copy ACKed, where the broker numbers its copies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
        /// The partition `broker_seq` counts in, where the broker orders per partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `crash`: the actor died at a named point.
    Crash {
        /// The event it was handling, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        about: Option<About>,
        /// Where and how it died.
        crash: detail::Crash,
    },
    /// `restart`: the actor came back (the identity's `incarnation` is the new one).
    Restart,
    /// `fault`: an injected fault on a dependency.
    Fault(detail::Fault),
    /// `external_request`: the worker calls an external receiver.
    ExternalRequest {
        /// The event whose `event_id` is the request's idempotency key.
        about: About,
        /// The call's attempt (1-based).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// The amount the receiver is asked to pay.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The detail (`idempotency_key`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `external_applied`: the receiver performed the external effect.
    ExternalApplied {
        /// The event whose key the receiver acted on.
        about: About,
        /// The amount the receiver paid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `external_replayed`: the receiver answered a repeated key without acting.
    ExternalReplayed {
        /// The event whose key the receiver had already seen.
        about: About,
        /// The amount of the repeated request, not paid again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<i64>,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `observed`: the ground truth read back from the real systems.
    Observed(detail::Observed),
    /// `run_end`: the scenario ended.
    RunEnd(detail::RunEnd),
}

impl Step {
    /// A delivery of a copy: `delivered` when `attempt` (the broker's delivery count) is at most
    /// 1, else `redelivered`.
    pub fn delivery(about: About, attempt: u32, broker_seq: u64) -> Step {
        let note = Note::default();
        if attempt <= 1 {
            Step::Delivered {
                about,
                attempt: Some(attempt),
                broker_seq: Some(broker_seq),
                partition: None,
                note,
            }
        } else {
            Step::Redelivered {
                about,
                attempt: Some(attempt),
                broker_seq: Some(broker_seq),
                partition: None,
                note,
            }
        }
    }

    /// The note of a protocol step (`None` for the recorder's own rows and a crash).
    pub fn note_mut(&mut self) -> Option<&mut Note> {
        match self {
            Step::TaskAccepted { note, .. }
            | Step::IntentRecorded { note, .. }
            | Step::PublishAttempt { note, .. }
            | Step::PublishAcked { note, .. }
            | Step::PublishUnacked { note, .. }
            | Step::PublishFailed { note, .. }
            | Step::OutboxMarked { note, .. }
            | Step::Delivered { note, .. }
            | Step::Redelivered { note, .. }
            | Step::EffectCommitted { note, .. }
            | Step::DuplicateSuppressed { note, .. }
            | Step::CommitConflict { note, .. }
            | Step::Acked { note, .. }
            | Step::ExternalRequest { note, .. }
            | Step::ExternalApplied { note, .. }
            | Step::ExternalReplayed { note, .. } => Some(note),
            Step::RunStart(_)
            | Step::Crash { .. }
            | Step::Restart
            | Step::Fault(_)
            | Step::Observed(_)
            | Step::RunEnd(_) => None,
        }
    }

    /// A crash at the named point, while handling `about` if given.
    pub fn crash(point: impl Into<String>, about: Option<About>) -> Step {
        Step::Crash {
            about,
            crash: detail::Crash {
                point: CrashSite::from(point.into()),
                ..detail::Crash::default()
            },
        }
    }
}
