//! The invariant table: every invariant the contract names, with its id and its class. Adding an
//! invariant starts here; the compiler then asks for its rule (`scan.rs`) and its SQL.

/// Whether an invariant is about what must never happen or what must eventually happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Nothing bad happens.
    Safety,
    /// Something good eventually happens (decided only on recovered runs).
    Liveness,
}

impl Class {
    /// `safety` or `liveness`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Safety => "safety",
            Class::Liveness => "liveness",
        }
    }
}

macro_rules! invariants {
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $class:ident;)+) => {
        /// The invariants the analyzer checks, with the contract's ids.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Invariant {
            $($(#[$doc])* $variant,)+
        }

        impl Invariant {
            /// Every invariant, in the contract's order.
            pub const ALL: &'static [Invariant] = &[$(Invariant::$variant),+];

            /// The contract's id, e.g. `ack-after-commit`.
            pub fn id(self) -> &'static str {
                match self { $(Invariant::$variant => $id,)+ }
            }

            /// Safety or liveness.
            pub fn class(self) -> Class {
                match self { $(Invariant::$variant => Class::$class,)+ }
            }
        }
    };
}

invariants! {
    /// No event and no task has more than one `effect_committed`.
    SingleEffect = "single-effect", Safety;
    /// Every `task_accepted` has an `intent_recorded` with the same event and `store_rev`.
    IntentAtomic = "intent-atomic", Safety;
    /// Every `outbox_marked` follows a `publish_acked` of the same event.
    MarkAfterPuback = "mark-after-puback", Safety;
    /// Every `acked` follows, in the same actor incarnation, a commit or suppression of that delivery.
    AckAfterCommit = "ack-after-commit", Safety;
    /// Per aggregate, first publications go out in ascending `aggregate_seq`.
    AggregateOrder = "aggregate-order", Safety;
    /// Commits step the counter by exactly their amount; the observed counter is their sum.
    CounterExact = "counter-exact", Safety;
    /// The observed totals agree with the trace.
    ObservedAgrees = "observed-agrees", Safety;
    /// No event has more than one `external_applied`.
    ExternalSingleEffect = "external-single-effect", Safety;
    /// On a recovered run, every accepted task has an effect.
    NoLostTask = "no-lost-task", Liveness;
}
