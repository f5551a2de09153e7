//! The invariant table: every invariant the contract names, one row each, with every property
//! that differs from one invariant to another (its id, its class, how the lost-spans and
//! lost-rows rules treat it, its SQL prefix, the measures it ties, its files). Adding an
//! invariant is one row here plus its own files (`check/<files>.rs`, `sql/<files>.rs`); nothing
//! else in the crate matches on the invariants.

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

/// How the lost-spans rule (`crate::check::lost_spans`, and the SQL's) treats an invariant's
/// violations when an actor life may have lost its last rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostSpans {
    /// A missing row would sit in the life of a witness row: a violation goes when one of its
    /// witness rows is in a life that may have lost rows.
    Touched,
    /// The missing row could come from any life: every violation goes when the scenario has
    /// such a life.
    Any,
    /// Missing rows only hide violations: they stay (or, for totals, the lost-rows rule decides).
    Never,
}

/// What the store counts that the trace may lack (see [`LostRows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Effects (`tasks_done`, `results`, `dedup_keys` above the trace's).
    Effects,
    /// Intents (outbox rows above the trace's distinct intents).
    Intents,
}

/// How the lost-rows rule (`crate::check::lost_rows`, and the SQL's) treats an invariant's
/// failure when the `observed` totals show rows the trace lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostRows {
    /// Missing rows do not explain its violations: they stay.
    Never,
    /// Any shortfall of what it names turns the failure unknown.
    Any(Stored),
    /// A shortfall of what it names turns the failure unknown when it is at least as large as
    /// the violations found.
    Covers(Stored),
    /// The invariant compares the totals itself: where some life may have lost rows, a total the
    /// store holds more of than the trace is the trace's shortfall.
    Totals,
}

