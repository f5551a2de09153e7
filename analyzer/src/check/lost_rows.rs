//! The contract's rule for rows lost against the store: where the last `observed` row shows the
//! store holding more than the trace reports (`tasks_done` above the tasks with an effect,
//! `results` or `dedup_keys` above the `effect_committed` rows, outbox rows above the distinct
//! intents), rows never reached the trace (spans a process never exported, steps never given a
//! span). A violation such rows could remove is then `unknown`, the reason naming the counts
//! (the `lost_rows` column of the invariant table, [`LostRows`]):
//!
//! - `ack-after-commit` and `counter-exact`, when effects are missing: a missing commit (or a
//!   missing suppression, which the store does not count) could answer any ACK, and any missing
//!   commit changes the counter's steps and total;
//! - `no-lost-task`, when effects are missing and no more tasks lack one than effects are missing;
//! - `intent-atomic`, when intents are missing and no more acceptances lack one than intents are
//!   missing.
//!
//! `observed-agrees` states the disagreement itself, which is true of the trace and the store:
//! it fails, with the counts; but where some actor life may have lost rows (see `lost_spans`), a
//! total the store holds more of than the trace is the trace's shortfall, and `unknown` naming
//! that life. So it is where the scenario's own wire fault lost commit replies ([`own_fault`]):
//! the store holds no more effects beyond the trace than replies were lost, and agrees with
//! itself (results, dedup keys and tasks done equal), so a retry that found its commit and did
//! not report it explains the difference; a retry that applied the effect again (results above
//! dedup keys or tasks done) does not, and still fails. Duplicates (`single-effect`,
//! `external-single-effect`) stay failures: missing rows only hide them.

use std::collections::BTreeSet;

use outbox_trace::detail::Observed;
use outbox_trace::Kind;

use super::outcome::{Held, Shortfall, Total};
use super::rule::Ends;
use super::{Finding, LostRows, Outcome, Reason, Stored, Verdict, Violation, EXAMPLES};
use crate::model::intern::{Id, IdSet, Interner};
use crate::model::row::Row;

/// What the trace counts of the store's totals, seen row by row.
#[derive(Debug, Default)]
pub struct Traced {
    effects: i64,
    effect_tasks: IdSet,
    intents: IdSet,
}

impl Traced {
    /// Takes a row.
    #[inline]
    pub fn row(&mut self, r: &Row) {
        match r.kind {
            Kind::EffectCommitted => {
                self.effects += 1;
                if let Some(t) = r.task {
                    self.effect_tasks.insert(t);
                }
            }
            Kind::IntentRecorded => {
                if let Some(e) = r.event {
                    self.intents.insert(e);
                }
            }
            _ => {}
        }
    }

    /// The shortfalls the `observed` totals show: of effects (the first of `tasks_done`,
    /// `results`, `dedup_keys` with the most missing) and of intents.
    pub fn shortfalls(&self, observed: Option<&Observed>) -> Shortfalls {
        let Some(o) = observed else {
            return Shortfalls::default();
        };
        let short = |held, store: Option<i64>, trace: i64| {
            store
                .filter(|&s| s > trace)
                .map(|store| Shortfall { held, store, trace })
        };
        let effects = [
            short(Held::TasksDone, o.tasks_done, self.effect_tasks.members()),
            short(Held::Results, o.results(), self.effects),
            short(Held::DedupKeys, o.dedup_keys, self.effects),
        ]
        .into_iter()
        .flatten()
        .fold(None, |best: Option<Shortfall>, s| match best {
            Some(b) if b.missing() >= s.missing() => Some(b),
            _ => Some(s),
        });
        let outbox = match (o.outbox_published, o.outbox_pending) {
            (Some(p), Some(q)) => Some(p.saturating_add(q)),
            _ => None,
        };
        Shortfalls {
            effects,
            intents: short(Held::OutboxRows, outbox, self.intents.members()),
        }
    }
}

/// What the store holds beyond the trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shortfalls {
    /// Effects the trace lacks.
    pub effects: Option<Shortfall>,
    /// Intents the trace lacks.
    pub intents: Option<Shortfall>,
}

impl Shortfalls {
    /// The shortfall of `stored`.
    pub fn of(self, stored: Stored) -> Option<Shortfall> {
        match stored {
            Stored::Effects => self.effects,
            Stored::Intents => self.intents,
        }
    }
}

