//! The invariants of `outbox-trace/1`, one file each. Each is a [`Rule`]: it sees a scenario's rows
//! once, in `seq` order, keeping compact state per event, task, aggregate or actor life (never the
//! rows), and at the end returns an [`Outcome`]: a verdict, an optional [`Reason`], and violations
//! as data (row positions and values), never text. `crate::explain` turns them into words.
//!
//! The same rules decide a trace held in memory ([`check_all`] on a [`History`]) and one streamed
//! from a file without holding its rows (`crate::stream`): a row's position is its index in the
//! scenario's rows either way. A rule whose witness needs rows it did not keep hands back a
//! [`Gather`], which sees the rows a second time and fills the witnesses in.
//!
//! Every decision uses `seq` order within the run and the stores' own numbers (`store_rev`,
//! `broker_seq`, `aggregate_seq`); wall-clock `ts_ns` is never read.

use std::collections::BTreeMap;

use outbox_trace::detail::{Observed, RunEnd, RunStart};
use outbox_trace::{Detail, Field, Kind};

use crate::history::{History, Row};
use crate::intern::Id;

mod ack_after_commit;
mod aggregate_order;
mod counter_exact;
mod external_single_effect;
mod intent_atomic;
mod lost_spans;
mod mark_after_puback;
mod no_lost_task;
mod observed_agrees;
mod scan;
mod single_effect;

pub use lost_spans::Lives;
pub use scan::{Gathering, Scan, Scanned};

/// How many violations of one invariant are kept as examples; the rest are only counted.
pub const EXAMPLES: usize = 3;

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
    ($($(#[$doc:meta])* $variant:ident = $id:literal, $class:ident, $module:ident;)+) => {
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

            /// A fresh rule deciding this invariant.
            pub fn rule(self) -> Box<dyn Rule> {
                match self { $(Invariant::$variant => Box::<$module::Rule>::default(),)+ }
            }

            /// Decides this invariant alone on one history (without the lost-spans rule).
            pub fn check(self, h: &History) -> Outcome {
                let mut scan = Scan::of(&[self]);
                scan.history(h);
                scan.finish().outcomes.remove(0)
            }
        }
    };
}

invariants! {
    /// No event and no task has more than one `effect_committed`.
    SingleEffect = "single-effect", Safety, single_effect;
    /// Every `task_accepted` has an `intent_recorded` with the same event and `store_rev`.
    IntentAtomic = "intent-atomic", Safety, intent_atomic;
    /// Every `outbox_marked` follows a `publish_acked` of the same event.
    MarkAfterPuback = "mark-after-puback", Safety, mark_after_puback;
    /// Every `acked` follows, in the same actor incarnation, a commit or suppression of that delivery.
    AckAfterCommit = "ack-after-commit", Safety, ack_after_commit;
    /// Per aggregate, first publications go out in ascending `aggregate_seq`.
    AggregateOrder = "aggregate-order", Safety, aggregate_order;
    /// Commits step the counter by exactly their amount; the observed counter is their sum.
    CounterExact = "counter-exact", Safety, counter_exact;
    /// The observed totals agree with the trace.
    ObservedAgrees = "observed-agrees", Safety, observed_agrees;
    /// No event has more than one `external_applied`.
    ExternalSingleEffect = "external-single-effect", Safety, external_single_effect;
    /// On a recovered run, every accepted task has an effect.
    NoLostTask = "no-lost-task", Liveness, no_lost_task;
}

/// A three-valued verdict for one invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// The invariant holds on this history.
    Pass,
    /// The history could not decide it (a precondition failed, or the run never recovered).
    Unknown,
    /// The invariant is broken; see the violations.
    Fail,
}

impl Verdict {
    /// `pass`, `fail` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        }
    }
}

