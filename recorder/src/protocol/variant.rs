//! The protocol variants: the reference, and the deliberately broken ones a checker must catch.
//! Each broken variant is a switch inside the one implementation, not a copy of it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which protocol to run: the reference, or one deliberately broken variant that a checker must
/// catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// The correct protocol.
    Reference,
    /// The worker ACKs, then commits: a crash between loses the task.
    AckBeforeCommit,
    /// The worker never checks the dedup key: a second copy or a redelivery applies again.
    NoDedup,
    /// Task and outbox record in two transactions: a crash between loses the intent.
    SplitOutbox,
    /// The relay marks, then publishes: a crash between loses the event.
    MarkBeforePublish,
    /// The counter is written without its revision guard: concurrent workers lose an update.
    UnguardedCounter,
    /// Dedup keys live on a lease shorter than AckWait: the redelivery finds none.
    DedupExpiry,
    /// Relies on the broker's duplicate window (`Nats-Msg-Id`) instead of the consumer's dedup key.
    BrokerDedup,
    /// Calls the external receiver without an idempotency key: a retried call pays again.
    NoIdempotencyKey,
}

impl Protocol {
    /// The variant's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Reference => "reference",
            Protocol::AckBeforeCommit => "ack-before-commit",
            Protocol::NoDedup => "no-dedup",
            Protocol::SplitOutbox => "split-outbox",
            Protocol::MarkBeforePublish => "mark-before-publish",
            Protocol::UnguardedCounter => "unguarded-counter",
            Protocol::DedupExpiry => "dedup-expiry",
            Protocol::BrokerDedup => "broker-dedup",
            Protocol::NoIdempotencyKey => "no-idempotency-key",
        }
    }

    /// The API writes the task and its outbox record in one transaction.
    pub fn atomic_intent(self) -> bool {
        self != Protocol::SplitOutbox
    }

    /// The relay publishes before it marks.
    pub fn publish_then_mark(self) -> bool {
        self != Protocol::MarkBeforePublish
    }

    /// The worker commits before it ACKs.
    pub fn commit_then_ack(self) -> bool {
        self != Protocol::AckBeforeCommit
    }

    /// The worker consults the dedup key before applying the effect.
    pub fn checks_dedup(self) -> bool {
        !matches!(self, Protocol::NoDedup | Protocol::BrokerDedup)
    }

    /// The counter write is guarded by the revision read.
    pub fn guards_counter(self) -> bool {
        self != Protocol::UnguardedCounter
    }

    /// How long a dedup key lives (`None`: for the whole run).
    pub fn dedup_ttl(self) -> Option<Duration> {
        (self == Protocol::DedupExpiry).then_some(Duration::from_secs(1))
    }

    /// The worker sends `event_id` as the external receiver's idempotency key.
    pub fn sends_idempotency_key(self) -> bool {
        self != Protocol::NoIdempotencyKey
    }

    /// The relay sets the broker's message id, turning on broker-side duplicate suppression.
    pub fn broker_msg_id(self) -> bool {
        self == Protocol::BrokerDedup
    }

    /// The shortest AckWait under which this variant's flaw shows (a dedup lease must expire before
    /// the redelivery).
    pub fn min_ack_wait(self) -> Duration {
        match self {
            Protocol::DedupExpiry => Duration::from_secs(4),
            _ => Duration::ZERO,
        }
    }
}
