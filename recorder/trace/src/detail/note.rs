//! [`Note`]: the detail of a protocol step.

use super::lenient::detail_struct;

detail_struct! {
    /// The detail of a protocol step: why a publish was not ACKed, whether an external call
    /// carried its key, which commit a suppressed duplicate found, or that the observer read the
    /// step from the store.
    pub struct Note {
        /// Why a publish failed or went unACKed.
        pub reason: Option<String>,
        /// The injected fault that cost the ACK (`lose-publish-ack`), when one did.
        pub fault: Option<String>,
        /// The broker reported the copy as a duplicate it dropped.
        pub broker_duplicate: Option<bool>,
        /// Whether an external request carried the idempotency key.
        pub idempotency_key: Option<bool>,
        /// `store` when the observer read this step back from the store after its actor died.
        pub seen_in: Option<String>,
        /// Why the observer had to read it.
        pub why: Option<String>,
        /// `duplicate_suppressed`: the `store_rev` of the commit that wrote the dedup key found.
        pub committed_rev: Option<i64>,
        /// `duplicate_suppressed`: the counter right after that commit.
        pub counter_after: Option<i64>,
        /// `duplicate_suppressed`: the size of the effect not applied again.
        pub amount: Option<i64>,
        /// Where the step was read: `wire` (the recorder's proxy read it from the process's
        /// traffic with its service, by a `[steps]` mapping) or `span` (the process reported
        /// it); absent where the run reads no step from the wire.
        pub source: Option<String>,
    }
}

impl Note {
    /// Whether the note says nothing (a row with such a note has no `detail`).
    pub fn is_empty(&self) -> bool {
        *self == Note::default()
    }

    /// Whether the observer read this step from the store (`seen_in: "store"`).
    pub fn seen_in_store(&self) -> bool {
        self.seen_in.as_deref() == Some("store")
    }
}
