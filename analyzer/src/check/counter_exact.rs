//! `counter-exact`: `effect_committed` rows in `store_rev` order (ties by `seq`) step the counter by
//! exactly their `amount`, starting from 0 (or `run_start.detail.counter_start`); and the last
//! `observed` row's `counter` equals the start plus the sum of committed amounts.

use outbox_trace::{Field, Kind};

use super::{earliest, Finding, Invariant, Outcome, Reason, Skips, Violation};
use crate::history::History;

/// Decides `counter-exact`.
pub fn check(h: &History) -> Outcome {
    // Without the stores' transaction numbers the commits have no order to step the counter in.
    let commits = || h.of(Kind::EffectCommitted);
    if commits().next().is_some() && commits().all(|(_, r)| r.store_rev().is_none()) {
        return Outcome::unknown(Invariant::CounterExact, Reason::NoStoreRev);
    }
    let mut skips = Skips::default();
    let needed = [Field::StoreRev, Field::Amount, Field::Counter];
    let mut commits: Vec<usize> = Vec::new();
    for (at, r) in h.of(Kind::EffectCommitted) {
        if skips.usable(r, &needed) {
            commits.push(at);
        }
    }
    // A skipped commit would make every later step look wrong: decide nothing then.
    if let Some(reason) = skips.reason() {
        return Outcome::unknown(Invariant::CounterExact, reason);
    }
    // Rows are in seq order, so a stable sort by store_rev breaks ties by seq.
    let rev = |at: &usize| h.rows[*at].store_rev();
    if !commits.is_sorted_by_key(rev) {
        commits.sort_by_key(rev);
    }
    let start = h.run_start().and_then(|d| d.counter_start).unwrap_or(0);
    let mut found = Vec::new();
    let mut value = start;
    let mut sum = start;
    let mut prev = None;
    for &at in &commits {
        let r = &h.rows[at];
        let (amount, counter) = (r.amount().unwrap_or(0), r.counter().unwrap_or(0));
        let expected = value.saturating_add(amount);
        sum = sum.saturating_add(amount);
        if counter != expected {
            let finding = Finding::CounterStep {
                commit: at,
                prev,
                expected,
                found: counter,
            };
            let mut witness = vec![at];
            witness.extend(prev);
            found.push((at, Violation::new(r.event, r.task, finding, witness)));
        }
        // Go on from the value the store reported, so one bad step is reported once.
        value = counter;
        prev = Some(at);
    }
    let observed = h.observed().and_then(|(at, o)| o.counter.map(|c| (at, c)));
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
    Outcome::judge(Invariant::CounterExact, kept, more, incomplete)
}
