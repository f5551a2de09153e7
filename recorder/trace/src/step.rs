//! The steps of a trace, typed: one variant of [`Step`] per kind, holding exactly the fields the
//! contract requires of that kind (never optional) and the optional columns it may carry.
//!
//! A step is complete by construction, so the row made from it by [`Step::into_event`] (the one
//! conversion from a step to the flat columns) always passes the reader's checks.
//! [`Step::try_from`] reads a row back and names the required fields it lacks. Steps serialize
//! with serde (`{"effect_committed": {...}}`): that is how an actor reports one.
//!
//! Reading a row keeps the columns its kind's variant holds; any other optional column the row
//! happens to carry is not part of the step. A `detail` that is not a JSON object reads as an
//! empty [`Note`] on a protocol step, and as a missing `detail` where the kind requires one.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::detail::{self, Detail, Note};
use crate::{Event, Field, Kind};

/// How a step holds its `task_id`: `String` where the kind requires one, `Option<String>` where
/// it may be absent.
pub trait TaskColumn: Sized {
    /// The value written to the `task_id` column; `None` leaves it null.
    fn into_column(self) -> Option<String>;
    /// From the column's value; `None` when this holder requires it and it is absent.
    fn from_column(column: Option<String>) -> Option<Self>;
}

impl TaskColumn for String {
    fn into_column(self) -> Option<String> {
        Some(self)
    }
    fn from_column(column: Option<String>) -> Option<Self> {
        column
    }
}

impl TaskColumn for Option<String> {
    fn into_column(self) -> Option<String> {
        self
    }
    fn from_column(column: Option<String>) -> Option<Self> {
        Some(column)
    }
}

/// Which event a step is about: the event's stable id, its task, and its place in its aggregate.
/// `T` is `String` on the kinds that require a `task_id`, `Option<String>` on the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct About<T = Option<String>> {
    /// `event_id`: the event's stable id, the same on every copy and delivery of it.
    pub event_id: String,
    /// `task_id`: the task the event belongs to, required or not as `T` says.
    pub task_id: T,
    /// `aggregate_id`: the ordering group, when the producer has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_id: Option<String>,
    /// `aggregate_seq`: the event's position in its aggregate, assigned when its record commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_seq: Option<u64>,
}

impl<T> About<T> {
    /// About the event `event_id` of task `task_id`, outside any aggregate.
    pub fn new(event_id: impl Into<String>, task_id: T) -> Self {
        About {
            event_id: event_id.into(),
            task_id,
            aggregate_id: None,
            aggregate_seq: None,
        }
    }
}

impl About<String> {
    /// The same, on a kind whose `task_id` may be absent.
    pub fn loose(self) -> About {
        self.into()
    }
}

impl From<About<String>> for About {
    fn from(a: About<String>) -> Self {
        About {
            event_id: a.event_id,
            task_id: Some(a.task_id),
            aggregate_id: a.aggregate_id,
            aggregate_seq: a.aggregate_seq,
        }
    }
}

impl<T: TaskColumn> About<T> {
    fn write(self, e: &mut Event) {
        e.event_id = Some(self.event_id);
        e.task_id = self.task_id.into_column();
        e.aggregate_id = self.aggregate_id;
        e.aggregate_seq = self.aggregate_seq;
    }

    fn read(e: &Event) -> Option<Self> {
        Some(About {
            event_id: e.event_id.clone()?,
            task_id: T::from_column(e.task_id.clone())?,
            aggregate_id: e.aggregate_id.clone(),
            aggregate_seq: e.aggregate_seq,
        })
    }
}

/// The columns every row has besides its kind's: who recorded it, in which run and scenario, and
/// when.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// `run_id`: the recording the row belongs to; `seq` is unique within it.
    pub run_id: String,
    /// `scenario`: the invariants are checked per `(run_id, scenario)`.
    pub scenario: String,
    /// `seq`: the order in which the recorder received the row, strictly increasing within the run.
    pub seq: u64,
    /// `ts_ns`: nanoseconds since the run started, on a monotonic clock shared by all actors.
    pub ts_ns: i64,
    /// `backend`: the producer's name, such as `etcd-jetstream` or `sqlite-redis`.
    pub backend: String,
    /// `actor`: who recorded the row (`api`, `relay`, `worker`, `observer`, ...), maybe suffixed.
    pub actor: String,
    /// `incarnation`: the actor's life, 0 at first and one more after each crash and restart.
    pub incarnation: u32,
}

