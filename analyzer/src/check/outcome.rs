//! What deciding an invariant yields, as data: a [`Verdict`], an optional [`Reason`], and
//! violations as row positions and values, never text (`crate::explain` words them).

use outbox_trace::{detail_key, Kind};

use super::invariant::Invariant;
#[cfg(doc)]
use crate::model::history::History;
use crate::model::intern::Id;

/// How many violations of one invariant are kept as examples; the rest are only counted.
pub const EXAMPLES: usize = 3;

/// A three-valued verdict for one invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Left out on request (`analyzer check --skip`): not part of any verdict.
    Skipped,
    /// The invariant holds on this history.
    Pass,
    /// The history could not decide it (a precondition failed, or the run never recovered).
    Unknown,
    /// The invariant is broken; see the violations.
    Fail,
}

impl Verdict {
    /// `pass`, `fail`, `unknown` or `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
            Verdict::Skipped => "skipped",
        }
    }
}

/// Why a verdict is unknown, or a remark on a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The scenario has no row of these kinds (and its producer did not declare that it reports
    /// them), though the invariant needs them to judge what the trace holds.
    NoRows(&'static [Kind]),
    /// The producer refused spans of this kind for want of columns it requires, or for the
    /// reasons it gives (a step it could not read from the wire, an export it could not place;
    /// see `run_end.detail.refused`): rows of it are missing, and could change the verdict.
    Refused {
        /// The kind; `None` for spans that named no kind (`run_end.detail.refused["(none)"]`).
        kind: Option<Kind>,
        /// How many spans.
        spans: u64,
        /// The columns they lacked.
        missing: Vec<String>,
        /// The producer's other reasons.
        reasons: Vec<String>,
    },
    /// The scenario has no row of these kinds and the producer counted spans that mapped to no
    /// kind (`run_end.detail.unmapped`): they may have been such rows.
    Unmapped {
        /// The kinds without rows.
        kinds: &'static [Kind],
        /// How many spans mapped to no kind.
        spans: u64,
        /// Some of their names.
        names: Vec<String>,
    },
    /// An `acked` without a position, in an actor life that held two copies of its event at
    /// once: which delivery it answers cannot be told.
    TwoCopies {
        /// How many such ACKs.
        acks: usize,
    },
    /// No publication carries, or can be tied to, an aggregate.
    NoAggregateInfo,
    /// No `external_*` rows.
    NoExternalCalls,
    /// `sources-agree`: the scenario reads no step from the wire (no `wire_steps`).
    OneSource,
    /// `sources-agree`: the scenario reads steps from the wire and the process reported none of
    /// them in its spans.
    NoSpanAccounts,
    /// `sources-agree`: disagreements on actor lives that crashed or that a wire fault hit,
    /// which the fault explains: not judged.
    FaultHitLives {
        /// How many disagreements.
        disagreements: usize,
    },
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
        /// The actor whose life may have lost rows (its lives are `actor#incarnation`).
        actor: String,
        /// The life that may be incomplete.
        incarnation: u32,
    },
    /// The store holds more than the trace (see `lost_rows`): rows the violations need could be
    /// among those missing.
    StoreHoldsMore(Shortfall),
    /// `observed-agrees`: the store holds more of a total than the trace counts, and an actor
    /// life may have lost rows, which would explain it.
    TraceShort {
        /// The total.
        total: Total,
        /// The store's value.
        store: i64,
        /// The trace's count.
        trace: i64,
        /// The first life that may have lost rows: its actor,
        actor: String,
        /// and its incarnation.
        incarnation: u32,
        /// How many more lives may have.
        others: usize,
    },
    /// The scenario was cut short (`run_end` missing, or `interrupted`): the store was read
    /// while the scenario may still have been running, so a comparison with it is no evidence.
    CutShort {
        /// Whether the `run_end` row is missing (else it says `interrupted`).
        no_run_end: bool,
    },
    /// `observed-agrees`: the store holds more effects than the trace, and the scenario's own
    /// wire fault lost at least as many commit replies while the store agrees with itself: a
    /// retry that found its commit and did not report it would explain it.
    RepliesLost {
        /// What the fault lost.
        lost: RepliesLost,
        /// What the store holds beyond the trace.
        short: Shortfall,
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

/// Replies to commits that the scenario's own wire faults lost (`fault` rows of
/// `lose-commit-reply`, or `drop-replies` that dropped bytes): the commit happened, its reply
/// never reached the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepliesLost {
    /// The first such fault's kind, as its row names it.
    pub fault: outbox_trace::FaultKind,
    /// Its target, as its row names it.
    pub target: Option<String>,
    /// How many replies; `None` when a fault dropped bytes without counting messages (any
    /// number may have been replies to commits).
    pub replies: Option<u64>,
}

