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
//! `run_start`, `observed`, `run_end` and `fault` rows (`Query::note`); both meet in `scen`. An
//! invariant that compares rows per event, task or actor life first groups by that key and keeps
//! only the keys that can hold a violation; only their rows are joined or windowed (the orders
//! `aggregate-order` and `counter-exact` follow are windowed over the rows they compare, with a
//! running frame). The verdicts
//! of every invariant are columns of one row per scenario (`wide`), which a cross join with the
//! invariants' positions turns into one row per `(run_id, scenario, invariant)`.
//!
//! On top of each invariant's own rule the statement applies, in `check`'s order, the rules
//! that cut across them: zero rows of a judged kind where work happened, refused spans
//! (`run_end.detail.refused`, the `"(none)"` entry counting for every kind) and unmapped ones,
//! and what `run_start.detail.records` declares (`evidence`, `crate::check::Ends`); the
//! lost-span rule of `crate::check::lost_spans` and the lost-rows rule of
//! `crate::check::lost_rows`; then the last step of `crate::check::evidence::apply`. Within
//! invariants: `observed-agrees` compares a total only where the trace side is evidence and, for
//! `stream_messages`, only where a `publish_acked` carries a position; an ACK without a position
//! answers its life's latest delivery, unless the life held two copies (`unknown`); a run without
//! `run_end`, or interrupted, leaves `observed-agrees` and the final counter unknown; a
//! scenario's own wire fault that lost replies explains that many effects the store holds beyond
//! the trace. [`Dialect`] spells the few functions that differ.
//!
//! The result has one row per `(run_id, scenario, invariant)`: `run_id`, `scenario`,
//! `invariant`, `verdict` (`pass`, `fail`, `unknown`), `violations` (what `check --json` counts:
//! its `violations` plus `more`), `reason` (why it failed with skipped rows or is unknown, or a
//! pass's note; null otherwise), and the scenario's `scenario_verdict` (`valid`, `invalid`,
//! `unknown`: the worst of its invariants, `unknown` rather than `valid` where a named fault never
//! fired, `coverage`) and `unfired_named` (how many), as `check --json` gives them.
//!
//! What holds, and is tested (`analyzer/tests/it/sql.rs`: every committed fixture, the example
//! recordings and a corpus of generated traces with one of each rule, on DuckDB and DataFusion,
//! a few on Spark): the same verdicts, counts, reasons, scenario verdicts and exit codes as
//! `check`. What differs:
//! - naming: the SQL checks each `(run_id, scenario)` of the table as a whole (the native checker
//!   reads each file on its own), and when several actor lives may have lost rows, the life an
//!   unknown names for `no-lost-task`, `counter-exact` and `observed-agrees` is the earliest lossy
//!   one, by the actor's first row (the native checker prefers one its witness rows touch);
//! - reading `detail` as text: `run_end.detail.refused` and `unmapped` are read as the contract
//!   writes them (objects of numbers and lists of strings), and the entries of
//!   `run_end.detail.faults` are split at the `},{` between objects; a detail shaped otherwise
//!   (a fault spec holding `},{` or brackets, deeper objects in `refused`) is read wrongly, where
//!   `check` decodes it;
//! - the reasons of the rules for interrupted runs and for a scenario's own lost replies are the
//!   SQL's words: `check` gains those rules at the same time, and its words may differ;
//! - a scenario that reads steps from the wire (`run_start.detail.wire_steps`): the statement
//!   cannot tell the spans' accounts of those steps from the wire's rows (`check` judges the
//!   wire's alone, `crate::check::sources`), so it leaves every invariant of such a scenario
//!   `unknown`, saying why, where `check` decides (see `sources_agree.rs`).

mod ack_after_commit;
mod aggregate_order;
mod counter_exact;
mod coverage;
mod dialect;
mod evidence;
mod external_single_effect;
mod intent_atomic;
mod lost_rows;
mod lost_spans;
mod mark_after_puback;
mod no_lost_task;
mod observed_agrees;
mod query;
mod single_effect;
mod sources_agree;
mod statement;

pub use dialect::{Dialect, DialectError};
pub use statement::{statement, witnesses, Request};
