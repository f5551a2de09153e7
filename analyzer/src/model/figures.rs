//! The figures of one history, counted with the contract's one definition
//! ([`outbox_trace::figures`]): the same numbers `analyzer check --json`, the report's `lab.json`,
//! `analyzer compare` and the recorder's own summary give.

use outbox_trace::{FigureRow, FigureTally, Figures, Kind};

use crate::model::history::History;
use crate::model::intern::Id;
use crate::model::row::Row;

/// The kinds any figure counts.
const COUNTED: &[Kind] = &[
    Kind::TaskAccepted,
    Kind::PublishAttempt,
    Kind::PublishAcked,
    Kind::PublishUnacked,
    Kind::Delivered,
    Kind::Redelivered,
    Kind::DuplicateSuppressed,
    Kind::EffectCommitted,
    Kind::CommitConflict,
    Kind::Acked,
    Kind::Crash,
];

/// Counts one row (the tally passes over rows of kinds no figure counts).
pub fn add(tally: &mut FigureTally<Id>, r: &Row) {
    tally.add(FigureRow {
        kind: r.kind,
        task: r.task,
        broker_seq: r.broker_seq(),
        store_rev: r.store_rev(),
        counter: r.counter(),
    });
}

/// The figures of `h`, visiting only the rows of the kinds counted.
pub fn of(h: &History) -> Figures {
    let mut tally: FigureTally<Id> = FigureTally::default();
    for &kind in COUNTED {
        for (_, r) in h.of(kind) {
            add(&mut tally, r);
        }
    }
    if let Some((_, observed)) = h.observed() {
        tally.observe(observed);
    }
    tally.figures()
}