impl RepliesLost {
    /// Adds what the fault row `f` lost, if it lost replies.
    pub(super) fn add(lost: &mut Option<RepliesLost>, f: &outbox_trace::detail::Fault) {
        let counted = f.dropped_messages.is_some_and(|n| n > 0);
        let replies = match f.fault {
            outbox_trace::FaultKind::LoseCommitReply | outbox_trace::FaultKind::DropReplies
                if counted =>
            {
                f.dropped_messages
            }
            outbox_trace::FaultKind::DropReplies if f.dropped_bytes.is_some_and(|n| n > 0) => None,
            _ => return,
        };
        let into = lost.get_or_insert_with(|| RepliesLost {
            fault: f.fault.clone(),
            target: f.target.clone(),
            replies: Some(0),
        });
        // A lost commit reply names the fault before a drop of replies does.
        if f.fault == outbox_trace::FaultKind::LoseCommitReply {
            into.fault = f.fault.clone();
        }
        into.replies = into.replies.zip(replies).map(|(a, b)| a.saturating_add(b));
    }
}

/// What exactly broke, with the values the explanation needs. Row fields are indices into
/// [`History::rows`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// More than one `effect_committed` for one event (or, across events, one task).
    MultipleEffects {
        /// Whether the key is the task rather than the event.
        by_task: bool,
        /// The rows of every commit of that key: two or more, the witness of the double effect.
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
        /// The aggregate whose publications went out of order (the order is per aggregate).
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
        /// The counter (`counter_key`; none: the run's one counter).
        key: Option<Id>,
        /// The row of the commit whose step is wrong.
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
        /// The counter (`counter_key`; none: the run's one counter).
        key: Option<Id>,
        /// The row of the `observed` read, the witness of the final counter.
        observed_row: usize,
        /// The counter it read.
        observed: i64,
        /// Start + sum of committed amounts.
        expected: i64,
    },
    /// An observed total disagrees with the trace.
    ObservedMismatch {
        /// The row of the `observed` read that disagrees.
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
    /// One actor life's steps of one kind and event: the wire and the process's spans give
    /// different numbers of rows.
    SourcesDisagree {
        /// The step's kind.
        kind: Kind,
        /// The actor,
        actor: Id,
        /// and its life.
        incarnation: u32,
        /// How many rows the wire gave.
        wire: u32,
        /// How many rows the spans gave.
        span: u32,
        /// The wire's rows, in `seq` order (gathered).
        wire_rows: Vec<usize>,
        /// The spans' rows, in `seq` order (gathered).
        span_rows: Vec<usize>,
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
    /// Every total, in the order the reasons list them.
    pub const ALL: &'static [Total] = &[
        Total::Results,
        Total::Processed,
        Total::DedupKeys,
        Total::StreamMessages,
        Total::Tasks,
        Total::Intents,
    ];

    /// The `observed` key(s) it is read from, named by the contract's typed fields.
    pub fn key(self) -> String {
        match self {
            Total::Results => detail_key!(Observed.results).to_string(),
            Total::Processed => detail_key!(Observed.processed).to_string(),
            Total::DedupKeys => detail_key!(Observed.dedup_keys).to_string(),
            Total::StreamMessages => detail_key!(Observed.stream_messages).to_string(),
            Total::Tasks => detail_key!(Observed.tasks).to_string(),
            Total::Intents => format!(
                "{} + {}",
                detail_key!(Observed.outbox_published),
                detail_key!(Observed.outbox_pending)
            ),
        }
    }
}

