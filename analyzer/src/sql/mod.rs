//! The invariants as one SQL statement, for checking a trace on an engine that already holds it
//! (DuckDB, DataFusion, Spark): `analyzer sql` prints it.
//!
//! One file per invariant, mirroring `crate::check`: each adds its common table expressions and
//! describes itself as a `Part`: its violations (one row each, keyed by the `seq` of the row
//! where it shows, `vat`), their witness rows (`vat`, `wseq`), and the per-scenario conditions of
//! its verdict (rows it had to skip, verdicts decided before looking for violations), written as
//! expressions over one row per scenario.
//!
//! The statement is shaped for engines that do not materialise common table expressions
//! (DataFusion and Spark expand each reference anew): the trace is scanned by a few grouped
//! aggregates, not joined with itself. Every per-scenario figure an invariant needs (skipped
//! rows, row counts, sums) is one column of ONE `GROUP BY run_id, scenario` over the trace
//! (`Query::fact`), and every `detail` field one column of a table built from the few
//! `run_start`, `observed` and `run_end` rows (`Query::note`); both meet in `scen`. An
//! invariant that compares rows per event, task or actor life first groups by that key and keeps
//! only the keys that can hold a violation; only their rows are joined or windowed (the orders
//! `aggregate-order` and `counter-exact` follow are windowed over the rows they compare, with a
//! running frame). The verdicts
//! of every invariant are columns of one row per scenario (`wide`), which a cross join with the
//! invariants' positions turns into one row per `(run_id, scenario, invariant)`. This module also
//! applies the verdict rule of [`crate::check::Outcome::judge`] and the lost-span rule of
//! `crate::check::lost_spans`; [`Dialect`] spells the few functions that differ.
//!
//! The result has one row per `(run_id, scenario, invariant)`: `run_id`, `scenario`,
//! `invariant`, `verdict` (`pass`, `fail`, `unknown`), `violations` (what `check --json` counts:
//! its `violations` plus `more`) and `reason` (why it failed with skipped rows or is unknown, or a
//! pass's note; null otherwise).
//!
//! Two differences from the native checker, both about naming rather than deciding: the SQL
//! checks each `(run_id, scenario)` of the table as a whole (the native checker reads each file on
//! its own), and when several actor lives may have lost rows, the life an unknown names for
//! `no-lost-task`, `counter-exact` and `observed-agrees` is the earliest lossy one, by the actor's
//! first row (the native checker prefers one its witness rows touch).

mod ack_after_commit;
mod aggregate_order;
mod counter_exact;
mod coverage;
mod dialect;
mod evidence;
mod external_single_effect;
mod intent_atomic;
mod lost_rows;
mod mark_after_puback;
mod no_lost_task;
mod observed_agrees;
mod query;
mod single_effect;
mod statement;

pub use dialect::{Dialect, DialectError};
pub use statement::{statement, witnesses, Request};
