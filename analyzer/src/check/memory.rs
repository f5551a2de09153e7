//! The in-memory run: every rule over a [`History`] already loaded, on two threads when it is
//! long.

use outbox_trace::Figures;

use super::invariant::Invariant;
use super::outcome::Outcome;
use super::scan::{Scan, Scanned};
use crate::model::history::History;
use crate::model::intern::Interner;

/// Every invariant's outcome on one history, in the contract's order, and the history's
/// figures: the rules see the rows once (and a second time only to gather the witnesses of
/// violations), the figures counted as they pass.
///
/// Violations that spans a killed process never exported could remove become unknown (see
/// `lost_spans`).
pub fn check_all(h: &History, names: &Interner) -> (Vec<Outcome>, Figures) {
    let mut scanned = scan_history(h, names);
    if let Some(mut gathering) = scanned.gathering() {
        for (at, r) in h.rows.iter().enumerate() {
            gathering.row(at, r);
        }
        gathering.finish(&mut scanned);
    }
    let figures = scanned.figures.clone();
    (scanned.settle(h, names), figures)
}

/// Histories at least this long are scanned on two threads, each deciding half the rules.
const PARALLEL_ROWS: usize = 100_000;

/// Every rule's decision on a history held in memory.
fn scan_history(h: &History, names: &Interner) -> Scanned {
    let scan = |invariants: &[Invariant]| {
        let mut scan = Scan::of(invariants);
        scan.history(h);
        scan.finish(names)
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