/// The table, and what each layer reads of it.
///
/// `invariants!(declare)` declares [`Invariant`] with the columns of this layer as methods;
/// `invariants!(files m)` calls the macro `m` with `Variant files` for each row and
/// `invariants!(tied m)` with `Variant [Measure, ..]`: the layers above read the columns whose
/// types are theirs (the rules of `check`, the SQL parts of `sql`, the measures of
/// `crate::views::compare`) without this layer naming them.
///
/// The columns of a row:
/// - `id`: the contract's id;
/// - `class`: [`Class`];
/// - `lost_spans`: [`LostSpans`];
/// - `lost_rows`: [`LostRows`];
/// - `sql_prefix`: the short prefix of its SQL tables and columns;
/// - `tied`: the measures of `analyzer compare` its failure puts in doubt;
/// - `judges`: the kinds it judges (the contract's rule "zero rows are no evidence where work
///   happened");
/// - `reads_observed`: whether it compares the trace with the store read back (`observed`), which
///   a scenario cut short (`run_end` missing or `interrupted`) leaves in doubt;
/// - `files`: the name of its files, `check/<files>.rs` (its rule, `Rule`) and `sql/<files>.rs`
///   (its SQL, `part`).
macro_rules! invariants {
    (@[declare] $(
        $(#[$doc:meta])*
        $variant:ident {
            id: $id:literal, class: $class:ident, lost_spans: $spans:ident,
            lost_rows: $rows:ident $(($stored:ident))?, sql_prefix: $prefix:literal,
            tied: [$($tied:ident),*], judges: [$($judged:ident),*],
            reads_observed: $observed:literal, files: $files:ident $(,)?
        }
    )+) => {
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

            /// How the lost-spans rule treats its violations.
            pub fn lost_spans(self) -> LostSpans {
                match self { $(Invariant::$variant => LostSpans::$spans,)+ }
            }

            /// How the lost-rows rule treats its failure.
            pub fn lost_rows(self) -> LostRows {
                match self { $(Invariant::$variant => LostRows::$rows $((Stored::$stored))?,)+ }
            }

            /// The short prefix of its SQL tables and columns, e.g. `ac`.
            pub fn sql_prefix(self) -> &'static str {
                match self { $(Invariant::$variant => $prefix,)+ }
            }

            /// Whether it compares the trace with the last `observed` row (the store read back):
            /// where the scenario was cut short, that comparison is no evidence.
            pub fn reads_observed(self) -> bool {
                match self { $(Invariant::$variant => $observed,)+ }
            }

            /// The kinds it judges: in a scenario that shows work, zero rows of them (not
            /// declared) make it `unknown` (none: it decides as its own file says).
            pub fn judges(self) -> &'static [outbox_trace::Kind] {
                match self { $(Invariant::$variant => &[$(outbox_trace::Kind::$judged),*],)+ }
            }
        }
    };
    (@[files $then:ident] $(
        $(#[$doc:meta])*
        $variant:ident {
            id: $id:literal, class: $class:ident, lost_spans: $spans:ident,
            lost_rows: $rows:ident $(($stored:ident))?, sql_prefix: $prefix:literal,
            tied: [$($tied:ident),*], judges: [$($judged:ident),*],
            reads_observed: $observed:literal, files: $files:ident $(,)?
        }
    )+) => {
        $then! { $($variant $files)+ }
    };
    (@[tied $then:ident] $(
        $(#[$doc:meta])*
        $variant:ident {
            id: $id:literal, class: $class:ident, lost_spans: $spans:ident,
            lost_rows: $rows:ident $(($stored:ident))?, sql_prefix: $prefix:literal,
            tied: [$($tied:ident),*], judges: [$($judged:ident),*],
            reads_observed: $observed:literal, files: $files:ident $(,)?
        }
    )+) => {
        $then! { $($variant [$($tied),*])+ }
    };
    // The table, in the contract's order.
    ($($column:tt)+) => {
        $crate::check::invariant::invariants! { @[$($column)+]
            /// No event and no task has more than one `effect_committed`.
            SingleEffect {
                id: "single-effect", class: Safety, lost_spans: Never, lost_rows: Never,
                sql_prefix: "se", tied: [Effects, Counter], judges: [EffectCommitted], reads_observed: false, files: single_effect,
            }
            /// Every `task_accepted` has an `intent_recorded` with the same event and `store_rev`.
            IntentAtomic {
                id: "intent-atomic", class: Safety, lost_spans: Touched,
                lost_rows: Covers(Intents), sql_prefix: "ia", tied: [Tasks], judges: [TaskAccepted],
                reads_observed: false, files: intent_atomic,
            }
            /// Every `outbox_marked` follows a `publish_acked` of the same event.
            MarkAfterPuback {
                id: "mark-after-puback", class: Safety, lost_spans: Touched, lost_rows: Never,
                sql_prefix: "mp", tied: [PublishAttempts],
                judges: [OutboxMarked], reads_observed: false, files: mark_after_puback,
            }
            /// Every `acked` follows, in the same actor incarnation, a commit or suppression of
            /// that delivery.
            AckAfterCommit {
                id: "ack-after-commit", class: Safety, lost_spans: Touched,
                lost_rows: Any(Effects), sql_prefix: "ac", tied: [Acks], judges: [Acked],
                reads_observed: false, files: ack_after_commit,
            }
            /// Per aggregate, first publications go out in ascending `aggregate_seq`.
            AggregateOrder {
                id: "aggregate-order", class: Safety, lost_spans: Touched, lost_rows: Never,
                sql_prefix: "ao", tied: [], judges: [], reads_observed: false, files: aggregate_order,
            }
            /// Commits step the counter by exactly their amount; the observed counter is their sum.
            CounterExact {
                id: "counter-exact", class: Safety, lost_spans: Any, lost_rows: Any(Effects),
                sql_prefix: "ce", tied: [Counter], judges: [EffectCommitted], reads_observed: true, files: counter_exact,
            }
            /// The observed totals agree with the trace.
            ObservedAgrees {
                id: "observed-agrees", class: Safety, lost_spans: Never, lost_rows: Totals,
                sql_prefix: "oa", tied: [StreamCopies, Effects], judges: [], reads_observed: true, files: observed_agrees,
            }
            /// No event has more than one `external_applied`.
            ExternalSingleEffect {
                id: "external-single-effect", class: Safety, lost_spans: Never, lost_rows: Never,
                sql_prefix: "es", tied: [], judges: [], reads_observed: false, files: external_single_effect,
            }
            /// On a recovered run, every accepted task has an effect.
            NoLostTask {
                id: "no-lost-task", class: Liveness, lost_spans: Any,
                lost_rows: Covers(Effects), sql_prefix: "nl", tied: [Effects, Counter],
                judges: [TaskAccepted],
                reads_observed: false, files: no_lost_task,
            }
            /// Where steps are read from the wire and reported in spans too, both sources give
            /// as many rows of each step.
            SourcesAgree {
                id: "sources-agree", class: Safety, lost_spans: Touched, lost_rows: Never,
                sql_prefix: "sa", tied: [], judges: [], reads_observed: false, files: sources_agree,
            }
        }
    };
}

pub(crate) use invariants;

invariants!(declare);
