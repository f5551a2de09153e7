//! What a name becomes: an [`Id`], a small integer numbering names densely from 0; and the
//! analyzer's fast hash maps ([`FastMap`]), for what ids cannot index.

use std::collections::HashMap;
use std::num::NonZeroU32;

/// A fast, non-cryptographic hash map builder for the analyzer's maps.
pub type FastState = foldhash::fast::RandomState;
/// A `HashMap` with the analyzer's fast hasher.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// An interned string. `Option<Id>` is as small as `Id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(pub(super) NonZeroU32);

impl Id {
    /// Ids number names from 0 up, densely: a position in an [`IdTable`](super::IdTable).
    pub fn index(self) -> usize {
        self.0.get() as usize - 1
    }

    /// The id at position `i` of an [`IdTable`](super::IdTable).
    pub fn from_index(i: usize) -> Option<Id> {
        let n = u32::try_from(i.checked_add(1)?).ok()?;
        NonZeroU32::new(n).map(Id)
    }
}
