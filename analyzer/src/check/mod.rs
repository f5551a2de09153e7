//! The invariants of `outbox-trace/1`, one file each. Each is a [`Rule`]: it sees a scenario's rows
//! once, in `seq` order, keeping compact state per event, task, aggregate or actor life (never the
//! rows), and at the end returns an [`Outcome`]: a verdict, an optional [`Reason`], and violations
//! as data (row positions and values), never text. `crate::explain` turns them into words.
//!
//! The same rules decide a trace held in memory ([`check_all`] on a [`History`](crate::model::history::History)) and one streamed
//! from a file without holding its rows (`crate::check::streamed`): a row's position is its index in the
//! scenario's rows either way. A rule whose witness needs rows it did not keep hands back a
//! [`Gather`], which sees the rows a second time and fills the witnesses in.
//!
//! Every decision uses `seq` order within the run and the stores' own numbers (`store_rev`,
//! `broker_seq`, `aggregate_seq`); wall-clock `ts_ns` is never read.
//!
//! Files: [`invariant`] (the table), [`coverage`] (what a scenario tried: a named fault that
//! never fired leaves it `unknown`), [`outcome`] (what a decision is), [`rule`] (what a rule is),
//! one file per invariant, [`scan`] (the engine feeding every rule at once), `lost_spans` (the
//! contract's rule for rows a killed process never exported), [`lost_rows`] (its rule for rows
//! the store holds and the trace lacks, or its own wire fault lost the replies of), `cut_short`
//! (its rule for a scenario whose `run_end` is missing or interrupted), `evidence` (its rules for
//! zero rows where work happened and for refused or unmapped spans), [`sources`] (which rows a
//! scenario that reads steps from the wire judges), [`memory`] and [`streamed`] (the
//! two runs), [`run`] (from paths to a [`Report`]), [`shards`] (the shards of one search must
//! share one list of schedules).

mod ack_after_commit;
mod aggregate_order;
mod counter_exact;
pub mod coverage;
mod cut_short;
mod evidence;
mod external_single_effect;
mod intent_atomic;
pub mod invariant;
pub mod lost_rows;
mod lost_spans;
mod mark_after_puback;
pub mod memory;
mod no_lost_task;
mod observed_agrees;
pub mod outcome;
pub mod report;
pub mod rule;
pub mod run;
pub mod scan;
pub mod shards;
mod single_effect;
pub mod sources;
mod sources_agree;
pub mod streamed;

pub use coverage::{Coverage, SearchOf};
pub use invariant::{Class, Invariant, LostRows, LostSpans, Stored};
pub use lost_rows::Shortfalls;
pub use lost_spans::Lives;
pub use memory::check_all;
pub use outcome::{
    earliest, Examples, Finding, Held, Outcome, Reason, RepliesLost, Shortfall, Total, Verdict,
    Violation, EXAMPLES,
};
pub use report::{Report, RunVerdict, ScenarioReport};
pub use rule::{row32, Decision, Ends, Gather, Pos, Rule, Skips};
pub use run::{analyse, check_paths};
pub use scan::{Gathering, Scan, Scanned};