/// Whether an `observed-agrees` violation says the store holds more than the trace (what rows
/// missing from the trace explain), rather than less.
pub fn store_holds_more(v: &Violation) -> bool {
    matches!(
        v.finding,
        Finding::ObservedMismatch {
            observed,
            trace,
            at_least: false,
            ..
        } if observed > trace
    )
}

/// [`Reason::RepliesLost`] where the scenario's own wire fault lost commit replies that explain
/// the effects the store holds beyond the trace: no more are missing than replies were lost, and
/// the store agrees with itself (those of `results`, `dedup_keys`, `tasks_done` it gives are
/// equal).
pub fn own_fault(ends: &Ends, short: Shortfalls) -> Option<Reason> {
    let lost = ends.replies_lost.as_ref()?;
    let short = short.effects?;
    let (_, o) = ends.observed.as_ref()?;
    let figures: Vec<i64> = [o.results(), o.dedup_keys, o.tasks_done]
        .into_iter()
        .flatten()
        .collect();
    let agrees = figures.windows(2).all(|w| w[0] == w[1]);
    let covered = lost
        .replies
        .is_none_or(|n| short.missing() <= i64::try_from(n).unwrap_or(i64::MAX));
    (agrees && covered).then(|| Reason::RepliesLost {
        lost: lost.clone(),
        short,
    })
}

/// Makes the failures honest about the rows the store shows missing, and about the totals of
/// `observed-agrees` that lives which may have lost rows (`lossy`), or the scenario's own fault
/// (`own`, from [`own_fault`]), explain.
pub fn apply(
    short: Shortfalls,
    lossy: &BTreeSet<(Id, u32)>,
    own: Option<Reason>,
    names: &Interner,
    outcomes: &mut [Outcome],
) {
    for o in outcomes.iter_mut().filter(|o| o.verdict == Verdict::Fail) {
        let found = (o.violations.len() + o.more) as i64;
        let lost = match o.invariant.lost_rows() {
            LostRows::Any(stored) => short.of(stored),
            LostRows::Covers(stored) => short.of(stored).filter(|s| found <= s.missing()),
            LostRows::Totals => {
                match &own {
                    Some(reason) if lossy.is_empty() => by_own_fault(o, reason),
                    _ => observed_agrees(o, lossy, names),
                }
                continue;
            }
            LostRows::Never => None,
        };
        if let Some(s) = lost {
            *o = Outcome::unknown(o.invariant, Reason::StoreHoldsMore(s));
        }
    }
}

/// `observed-agrees` where the scenario's own fault lost commit replies: the effect totals the
/// store holds more of go; the outcome is unknown, for `reason`, when none is left.
fn by_own_fault(o: &mut Outcome, reason: &Reason) {
    let effects = |v: &Violation| {
        store_holds_more(v)
            && matches!(
                v.finding,
                Finding::ObservedMismatch {
                    total: Total::Results | Total::Processed | Total::DedupKeys,
                    ..
                }
            )
    };
    o.violations.retain(|v| !effects(v));
    if o.violations.is_empty() {
        *o = Outcome::unknown(o.invariant, reason.clone());
        return;
    }
    o.more = o.violations.len().saturating_sub(EXAMPLES);
    o.violations.truncate(EXAMPLES);
}

/// `observed-agrees` (whose rule keeps all its violations: there are at most six): where some
/// life may have lost rows, the totals the store holds more of go, and the outcome is unknown
/// when none is left; then the earliest [`EXAMPLES`] are kept.
fn observed_agrees(o: &mut Outcome, lossy: &BTreeSet<(Id, u32)>, names: &Interner) {
    let (gone, kept): (Vec<Violation>, Vec<Violation>) = match lossy.iter().next() {
        Some(_) => o.violations.drain(..).partition(store_holds_more),
        None => (Vec::new(), std::mem::take(&mut o.violations)),
    };
    if let (true, Some(&(actor, incarnation))) = (kept.is_empty(), lossy.iter().next()) {
        let Some(first) = gone.first() else { return };
        let Finding::ObservedMismatch {
            total,
            observed,
            trace,
            ..
        } = first.finding
        else {
            return;
        };
        let reason = Reason::TraceShort {
            total,
            store: observed,
            trace,
            actor: names.name(actor).to_string(),
            incarnation,
            others: lossy.len() - 1,
        };
        *o = Outcome::unknown(o.invariant, reason);
        return;
    }
    let more = kept.len().saturating_sub(EXAMPLES);
    o.violations = kept;
    o.violations.truncate(EXAMPLES);
    o.more = more;
}
