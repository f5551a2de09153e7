//! The event kinds of `outbox-trace/1`: one definition, used by writers and readers alike.

use std::fmt;
use std::str::FromStr;

/// A field of an event that a kind may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `task_id`: the business entity an event acts on.
    TaskId,
    /// `event_id`: the published event's stable id.
    EventId,
    /// `store_rev`: the store transaction a row reports.
    StoreRev,
    /// `attempt`: a publish attempt or a broker delivery count.
    Attempt,
    /// `broker_seq`: the broker's position for one copy.
    BrokerSeq,
    /// `amount`: the size of an effect.
    Amount,
    /// `counter`: the effect counter right after a commit.
    Counter,
    /// `detail`: a JSON object with what the columns do not hold.
    Detail,
}

impl Field {
    /// The column name of this field.
    pub fn column(self) -> &'static str {
        match self {
            Field::TaskId => "task_id",
            Field::EventId => "event_id",
            Field::StoreRev => "store_rev",
            Field::Attempt => "attempt",
            Field::BrokerSeq => "broker_seq",
            Field::Amount => "amount",
            Field::Counter => "counter",
            Field::Detail => "detail",
        }
    }

    /// Whether the field identifies a step (`task_id`, `event_id`, a required `detail`): a span
    /// that lacks it is refused. The others (`store_rev`, `amount`, `counter`, `attempt`,
    /// `broker_seq`) are what some invariants read: a row without them is kept, and only those
    /// invariants are `unknown`.
    pub fn identifies(self) -> bool {
        matches!(self, Field::TaskId | Field::EventId | Field::Detail)
    }
}

macro_rules! kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal [$($field:ident),*] ),+ $(,)?) => {
        /// What happened. The names are the contract's `kind` values.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $( $(#[$doc])* $variant, )+
        }

        impl Kind {
            /// Every kind, in the contract's order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),+];

            /// The kind's name as written in the `kind` column.
            pub fn as_str(self) -> &'static str {
                match self { $(Kind::$variant => $name,)+ }
            }

            /// The fields the contract requires for this kind (beyond the always-required columns).
            pub fn required_fields(self) -> &'static [Field] {
                match self { $(Kind::$variant => &[$(Field::$field),*],)+ }
            }

            /// The required fields that identify a step of this kind ([`Field::identifies`]):
            /// a row or span without one is no step.
            pub fn identifying_fields(self) -> impl Iterator<Item = Field> {
                self.required_fields().iter().copied().filter(|f| f.identifies())
            }
        }

        impl FromStr for Kind {
            type Err = UnknownKind;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(Kind::$variant),)+
                    other => Err(UnknownKind(other.to_string())),
                }
            }
        }
    };
}

kinds! {
    /// A scenario begins; `detail` says how it was set up.
    RunStart = "run_start" [],
    /// The task and its idempotency key committed.
    TaskAccepted = "task_accepted" [TaskId, EventId, StoreRev],
    /// The outbox record committed; a correct protocol commits it with its task (same `store_rev`).
    IntentRecorded = "intent_recorded" [EventId, StoreRev],
    /// The relay sends one copy to the broker.
    PublishAttempt = "publish_attempt" [EventId],
    /// The broker's publish ACK reached the relay.
    PublishAcked = "publish_acked" [EventId],
    /// No publish ACK came back; the broker may or may not hold the copy.
    PublishUnacked = "publish_unacked" [EventId],
    /// The publish was refused or the broker was down.
    PublishFailed = "publish_failed" [EventId],
    /// The outbox record is marked published.
    OutboxMarked = "outbox_marked" [EventId, StoreRev],
    /// First delivery of a copy.
    Delivered = "delivered" [EventId],
    /// The broker delivers a copy again.
    Redelivered = "redelivered" [EventId],
    /// Dedup key, result, completed task and counter committed in one transaction.
    EffectCommitted = "effect_committed" [EventId, TaskId, Amount, Counter, StoreRev],
    /// The dedup key was already there: no effect.
    DuplicateSuppressed = "duplicate_suppressed" [EventId],
    /// The guarded commit lost a revision race and will be retried.
    CommitConflict = "commit_conflict" [EventId],
    /// The consumer ACK was sent.
    Acked = "acked" [EventId],
    /// The actor died at the named point (`detail.point`).
    Crash = "crash" [Detail],
    /// The actor came back with a new incarnation.
    Restart = "restart" [],
    /// An injected fault on a dependency (`detail.fault`).
    Fault = "fault" [Detail],
    /// The worker calls an external receiver with `event_id` as its idempotency key.
    ExternalRequest = "external_request" [EventId, Attempt],
    /// The receiver performed the external effect for this key.
    ExternalApplied = "external_applied" [EventId],
    /// The receiver saw the key again and answered without acting.
    ExternalReplayed = "external_replayed" [EventId],
    /// Ground truth read back from the real systems at the end.
    Observed = "observed" [Detail],
    /// The scenario ended (`detail.recovered`).
    RunEnd = "run_end" [Detail],
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so widths and alignment (`{:<18}`) apply as they do to strings.
        f.pad(self.as_str())
    }
}

impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A `kind` value this version of the contract does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind `{0}`")]
pub struct UnknownKind(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(kind.as_str().parse::<Kind>().unwrap(), *kind);
        }
        assert_eq!(Kind::ALL.len(), 22);
        assert!("bogus".parse::<Kind>().is_err());
    }
}