/// Why a verdict is unknown, or a remark on a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// No publication carries, or can be tied to, an aggregate.
    NoAggregateInfo,
    /// No `external_*` rows.
    NoExternalCalls,
    /// No `run_end` row.
    NoRunEnd,
    /// `run_end.recovered` is false.
    NotRecovered,
    /// `run_end` has no boolean `recovered`.
    RecoveredMissing,
    /// No `observed` row.
    NoObserved,
    /// The last `observed` row has no `counter`.
    NoObservedCounter,
    /// The last `observed` row has none of the totals compared.
    NoObservedTotals,
    /// None of the rows the check needs carries a `store_rev` (the source does not report the
    /// stores' transaction numbers).
    NoStoreRev,
    /// The violations found involve an actor life that ends without its own `crash` row while a
    /// later life of the same actor exists: spans it never exported could remove them.
    MayHaveLostSpans {
        /// The actor.
        actor: String,
        /// The life that may be incomplete.
        incarnation: u32,
    },
    /// Rows the check needed lacked a required field and were skipped.
    MissingFields {
        /// The kind of the skipped rows.
        kind: Kind,
        /// The missing column.
        column: &'static str,
        /// How many rows.
        rows: u64,
    },
}

/// What exactly broke, with the values the explanation needs. Row fields are indices into
/// [`History::rows`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// More than one `effect_committed` for one event (or, across events, one task).
    MultipleEffects {
        /// Whether the key is the task rather than the event.
        by_task: bool,
        /// The commits.
        commits: Vec<usize>,
    },
    /// A `task_accepted` with no `intent_recorded` of its event.
    IntentMissing {
        /// The `task_accepted` row.
        accepted: usize,
    },
    /// A `task_accepted` whose event's intent was committed in another transaction.
    IntentOtherRev {
        /// The `task_accepted` row.
        accepted: usize,
        /// The `intent_recorded` row.
        intent: usize,
    },
    /// An `outbox_marked` with no earlier `publish_acked` of its event.
    MarkBeforePuback {
        /// The `outbox_marked` row.
        mark: usize,
        /// The first `publish_acked` of the event, if it came later.
        later_puback: Option<usize>,
    },
    /// An `acked` with no commit or suppression between its delivery and itself.
    AckBeforeCommit {
        /// The delivery the ack answers, if one was found.
        delivery: Option<usize>,
        /// The `acked` row.
        ack: usize,
        /// The next commit or suppression of the event after the ack, if any.
        later_settle: Option<usize>,
        /// The crash of the acking incarnation, if it died after the ack.
        crash: Option<usize>,
    },
    /// A first publication with a lower `aggregate_seq` than one published before it.
    AggregateOutOfOrder {
        /// The aggregate.
        aggregate: Id,
        /// The earlier publication (higher `aggregate_seq`).
        earlier: usize,
        /// Its `aggregate_seq`.
        earlier_seq: u64,
        /// The later publication (lower `aggregate_seq`).
        later: usize,
        /// Its `aggregate_seq`.
        later_seq: u64,
    },
    /// A commit whose counter is not the previous counter plus its amount.
    CounterStep {
        /// The commit.
        commit: usize,
        /// The commit before it in `store_rev` order, if any.
        prev: Option<usize>,
        /// Previous counter + amount.
        expected: i64,
        /// The row's counter.
        found: i64,
    },
    /// The observed counter differs from the start plus the committed amounts.
    CounterFinal {
        /// The `observed` row.
        observed_row: usize,
        /// Its `counter`.
        observed: i64,
        /// Start + sum of committed amounts.
        expected: i64,
    },
    /// An observed total disagrees with the trace.
    ObservedMismatch {
        /// The `observed` row.
        observed_row: usize,
        /// Which total.
        total: Total,
        /// Its value.
        observed: i64,
        /// What the trace says.
        trace: i64,
        /// True when `observed >= trace` was required, false for equality.
        at_least: bool,
    },
    /// More than one `external_applied` for one event.
    ExternalTwice {
        /// The `external_applied` rows.
        applied: Vec<usize>,
    },
    /// A task accepted on a recovered run that never got an effect.
    LostTask {
        /// The `task_accepted` row.
        accepted: usize,
    },
}

/// A ground-truth total of the `observed` row that the trace can count too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    /// `results`: effect results stored.
    Results,
    /// `processed`: a synonym of `results`.
    Processed,
    /// `dedup_keys`: dedup keys stored.
    DedupKeys,
    /// `stream_messages`: copies the broker holds.
    StreamMessages,
    /// `tasks`: tasks in the store.
    Tasks,
    /// `outbox_published + outbox_pending`: outbox records in the store.
    Intents,
}

