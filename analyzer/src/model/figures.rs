//! The figures of one history, counted with the contract's one definition
//! ([`outbox_trace::figures`]): the same numbers `analyzer check --json`, the report's `lab.json`,
//! `analyzer compare` and the recorder's own summary give.

use outbox_trace::{FigureRow, FigureTally};

use crate::model::intern::Id;
use crate::model::row::Row;

/// Counts one row (the tally passes over rows of kinds no figure counts).
pub fn add(tally: &mut FigureTally<Id>, r: &Row) {
    tally.add(FigureRow {
        kind: r.kind,
        task: r.task,
        broker_seq: r.broker_seq(),
        partition: r.partition(),
        store_rev: r.store_rev(),
        counter: r.counter(),
    });
}