impl Identity {
    /// The identity columns of a row.
    pub fn of(e: &Event) -> Identity {
        Identity {
            run_id: e.run_id.clone(),
            scenario: e.scenario.clone(),
            seq: e.seq,
            ts_ns: e.ts_ns,
            backend: e.backend.clone(),
            actor: e.actor.clone(),
            incarnation: e.incarnation,
        }
    }
}

/// A row that lacks fields its kind requires, so it is no [`Step`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct MissingFields {
    /// The kind of the rejected row, which decides the fields it needed.
    pub kind: Kind,
    /// The required fields it lacks (`detail` also when it is not a JSON object).
    pub fields: Vec<Field>,
}

impl fmt::Display for MissingFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.fields.iter().map(|f| f.column()).collect();
        write!(f, "a `{}` row lacks {}", self.kind, names.join(", "))
    }
}

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
        /// The `store_rev` of the transaction that wrote the task and its idempotency key.
        store_rev: i64,
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
        store_rev: i64,
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
        /// The publish attempt (1-based).
        attempt: u32,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_acked`: the broker's ACK reached the relay.
    PublishAcked {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based).
        attempt: u32,
        /// The copy's position in the broker.
        broker_seq: u64,
        /// The detail (`broker_duplicate`).
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `publish_unacked`: no ACK came back.
    PublishUnacked {
        /// The event the copy carries.
        about: About,
        /// The publish attempt (1-based).
        attempt: u32,
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
        store_rev: i64,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `delivered`: the first delivery of a copy.
    Delivered {
        /// The event the copy carries.
        about: About,
        /// The broker's delivery count (1).
        attempt: u32,
        /// The copy's position in the broker.
        broker_seq: u64,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `redelivered`: the broker delivers a copy again.
    Redelivered {
        /// The event the copy carries.
        about: About,
        /// The broker's delivery count (above 1).
        attempt: u32,
        /// The copy's position in the broker.
        broker_seq: u64,
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `effect_committed`: dedup key, result, completed task and counter in one transaction.
    EffectCommitted {
        /// The event that caused the effect and the task it completes.
        about: About<String>,
        /// The `store_rev` of the effect's transaction; effects committed in one batch share it.
        store_rev: i64,
        /// What this effect added to the counter.
        amount: i64,
        /// The counter right after this commit.
        counter: i64,
        /// Which counter, for a service with one counter per key; `None` = the run's one counter.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        counter_key: Option<String>,
        /// The position of the copy that brought it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_seq: Option<u64>,
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
        /// The detail; a row whose note is empty carries no `detail`.
        #[serde(default, skip_serializing_if = "Note::is_empty")]
        note: Note,
    },
    /// `acked`: the consumer ACK was sent.
    Acked {
        /// The event the ACKed copy carries.
        about: About,
        /// The position of the copy ACKed.
        broker_seq: u64,
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
        attempt: u32,
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
    /// The `kind` of the row this step becomes.
    pub fn kind(&self) -> Kind {
        match self {
            Step::RunStart(_) => Kind::RunStart,
            Step::TaskAccepted { .. } => Kind::TaskAccepted,
            Step::IntentRecorded { .. } => Kind::IntentRecorded,
            Step::PublishAttempt { .. } => Kind::PublishAttempt,
            Step::PublishAcked { .. } => Kind::PublishAcked,
            Step::PublishUnacked { .. } => Kind::PublishUnacked,
            Step::PublishFailed { .. } => Kind::PublishFailed,
            Step::OutboxMarked { .. } => Kind::OutboxMarked,
            Step::Delivered { .. } => Kind::Delivered,
            Step::Redelivered { .. } => Kind::Redelivered,
            Step::EffectCommitted { .. } => Kind::EffectCommitted,
            Step::DuplicateSuppressed { .. } => Kind::DuplicateSuppressed,
            Step::CommitConflict { .. } => Kind::CommitConflict,
            Step::Acked { .. } => Kind::Acked,
            Step::Crash { .. } => Kind::Crash,
            Step::Restart => Kind::Restart,
            Step::Fault(_) => Kind::Fault,
            Step::ExternalRequest { .. } => Kind::ExternalRequest,
            Step::ExternalApplied { .. } => Kind::ExternalApplied,
            Step::ExternalReplayed { .. } => Kind::ExternalReplayed,
            Step::Observed(_) => Kind::Observed,
            Step::RunEnd(_) => Kind::RunEnd,
        }
    }

    /// A delivery of a copy: `delivered` when `attempt` (the broker's delivery count) is at most
    /// 1, else `redelivered`.
    pub fn delivery(about: About, attempt: u32, broker_seq: u64) -> Step {
        let note = Note::default();
        if attempt <= 1 {
            Step::Delivered {
                about,
                attempt,
                broker_seq,
                note,
            }
        } else {
            Step::Redelivered {
                about,
                attempt,
                broker_seq,
                note,
            }
        }
    }

    /// A crash at the named point, while handling `about` if given.
    pub fn crash(point: impl Into<String>, about: Option<About>) -> Step {
        Step::Crash {
            about,
            crash: detail::Crash {
                point: point.into(),
                ..detail::Crash::default()
            },
        }
    }

    /// The row of this step, with `identity`'s columns: the one conversion from a step to the
    /// flat columns.
    pub fn into_event(self, identity: Identity) -> Event {
        let mut e = Event::new(self.kind());
        e.run_id = identity.run_id;
        e.scenario = identity.scenario;
        e.seq = identity.seq;
        e.ts_ns = identity.ts_ns;
        e.backend = identity.backend;
        e.actor = identity.actor;
        e.incarnation = identity.incarnation;
        let note = |n: Note| (!n.is_empty()).then(|| text(&n));
        match self {
            Step::RunStart(d) => e.detail = Some(text(&d)),
            Step::TaskAccepted {
                about,
                store_rev,
                amount,
                note: n,
            } => {
                about.write(&mut e);
                e.store_rev = Some(store_rev);
                e.amount = amount;
                e.detail = note(n);
            }
            Step::IntentRecorded {
                about,
                store_rev,
                amount,
                note: n,
            } => {
                about.write(&mut e);
                e.store_rev = Some(store_rev);
                e.amount = amount;
                e.detail = note(n);
            }
            Step::PublishAttempt {
                about,
                attempt,
                note: n,
            }
            | Step::PublishUnacked {
                about,
                attempt,
                note: n,
            } => {
                about.write(&mut e);
                e.attempt = Some(attempt);
                e.detail = note(n);
            }
            Step::PublishAcked {
                about,
                attempt,
                broker_seq,
                note: n,
            }
            | Step::Delivered {
                about,
                attempt,
                broker_seq,
                note: n,
            }
            | Step::Redelivered {
                about,
                attempt,
                broker_seq,
                note: n,
            } => {
                about.write(&mut e);
                e.attempt = Some(attempt);
                e.broker_seq = Some(broker_seq);
                e.detail = note(n);
            }
            Step::PublishFailed {
                about,
                attempt,
                note: n,
            } => {
                about.write(&mut e);
                e.attempt = attempt;
                e.detail = note(n);
            }
            Step::OutboxMarked {
                about,
                store_rev,
                note: n,
            } => {
                about.write(&mut e);
                e.store_rev = Some(store_rev);
                e.detail = note(n);
            }
            Step::EffectCommitted {
                about,
                store_rev,
                amount,
                counter,
                counter_key,
                broker_seq,
                note: n,
            } => {
                about.write(&mut e);
                e.store_rev = Some(store_rev);
                e.amount = Some(amount);
                e.counter = Some(counter);
                e.counter_key = counter_key;
                e.broker_seq = broker_seq;
                e.detail = note(n);
            }
            Step::DuplicateSuppressed {
                about,
                broker_seq,
                note: n,
            }
            | Step::CommitConflict {
                about,
                broker_seq,
                note: n,
            } => {
                about.write(&mut e);
                e.broker_seq = broker_seq;
                e.detail = note(n);
            }
            Step::Acked {
                about,
                broker_seq,
                note: n,
            } => {
                about.write(&mut e);
                e.broker_seq = Some(broker_seq);
                e.detail = note(n);
            }
            Step::Crash { about, crash } => {
                if let Some(about) = about {
                    about.write(&mut e);
                }
                e.detail = Some(text(&crash));
            }
            Step::Restart => {}
            Step::Fault(d) => e.detail = Some(text(&d)),
            Step::ExternalRequest {
                about,
                attempt,
                amount,
                note: n,
            } => {
                about.write(&mut e);
                e.attempt = Some(attempt);
                e.amount = amount;
                e.detail = note(n);
            }
            Step::ExternalApplied {
                about,
                amount,
                note: n,
            }
            | Step::ExternalReplayed {
                about,
                amount,
                note: n,
            } => {
                about.write(&mut e);
                e.amount = amount;
                e.detail = note(n);
            }
            Step::Observed(d) => e.detail = Some(text(&d)),
            Step::RunEnd(d) => e.detail = Some(text(&d)),
        }
        e
    }
}

/// A detail as JSON text, its keys in sorted order.
fn text<T: Serialize>(detail: &T) -> String {
    // The details are maps with string keys and plain values: they always serialize.
    serde_json::to_value(detail)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| "{}".to_string())
}

/// A required field, or the error naming it.
fn need<T>(kind: Kind, value: Option<T>, field: Field) -> Result<T, MissingFields> {
    value.ok_or(MissingFields {
        kind,
        fields: vec![field],
    })
}

fn about<T: TaskColumn>(e: &Event) -> Result<About<T>, MissingFields> {
    About::read(e).ok_or_else(|| MissingFields {
        kind: e.kind,
        fields: if e.event_id.is_none() {
            vec![Field::EventId]
        } else {
            vec![Field::TaskId]
        },
    })
}

impl TryFrom<&Event> for Step {
    type Error = MissingFields;

    /// Reads a row back as a step; fails naming the required fields the row lacks.
    fn try_from(e: &Event) -> Result<Step, MissingFields> {
        let kind = e.kind;
        let missing = e.missing_fields();
        if !missing.is_empty() {
            return Err(MissingFields {
                kind,
                fields: missing,
            });
        }
        let detail = e.detail.as_deref().map(|t| Detail::parse(kind, t));
        let note = || {
            detail
                .as_ref()
                .and_then(Detail::note)
                .cloned()
                .unwrap_or_default()
        };
        let no_detail = || MissingFields {
            kind,
            fields: vec![Field::Detail],
        };
        let store_rev = || need(kind, e.store_rev, Field::StoreRev);
        let attempt = || need(kind, e.attempt, Field::Attempt);
        let broker_seq = || need(kind, e.broker_seq, Field::BrokerSeq);
        Ok(match kind {
            Kind::RunStart => Step::RunStart(match detail {
                Some(Detail::RunStart(d)) => d,
                _ => detail::RunStart::default(),
            }),
            Kind::TaskAccepted => Step::TaskAccepted {
                about: about(e)?,
                store_rev: store_rev()?,
                amount: e.amount,
                note: note(),
            },
            Kind::IntentRecorded => Step::IntentRecorded {
                about: about(e)?,
                store_rev: store_rev()?,
                amount: e.amount,
                note: note(),
            },
            Kind::PublishAttempt => Step::PublishAttempt {
                about: about(e)?,
                attempt: attempt()?,
                note: note(),
            },
            Kind::PublishAcked => Step::PublishAcked {
                about: about(e)?,
                attempt: attempt()?,
                broker_seq: broker_seq()?,
                note: note(),
            },
            Kind::PublishUnacked => Step::PublishUnacked {
                about: about(e)?,
                attempt: attempt()?,
                note: note(),
            },
            Kind::PublishFailed => Step::PublishFailed {
                about: about(e)?,
                attempt: e.attempt,
                note: note(),
            },
            Kind::OutboxMarked => Step::OutboxMarked {
                about: about(e)?,
                store_rev: store_rev()?,
                note: note(),
            },
            Kind::Delivered => Step::Delivered {
                about: about(e)?,
                attempt: attempt()?,
                broker_seq: broker_seq()?,
                note: note(),
            },
            Kind::Redelivered => Step::Redelivered {
                about: about(e)?,
                attempt: attempt()?,
                broker_seq: broker_seq()?,
                note: note(),
            },
            Kind::EffectCommitted => Step::EffectCommitted {
                about: about(e)?,
                store_rev: store_rev()?,
                amount: need(kind, e.amount, Field::Amount)?,
                counter: need(kind, e.counter, Field::Counter)?,
                counter_key: e.counter_key.clone(),
                broker_seq: e.broker_seq,
                note: note(),
            },
            Kind::DuplicateSuppressed => Step::DuplicateSuppressed {
                about: about(e)?,
                broker_seq: e.broker_seq,
                note: note(),
            },
            Kind::CommitConflict => Step::CommitConflict {
                about: about(e)?,
                broker_seq: e.broker_seq,
                note: note(),
            },
            Kind::Acked => Step::Acked {
                about: about(e)?,
                broker_seq: broker_seq()?,
                note: note(),
            },
            Kind::Crash => Step::Crash {
                about: About::read(e),
                crash: match detail {
                    Some(Detail::Crash(d)) => d,
                    _ => return Err(no_detail()),
                },
            },
            Kind::Restart => Step::Restart,
            Kind::Fault => Step::Fault(match detail {
                Some(Detail::Fault(d)) => d,
                _ => return Err(no_detail()),
            }),
            Kind::ExternalRequest => Step::ExternalRequest {
                about: about(e)?,
                attempt: attempt()?,
                amount: e.amount,
                note: note(),
            },
            Kind::ExternalApplied => Step::ExternalApplied {
                about: about(e)?,
                amount: e.amount,
                note: note(),
            },
            Kind::ExternalReplayed => Step::ExternalReplayed {
                about: about(e)?,
                amount: e.amount,
                note: note(),
            },
            Kind::Observed => Step::Observed(match detail {
                Some(Detail::Observed(d)) => d,
                _ => return Err(no_detail()),
            }),
            Kind::RunEnd => Step::RunEnd(match detail {
                Some(Detail::RunEnd(d)) => d,
                _ => return Err(no_detail()),
            }),
        })
    }
}

impl TryFrom<Event> for Step {
    type Error = MissingFields;

    fn try_from(e: Event) -> Result<Step, MissingFields> {
        Step::try_from(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::{Crash, Fault, Observed, RunEnd, RunStart};

    fn about() -> About {
        About {
            event_id: "evt-t1".into(),
            task_id: Some("t1".into()),
            aggregate_id: Some("agg-1".into()),
            aggregate_seq: Some(2),
        }
    }

    fn task_about() -> About<String> {
        About::new("evt-t1", "t1".to_string())
    }

    fn reason(text: &str) -> Note {
        Note {
            reason: Some(text.into()),
            ..Note::default()
        }
    }

    /// One step of every kind, most with their optional columns and a note.
    fn every_step() -> Vec<Step> {
        let none = Note::default;
        vec![
            Step::RunStart(RunStart {
                protocol: Some("reference".into()),
                workers: Some(2),
                faults: vec!["worker:between-commit-and-ack".into()],
                ..RunStart::default()
            }),
            Step::TaskAccepted {
                about: task_about(),
                store_rev: 7,
                amount: Some(3),
                note: none(),
            },
            Step::IntentRecorded {
                about: about(),
                store_rev: 7,
                amount: Some(3),
                note: Note {
                    seen_in: Some("store".into()),
                    ..Note::default()
                },
            },
            Step::PublishAttempt {
                about: about(),
                attempt: 1,
                note: none(),
            },
            Step::PublishAcked {
                about: about(),
                attempt: 2,
                broker_seq: 11,
                note: Note {
                    broker_duplicate: Some(true),
                    ..Note::default()
                },
            },
            Step::PublishUnacked {
                about: about(),
                attempt: 1,
                note: Note {
                    fault: Some("lose-publish-ack".into()),
                    ..reason("timeout")
                },
            },
            Step::PublishFailed {
                about: About::new("evt-t2", None),
                attempt: None,
                note: reason("broker down"),
            },
            Step::OutboxMarked {
                about: about(),
                store_rev: 9,
                note: none(),
            },
            Step::delivery(about(), 1, 11),
            Step::delivery(about(), 3, 11),
            Step::EffectCommitted {
                about: task_about(),
                store_rev: 12,
                amount: 3,
                counter: 10,
                counter_key: Some("item-1".into()),
                broker_seq: Some(11),
                note: none(),
            },
            Step::DuplicateSuppressed {
                about: about(),
                broker_seq: Some(11),
                note: Note {
                    committed_rev: Some(12),
                    counter_after: Some(10),
                    amount: Some(3),
                    ..Note::default()
                },
            },
            Step::CommitConflict {
                about: about(),
                broker_seq: None,
                note: none(),
            },
            Step::Acked {
                about: about(),
                broker_seq: 11,
                note: none(),
            },
            Step::crash("worker:after-commit-before-ack", Some(about())),
            Step::Crash {
                about: None,
                crash: Crash {
                    point: "error".into(),
                    error: Some("store: gone".into()),
                    ..Crash::default()
                },
            },
            Step::Restart,
            Step::Fault(Fault {
                fault: "broker-restart".into(),
                down_ms: Some(120),
                ..Fault::default()
            }),
            Step::ExternalRequest {
                about: about(),
                attempt: 1,
                amount: Some(3),
                note: Note {
                    idempotency_key: Some(false),
                    ..Note::default()
                },
            },
            Step::ExternalApplied {
                about: About::new("evt-t1", Some("t1".into())),
                amount: Some(3),
                note: none(),
            },
            Step::ExternalReplayed {
                about: about(),
                amount: None,
                note: none(),
            },
            Step::Observed(Observed {
                counter: Some(10.into()),
                duplicates: Some(Default::default()),
                other: [("db".to_string(), serde_json::json!("/tmp/x.db"))]
                    .into_iter()
                    .collect(),
                ..Observed::default()
            }),
            Step::RunEnd(RunEnd {
                recovered: Some(true),
                elapsed_ms: Some(1234),
                ..RunEnd::default()
            }),
        ]
    }

    fn identity() -> Identity {
        Identity {
            run_id: "r1".into(),
            scenario: "s".into(),
            seq: 4,
            ts_ns: 99,
            backend: "etcd-jetstream".into(),
            actor: "worker-2".into(),
            incarnation: 1,
        }
    }

    #[test]
    fn every_kind_has_a_step() {
        let kinds: Vec<Kind> = every_step().iter().map(Step::kind).collect();
        for kind in Kind::ALL {
            assert!(kinds.contains(kind), "no step of kind {kind}");
        }
    }

    #[test]
    fn every_step_makes_a_complete_row_and_reads_back_equal() {
        for step in every_step() {
            let row = step.clone().into_event(identity());
            assert_eq!(row.kind, step.kind());
            assert!(row.missing_fields().is_empty(), "{step:?}: {row:?}");
            assert_eq!(Identity::of(&row), identity());
            assert_eq!(Step::try_from(&row).as_ref(), Ok(&step), "{row:?}");
        }
    }

    #[test]
    fn every_step_row_survives_the_columns_both_ways() {
        let rows: Vec<Event> = every_step()
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                step.into_event(Identity {
                    seq: i as u64 + 1,
                    ..identity()
                })
            })
            .collect();
        let batch = crate::to_batch(&rows).unwrap();
        assert_eq!(batch.num_columns(), crate::schema::COLUMNS.len());
        let mut unknown = std::collections::BTreeMap::new();
        assert_eq!(crate::batch_events(&batch, &mut unknown), rows);
        assert!(unknown.is_empty());
    }

    #[test]
    fn every_step_round_trips_through_its_json() {
        for step in every_step() {
            let text = serde_json::to_string(&step).unwrap();
            let back: Step = serde_json::from_str(&text).unwrap();
            assert_eq!(back, step, "{text}");
        }
        let text = serde_json::to_string(&Step::Restart).unwrap();
        assert_eq!(text, r#""restart""#);
    }

    #[test]
    fn details_are_written_with_sorted_keys_and_notes_only_when_they_say_something() {
        let row = Step::RunEnd(RunEnd {
            recovered: Some(true),
            reason: Some("quiet".into()),
            elapsed_ms: Some(5),
            ..RunEnd::default()
        })
        .into_event(identity());
        assert_eq!(
            row.detail.as_deref(),
            Some(r#"{"elapsed_ms":5,"reason":"quiet","recovered":true}"#)
        );
        let row = Step::delivery(about(), 1, 3).into_event(identity());
        assert_eq!(row.detail, None);
    }

    #[test]
    fn a_row_missing_a_required_field_is_no_step() {
        let mut row = every_step()
            .into_iter()
            .find(|s| s.kind() == Kind::EffectCommitted)
            .unwrap()
            .into_event(identity());
        row.counter = None;
        row.task_id = None;
        let err = Step::try_from(&row).unwrap_err();
        assert_eq!(err.kind, Kind::EffectCommitted);
        assert_eq!(err.fields, vec![Field::TaskId, Field::Counter]);
        assert_eq!(
            err.to_string(),
            "a `effect_committed` row lacks task_id, counter"
        );

        let mut crash = Step::crash("exit", None).into_event(identity());
        crash.detail = Some("not json".into());
        assert_eq!(
            Step::try_from(&crash).unwrap_err().fields,
            vec![Field::Detail]
        );
        crash.detail = None;
        assert_eq!(
            Step::try_from(&crash).unwrap_err().fields,
            vec![Field::Detail]
        );

        let mut delivered = Step::delivery(about(), 1, 3).into_event(identity());
        delivered.broker_seq = None;
        assert_eq!(
            Step::try_from(&delivered).unwrap_err().fields,
            vec![Field::BrokerSeq]
        );
    }
}