impl Total {
    /// The `observed` key(s) it is read from.
    pub fn key(self) -> &'static str {
        match self {
            Total::Results => "results",
            Total::Processed => "processed",
            Total::DedupKeys => "dedup_keys",
            Total::StreamMessages => "stream_messages",
            Total::Tasks => "tasks",
            Total::Intents => "outbox_published + outbox_pending",
        }
    }
}

/// One violation: who it concerns, what broke, and the rows that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The event concerned.
    pub event: Option<Id>,
    /// The task concerned.
    pub task: Option<Id>,
    /// What broke.
    pub finding: Finding,
    /// Row indices, ascending (that is, in `seq` order).
    pub witness: Vec<usize>,
}

impl Violation {
    /// A violation with its witness rows sorted and deduplicated.
    pub fn new(
        event: Option<Id>,
        task: Option<Id>,
        finding: Finding,
        mut witness: Vec<usize>,
    ) -> Self {
        witness.sort_unstable();
        witness.dedup();
        Violation {
            event,
            task,
            finding,
            witness,
        }
    }
}

/// The result of one invariant on one history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Which invariant.
    pub invariant: Invariant,
    /// Pass, fail or unknown.
    pub verdict: Verdict,
    /// Why unknown, or a remark on a pass.
    pub reason: Option<Reason>,
    /// Up to [`EXAMPLES`] violations, earliest first.
    pub violations: Vec<Violation>,
    /// How many more violations there were.
    pub more: usize,
}

impl Outcome {
    /// Pass, with an optional remark.
    pub fn pass(invariant: Invariant, reason: Option<Reason>) -> Self {
        Outcome {
            invariant,
            verdict: Verdict::Pass,
            reason,
            violations: Vec::new(),
            more: 0,
        }
    }

    /// Unknown, with its reason.
    pub fn unknown(invariant: Invariant, reason: Reason) -> Self {
        Outcome {
            verdict: Verdict::Unknown,
            reason: Some(reason),
            ..Outcome::pass(invariant, None)
        }
    }

    /// Fail when there are violations (`kept` examples and `more` counted), else unknown when
    /// `incomplete` says the check could not see everything, else pass.
    pub fn judge(
        invariant: Invariant,
        kept: Vec<Violation>,
        more: usize,
        incomplete: Option<Reason>,
    ) -> Self {
        if kept.is_empty() {
            return match incomplete {
                Some(reason) => Outcome::unknown(invariant, reason),
                None => Outcome::pass(invariant, None),
            };
        }
        Outcome {
            invariant,
            verdict: Verdict::Fail,
            reason: incomplete,
            violations: kept,
            more,
        }
    }
}

/// Keeps the earliest [`EXAMPLES`] items by a sort key and counts the rest.
pub fn earliest<T>(mut items: Vec<(usize, T)>) -> (Vec<T>, usize) {
    items.sort_by_key(|(at, _)| *at);
    let more = items.len().saturating_sub(EXAMPLES);
    items.truncate(EXAMPLES);
    (items.into_iter().map(|(_, t)| t).collect(), more)
}

