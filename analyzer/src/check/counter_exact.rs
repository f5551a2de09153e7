//! `counter-exact`: `effect_committed` rows in `store_rev` order (ties by `seq`) step the counter by
//! exactly their `amount`, starting from 0 (or `run_start.detail.counter_start`); and the last
//! `observed` row's `counter` equals the start plus the sum of committed amounts.
//!
//! Commits are kept compactly (revision, amount, counter) and ordered at the end.

use outbox_trace::{Field, Kind};

use super::{
    earliest, row32, Decision, Ends, Finding, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::history::Row;
use crate::intern::Id;

/// A usable commit.
struct Commit {
    rev: i64,
    amount: i64,
    counter: i64,
    at: u32,
    event: Option<Id>,
    task: Option<Id>,
}

/// Decides `counter-exact`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    commits: Vec<Commit>,
    /// Whether any commit was seen, and whether any carried a `store_rev`.
    any: bool,
    revs: bool,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::EffectCommitted]
    }

    fn row(&mut self, at: usize, r: &Row) {
        if r.kind != Kind::EffectCommitted {
            return;
        }
        self.any = true;
        self.revs |= r.store_rev().is_some();
        if !self
            .skips
            .usable(r, &[Field::StoreRev, Field::Amount, Field::Counter])
        {
            return;
        }
        if let (Some(rev), Some(amount), Some(counter)) = (r.store_rev(), r.amount(), r.counter()) {
            self.commits.push(Commit {
                rev,
                amount,
                counter,
                at: row32(at),
                event: r.event,
                task: r.task,
            });
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Without the stores' transaction numbers the commits have no order to step the counter in.
        if self.any && !self.revs {
            return Outcome::unknown(Invariant::CounterExact, Reason::NoStoreRev).into();
        }
        // A skipped commit would make every later step look wrong: decide nothing then.
        if let Some(reason) = self.skips.reason() {
            return Outcome::unknown(Invariant::CounterExact, reason).into();
        }
        let mut commits = self.commits;
        // Commits came in seq order, so a stable sort by store_rev breaks ties by seq.
        if !commits.is_sorted_by_key(|c| c.rev) {
            commits.sort_by_key(|c| c.rev);
        }
        let start = ends
            .run_start
            .as_ref()
            .and_then(|d| d.counter_start)
            .unwrap_or(0);
        let mut found = Vec::new();
        let mut value = start;
        let mut sum = start;
        let mut prev = None;
        for c in &commits {
            let at = c.at as usize;
            let expected = value.saturating_add(c.amount);
            sum = sum.saturating_add(c.amount);
            if c.counter != expected {
                let finding = Finding::CounterStep {
                    commit: at,
                    prev,
                    expected,
                    found: c.counter,
                };
                let mut witness = vec![at];
                witness.extend(prev);
                found.push((at, Violation::new(c.event, c.task, finding, witness)));
            }
            // Go on from the value the store reported, so one bad step is reported once.
            value = c.counter;
            prev = Some(at);
        }
        let observed = ends
            .observed
            .as_ref()
            .and_then(|(at, o)| o.counter.map(|c| (*at, c)));
        let mut incomplete = None;
        match observed {
            Some((at, counter)) if counter != sum => {
                let finding = Finding::CounterFinal {
                    observed_row: at,
                    observed: counter,
                    expected: sum,
                };
                found.push((at, Violation::new(None, None, finding, vec![at])));
            }
            Some(_) => {}
            None => incomplete = Some(Reason::NoObservedCounter),
        }
        let (kept, more) = earliest(found);
        Outcome::judge(Invariant::CounterExact, kept, more, incomplete).into()
    }
}
