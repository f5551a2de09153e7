//! `observed.detail`: the ground truth read back from the real systems.

use std::collections::BTreeMap;

use super::lenient::detail_struct;
use super::CounterValue;

detail_struct! {
    /// `observed.detail`: the ground truth read back from the real systems.
    pub struct Observed {
        /// Tasks in the store.
        pub tasks: Option<i64>,
        /// Tasks in the store marked done.
        pub tasks_done: Option<i64>,
        /// Messages the broker holds (or held): copies published.
        pub stream_messages: Option<i64>,
        /// The effect counter as stored (one number, or one per `counter_key`); the `counter`
        /// figure prefers it to the last commit's.
        pub counter: Option<CounterValue>,
        /// Effect results stored.
        pub results: Option<i64>,
        /// A synonym of `results` some producers use.
        pub processed: Option<i64>,
        /// Dedup keys stored.
        pub dedup_keys: Option<i64>,
        /// Outbox records not yet published.
        pub outbox_pending: Option<i64>,
        /// Outbox records marked published.
        pub outbox_published: Option<i64>,
        /// Payments the external receiver made.
        pub external_payments: Option<i64>,
        /// Idempotency keys the external receiver holds.
        pub external_keys: Option<i64>,
        /// Dual-write lab: rows in `orders`.
        pub orders: Option<i64>,
        /// Dual-write lab: rows in `outbox`.
        pub outbox: Option<i64>,
        /// Dual-write lab: messages appended to the broker's log.
        pub enqueued: Option<i64>,
        /// Dual-write lab: distinct events processed.
        pub processed_unique: Option<i64>,
        /// Dual-write lab: whether every aggregate was consumed in `seq` order.
        pub order_ok: Option<bool>,
        /// Dual-write lab: events published more than once, with their copies (absent where the
        /// backend does not count copies per event; empty when it found none).
        pub duplicates: Option<BTreeMap<String, i64>>,
        /// When during the scenario this was read (absent: at the end).
        pub phase: Option<String>,
    }
}

impl Observed {
    /// Effect results: `results`, or its synonym `processed`.
    pub fn results(&self) -> Option<i64> {
        self.results.or(self.processed)
    }
}