/// A row index as `u32`, to keep per-id tables small: a history indexes its rows by kind with
/// `u32`s already, so they fit.
pub fn row32(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// A row position or none, in four bytes: per-id tables hold millions of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos(u32);

impl Pos {
    /// No position.
    pub const NONE: Pos = Pos(u32::MAX);

    /// Position `at` (a history cannot hold 2^32 rows in memory, nor a streamed scenario
    /// number them here).
    pub fn at(at: usize) -> Pos {
        Pos(u32::try_from(at).unwrap_or(u32::MAX - 1).min(u32::MAX - 1))
    }

    /// The position, if any.
    pub fn get(self) -> Option<usize> {
        (self != Pos::NONE).then_some(self.0 as usize)
    }
}

/// Counts rows a check had to skip because a field it needs is missing.
#[derive(Debug, Default)]
pub struct Skips(BTreeMap<(Kind, &'static str), u64>);

impl Skips {
    /// Whether `row` has all `fields`; counts it as skipped if not.
    #[inline]
    pub fn usable(&mut self, row: &Row, fields: &[Field]) -> bool {
        match fields.iter().find(|f| !row.has(**f)) {
            None => true,
            Some(f) => {
                *self.0.entry((row.kind, f.column())).or_default() += 1;
                false
            }
        }
    }

    /// The first kind of skipped row as a reason, if any row was skipped.
    pub fn reason(&self) -> Option<Reason> {
        self.0
            .iter()
            .next()
            .map(|(&(kind, column), &rows)| Reason::MissingFields { kind, column, rows })
    }
}

/// Every invariant's outcome on one history, in the contract's order: the rules see the rows
/// once (and a second time only to gather the witnesses of violations).
///
/// Violations that spans a killed process never exported could remove become unknown (see
/// `lost_spans`).
pub fn check_all(h: &History, names: &crate::intern::Interner) -> Vec<Outcome> {
    let mut scanned = scan_history(h);
    if let Some(mut gathering) = scanned.gathering() {
        for (at, r) in h.rows.iter().enumerate() {
            gathering.row(at, r);
        }
        gathering.finish(&mut scanned);
    }
    scanned.settle(h, names)
}

/// Histories at least this long are scanned on two threads, each deciding half the rules.
const PARALLEL_ROWS: usize = 100_000;

/// Every rule's decision on a history held in memory.
fn scan_history(h: &History) -> Scanned {
    let scan = |invariants: &[Invariant]| {
        let mut scan = Scan::of(invariants);
        scan.history(h);
        scan.finish()
    };
    if h.rows.len() < PARALLEL_ROWS {
        return scan(Invariant::ALL);
    }
    let (first, second) = Invariant::ALL.split_at(Invariant::ALL.len() / 2);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| scan(second));
        let mut scanned = scan(first);
        let other = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        scanned.append(other);
        scanned
    })
}

/// One invariant decided online. [`Rule::row`] sees every row of a scenario, in `seq` order,
/// with its position (its index in the scenario's rows); [`Rule::finish`] decides.
pub trait Rule: Send {
    /// The kinds of rows the rule reads: it is handed only those.
    fn kinds(&self) -> &'static [Kind];
    /// Takes the row at position `at` (of one of [`Rule::kinds`]).
    fn row(&mut self, at: usize, r: &Row);
    /// The verdict, once every row has been seen.
    fn finish(self: Box<Self>, ends: &Ends) -> Decision;
}

/// A rule's verdict, and what it still needs to complete its witnesses.
pub struct Decision {
    /// The outcome. Its violations' witnesses are complete unless `gather` is set.
    pub outcome: Outcome,
    /// Sees the rows again and completes the witnesses of `outcome`'s violations.
    pub gather: Option<Box<dyn Gather>>,
}

impl From<Outcome> for Decision {
    fn from(outcome: Outcome) -> Self {
        Decision {
            outcome,
            gather: None,
        }
    }
}

/// The second look at the rows, for the few violations kept as examples: state only for their
/// events, tasks and actor lives.
pub trait Gather: Send {
    /// Takes the row at position `at` (every row again, in the same order).
    fn row(&mut self, at: usize, r: &Row);
    /// Completes the witnesses of `outcome`'s violations.
    fn finish(self: Box<Self>, outcome: &mut Outcome);
}

/// The rows of a scenario that rules consult at the end, kept while the rows pass: the first
/// `run_start`, the last `observed` and the last `run_end`, with their details decoded.
#[derive(Debug, Clone, Default)]
pub struct Ends {
    /// The first `run_start` row's detail, if it has one.
    pub run_start: Option<RunStart>,
    /// The last `observed` row's position and ground truth (every total absent when its detail
    /// is missing or not an object).
    pub observed: Option<(usize, Observed)>,
    /// The last `run_end` row's position and detail.
    pub run_end: Option<(usize, Option<RunEnd>)>,
    /// Whether a `run_start` row was seen (its detail may be missing).
    started: bool,
}

impl Ends {
    /// Takes a row and its decoded detail.
    pub fn row(&mut self, at: usize, r: &Row, detail: Option<&Detail>) {
        match r.kind {
            Kind::RunStart if !self.started => {
                self.started = true;
                self.run_start = detail.and_then(Detail::run_start).cloned();
            }
            Kind::Observed => {
                let observed = detail.and_then(Detail::observed).cloned();
                self.observed = Some((at, observed.unwrap_or_default()));
            }
            Kind::RunEnd => {
                self.run_end = Some((at, detail.and_then(Detail::run_end).cloned()));
            }
            _ => {}
        }
    }
}
