//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.
//!
//! Names live in one text arena; the lookup table holds only ids into the arena, so a new name
//! costs one copy and no allocation of its own.
//!
//! Files: `id` (the ids, and the hash maps of the analyzer), `dense` (values and sets indexed by
//! id), `interner` (the names and their ids), `slots` (the interner's lookup table).

mod dense;
mod id;
mod interner;
mod slots;
#[cfg(test)]
mod tests;

pub use dense::{IdSet, IdTable, IdTable64};
pub use id::{FastMap, FastState, Id};
pub use interner::{InternError, Interner};
