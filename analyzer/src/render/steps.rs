//! How each kind of step is drawn in a chain: what it is drawn as (an arrow between two parties,
//! or a mark on a lane), its label's words and the row's values shown after them, and its tone.
//! The layout ([`super::layout`]) reads this one table, and the HTML report's script gets it as
//! data, so a chain drawn in advance and one drawn in the browser say the same.

use outbox_trace::Kind;
use serde::Serialize;

/// How a step looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// An ordinary step.
    Plain,
    /// A commit that took effect.
    Effect,
    /// A duplicate absorbed (suppression, replay).
    Absorbed,
    /// Something retried or delivered again.
    Retry,
    /// A loss or failure (lost ACK, refused publish, conflict, fault).
    Loss,
}

/// Whose lane a step's arrow leaves or reaches, or its mark sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Party {
    /// The row's own actor.
    Own,
    /// The broker.
    Broker,
    /// The API and its store.
    Api,
    /// The receiver of external calls.
    Receiver,
}

/// What a step is drawn as, by party.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// A mark on the party's lane.
    Note(Party),
    /// A message from the first party to the second.
    Arrow(Party, Party),
    /// The row's actor died; its segment ends.
    Crash,
    /// The row's actor came back; a new segment begins.
    Restart,
}

/// A value of the row that a label shows after its words, when the row has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// `store_rev`: ` · rev N`.
    Rev,
    /// `broker_seq`: ` seq N` (a Redis Stream entry id as `<ms>-<n>`; `pP:N` within partition
    /// `P`).
    Position,
    /// `attempt`: ` #N`.
    Attempt,
    /// `attempt` of a delivery: ` · count N`.
    Count,
    /// `counter`: ` · counter N`.
    Counter,
    /// `amount`, signed: ` +N` or ` -N`.
    Amount,
}

impl Shown {
    /// Every value a label can show.
    pub const ALL: [Shown; 6] = [
        Shown::Rev,
        Shown::Position,
        Shown::Attempt,
        Shown::Count,
        Shown::Counter,
        Shown::Amount,
    ];

    /// What the label puts before the value.
    pub fn prefix(self) -> &'static str {
        match self {
            Shown::Rev => " · rev ",
            Shown::Position => " seq ",
            Shown::Attempt => " #",
            Shown::Count => " · count ",
            Shown::Counter => " · counter ",
            Shown::Amount => " ",
        }
    }
}

/// How a step of one kind is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Look {
    /// Arrow or mark.
    pub form: Form,
    /// The label's words; a crash, restart or fault is labelled from its row instead
    /// ([`super::layout`]): `crash #1: <point>`, `restart: <actor>#1`, `fault: <name>`.
    pub words: &'static str,
    /// The values shown after the words, in order.
    pub shown: &'static [Shown],
    /// Its tone; a publish attempt after the first is a [`Tone::Retry`].
    pub tone: Tone,
}

/// How a step of `kind` is drawn.
pub fn look(kind: Kind) -> Look {
    use Form::{Arrow, Note};
    use Party::{Api, Broker, Own, Receiver};
    use Shown::{Amount, Attempt, Count, Counter, Position, Rev};
    let (form, words, shown, tone): (Form, &'static str, &'static [Shown], Tone) = match kind {
        Kind::TaskAccepted => (Note(Own), "task accepted", &[Rev], Tone::Plain),
        Kind::IntentRecorded => (Note(Own), "intent recorded", &[Rev], Tone::Plain),
        Kind::PublishAttempt => (Arrow(Own, Broker), "publish", &[Attempt], Tone::Plain),
        Kind::PublishAcked => (
            Arrow(Broker, Own),
            "publish ACK",
            &[Position, Attempt],
            Tone::Plain,
        ),
        Kind::PublishUnacked => (
            Arrow(Broker, Own),
            "publish ACK lost",
            &[Attempt],
            Tone::Loss,
        ),
        Kind::PublishFailed => (Arrow(Own, Broker), "publish failed", &[], Tone::Loss),
        Kind::OutboxMarked => (Arrow(Own, Api), "mark published", &[Rev], Tone::Plain),
        Kind::Delivered => (
            Arrow(Broker, Own),
            "deliver",
            &[Position, Count],
            Tone::Plain,
        ),
        Kind::Redelivered => (
            Arrow(Broker, Own),
            "redeliver",
            &[Position, Count],
            Tone::Retry,
        ),
        Kind::EffectCommitted => (
            Arrow(Own, Api),
            "commit",
            &[Rev, Counter, Amount],
            Tone::Effect,
        ),
        Kind::DuplicateSuppressed => (
            Arrow(Own, Api),
            "dedup key found: suppressed",
            &[],
            Tone::Absorbed,
        ),
        Kind::CommitConflict => (Arrow(Own, Api), "commit conflict: retry", &[], Tone::Loss),
        Kind::Acked => (Arrow(Own, Broker), "ACK", &[Position], Tone::Plain),
        Kind::ExternalRequest => (
            Arrow(Own, Receiver),
            "call, key = event",
            &[Attempt],
            Tone::Plain,
        ),
        Kind::ExternalApplied => (Note(Own), "applied: paid", &[], Tone::Effect),
        Kind::ExternalReplayed => (
            Note(Own),
            "key seen: replayed, not paid",
            &[],
            Tone::Absorbed,
        ),
        Kind::Crash => (Form::Crash, "", &[], Tone::Loss),
        Kind::Restart => (Form::Restart, "", &[], Tone::Retry),
        Kind::Fault => (Note(Broker), "", &[], Tone::Loss),
        other => (Note(Own), other.as_str(), &[], Tone::Plain),
    };
    Look {
        form,
        words,
        shown,
        tone,
    }
}
