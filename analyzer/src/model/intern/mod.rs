//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.
//!
//! Names live in one text arena; the lookup table holds only ids into the arena, so a new name
//! costs one copy and no allocation of its own.
//!
//! Files: `dense` (values and sets indexed by id), `interner` (the names and their ids), `slots`
//! (the interner's lookup table).

use std::collections::HashMap;
use std::num::NonZeroU32;

mod dense;
mod interner;
mod slots;
#[cfg(test)]
mod tests;

pub use dense::{IdSet, IdTable, IdTable64};
pub use interner::{InternError, Interner};

/// A fast, non-cryptographic hash map builder for the analyzer's maps.
pub type FastState = foldhash::fast::RandomState;
/// A `HashMap` with the analyzer's fast hasher.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// An interned string. `Option<Id>` is as small as `Id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(NonZeroU32);

impl Id {
    /// Ids number names from 0 up, densely: a position in an [`IdTable`].
    pub fn index(self) -> usize {
        self.0.get() as usize - 1
    }

    /// The id at position `i` of an [`IdTable`].
    pub fn from_index(i: usize) -> Option<Id> {
        let n = u32::try_from(i.checked_add(1)?).ok()?;
        NonZeroU32::new(n).map(Id)
    }
}