/// A store total the trace can count too, as the lost-rows rule compares them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// `tasks_done` against the distinct tasks with an `effect_committed`.
    TasksDone,
    /// `results` (or `processed`) against the `effect_committed` rows.
    Results,
    /// `dedup_keys` against the `effect_committed` rows.
    DedupKeys,
    /// `outbox_published + outbox_pending` against the distinct intents.
    OutboxRows,
}

/// The store holds `store` of something the trace counts `trace` of, and `store > trace`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortfall {
    /// What is compared.
    pub held: Held,
    /// The store's total.
    pub store: i64,
    /// The trace's count.
    pub trace: i64,
}

impl Shortfall {
    /// How many rows at least are missing from the trace.
    pub fn missing(&self) -> i64 {
        self.store.saturating_sub(self.trace)
    }
}

/// One violation: who it concerns, what broke, and the rows that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The event it concerns, if any: what `analyzer chain --event` would draw.
    pub event: Option<Id>,
    /// The task it concerns, if any.
    pub task: Option<Id>,
    /// What broke, with the values its explanation needs.
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
    /// The invariant decided (outcomes are kept in the contract's order).
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

/// Keeps the earliest [`EXAMPLES`] items by a sort key and counts the rest, holding no more than
/// the examples however many items come.
pub fn earliest<K: Ord, T>(items: impl IntoIterator<Item = (K, T)>) -> (Vec<T>, usize) {
    let mut examples = Examples::default();
    for (key, item) in items {
        examples.push(key, item);
    }
    examples.into_parts()
}

/// The earliest [`EXAMPLES`] items by a sort key, and how many more came: violations beyond the
/// examples are counted, not held. Among items with equal keys the first pushed comes first.
#[derive(Debug)]
pub struct Examples<K, T> {
    /// At most [`EXAMPLES`] items, by ascending key.
    kept: Vec<(K, T)>,
    /// How many items were pushed and not kept.
    more: usize,
}

impl<K, T> Default for Examples<K, T> {
    fn default() -> Self {
        Examples {
            kept: Vec::new(),
            more: 0,
        }
    }
}

impl<K: Ord, T> Examples<K, T> {
    /// Takes an item: kept if it is among the earliest so far, else counted.
    pub fn push(&mut self, key: K, item: T) {
        let i = self.kept.partition_point(|(k, _)| *k <= key);
        if i >= EXAMPLES {
            self.more += 1;
            return;
        }
        self.kept.insert(i, (key, item));
        if self.kept.len() > EXAMPLES {
            self.kept.pop();
            self.more += 1;
        }
    }

    /// Whether no item came.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The items kept, earliest first, and how many more there were.
    pub fn into_parts(self) -> (Vec<T>, usize) {
        (self.kept.into_iter().map(|(_, t)| t).collect(), self.more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_keep_the_earliest_in_order_and_count_the_rest() {
        let mut examples = Examples::default();
        for at in (0..1_000_000usize).rev() {
            examples.push(at % 500_000, at);
        }
        assert!(examples.kept.capacity() <= 2 * EXAMPLES);
        let (kept, more) = examples.into_parts();
        // Equal keys keep the order they came in: 500,000 before 0.
        assert_eq!(kept, vec![500_000, 0, 500_001]);
        assert_eq!(more, 1_000_000 - EXAMPLES);
    }

    #[test]
    fn earliest_is_a_stable_sort_truncated() {
        let items = vec![(5, 'a'), (1, 'b'), (5, 'c'), (1, 'd'), (0, 'e')];
        let mut sorted = items.clone();
        sorted.sort_by_key(|(at, _)| *at);
        let expected: Vec<char> = sorted.iter().take(EXAMPLES).map(|&(_, c)| c).collect();
        assert_eq!(earliest(items), (expected, 2));
        assert_eq!(earliest(Vec::<(usize, char)>::new()), (vec![], 0));
    }
}
