//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.
//!
//! Names live in one text arena; the lookup table holds only ids and hashes into the arena, so a
//! new name costs one copy and no allocation of its own.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::num::NonZeroU32;

use hashbrown::HashTable;

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

/// A value per [`Id`]: since ids are dense, the checks index by them instead of hashing. An id
/// never written reads as the empty value.
///
/// Slots live in pages of [`IdTable::PAGE`], each allocated on its first write: ids of one
/// role (events, say) come in blocks, interleaved with other roles' blocks (tasks), so a table
/// over one role holds only that role's pages.
#[derive(Debug, Clone)]
pub struct IdTable<T> {
    pages: Vec<Option<Box<[T]>>>,
    empty: T,
}

impl<T: Clone> IdTable<T> {
    /// Slots per page.
    pub const PAGE: usize = 256;

    /// A table (`bound` is a hint of the ids to come), every slot `empty`.
    pub fn new(bound: usize, empty: T) -> Self {
        IdTable {
            pages: Vec::with_capacity(bound.div_ceil(Self::PAGE)),
            empty,
        }
    }

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: Id) -> &T {
        let i = id.index();
        match self.pages.get(i / Self::PAGE) {
            Some(Some(page)) => &page[i % Self::PAGE],
            _ => &self.empty,
        }
    }

    /// The value of `id`, to change.
    #[inline]
    pub fn get_mut(&mut self, id: Id) -> &mut T {
        let i = id.index();
        let p = i / Self::PAGE;
        if p >= self.pages.len() {
            self.pages.resize(p + 1, None);
        }
        let page = self.pages[p]
            .get_or_insert_with(|| vec![self.empty.clone(); Self::PAGE].into_boxed_slice());
        &mut page[i % Self::PAGE]
    }

    /// Every id of an allocated page with its value, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (Id, &T)> + '_ {
        self.pages
            .iter()
            .enumerate()
            .filter_map(|(p, page)| page.as_ref().map(|page| (p, page)))
            .flat_map(|(p, page)| {
                page.iter()
                    .enumerate()
                    .filter_map(move |(k, v)| Id::from_index(p * Self::PAGE + k).map(|id| (id, v)))
            })
    }
}

/// A set of [`Id`]s as a bitmap over their indices: an eighth of a byte per id below the
/// largest, where a hash set takes several bytes per member.
#[derive(Debug, Clone, Default)]
pub struct IdSet {
    bits: Vec<u64>,
    members: u64,
}

impl IdSet {
    /// How many members (at most 2^32, as ids are `u32`s, so an `i64` holds it).
    pub fn members(&self) -> i64 {
        self.members as i64
    }

    /// Whether `id` is a member.
    pub fn contains(&self, id: Id) -> bool {
        let i = id.index();
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

impl IdSet {
    /// Adds `id`; whether it was not a member before.
    pub fn insert(&mut self, id: Id) -> bool {
        let i = id.index();
        if self.bits.len() <= i / 64 {
            self.bits.resize(i / 64 + 1, 0);
        }
        let (word, bit) = (&mut self.bits[i / 64], 1u64 << (i % 64));
        let new = *word & bit == 0;
        if new {
            *word |= bit;
            self.members += 1;
        }
        new
    }
}

impl outbox_trace::KeySet<Id> for IdSet {
    fn insert(&mut self, id: Id) {
        IdSet::insert(self, id);
    }

    fn count(&self) -> u64 {
        self.members
    }
}

impl outbox_trace::TaskKey for Id {
    type Set = IdSet;
}

/// Why a name could not be interned.
#[derive(Debug, thiserror::Error)]
pub enum InternError {
    /// More distinct strings than an `Id` can number.
    #[error("too many distinct names to index")]
    TooMany,
    /// One string of 4 GiB or more.
    #[error("a string value is too long to index")]
    TooLong,
    /// The bytes are not UTF-8 (a string column must hold UTF-8).
    #[error("a string value is not valid UTF-8")]
    NotUtf8,
}

/// Maps strings to [`Id`]s and back.
#[derive(Default)]
pub struct Interner {
    /// Each name's id with its hash, so growing the table never hashes a name again.
    table: HashTable<(Id, u32)>,
    hasher: FastState,
    text: Vec<u8>,
    /// End offset in `text` of each name; name `i` starts where name `i - 1` ends.
    ends: Ends,
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("names", &self.ends.len())
            .finish()
    }
}

impl Interner {
    /// The id of `name`, assigning a new one the first time.
    pub fn intern(&mut self, name: &str) -> Result<Id, InternError> {
        self.find_or_insert(name.as_bytes(), true)
    }

    /// The id of the UTF-8 string in `name`, assigning a new one the first time.
    pub fn intern_bytes(&mut self, name: &[u8]) -> Result<Id, InternError> {
        self.find_or_insert(name, false)
    }

    /// The id of `name` (known to be UTF-8 when `utf8`), assigning a new one the first time.
    #[inline]
    fn find_or_insert(&mut self, name: &[u8], utf8: bool) -> Result<Id, InternError> {
        let short = self.hasher.hash_one(name) as u32;
        let hash = widen(short);
        let (text, ends) = (self.text.as_slice(), &self.ends);
        let same = |&(id, h): &(Id, u32)| h == short && span(text, ends, id) == name;
        if let Some(&(id, _)) = self.table.find(hash, same) {
            return Ok(id);
        }
        if !utf8 && std::str::from_utf8(name).is_err() {
            return Err(InternError::NotUtf8);
        }
        let next = u32::try_from(self.ends.len() + 1).map_err(|_| InternError::TooMany)?;
        if u32::try_from(name.len()).is_err() {
            return Err(InternError::TooLong);
        }
        let id = Id(NonZeroU32::new(next).ok_or(InternError::TooMany)?);
        // Checked UTF-8 above, or a `&str` already: every name in the arena is text.
        self.text.extend_from_slice(name);
        self.ends.push(self.text.len());
        self.table
            .insert_unique(hash, (id, short), |&(_, h)| widen(h));
        Ok(id)
    }

    /// The id of `name`, if it was ever interned.
    pub fn get(&self, name: &str) -> Option<Id> {
        let name = name.as_bytes();
        let short = self.hasher.hash_one(name) as u32;
        let (text, ends) = (self.text.as_slice(), &self.ends);
        let same = |&(id, h): &(Id, u32)| h == short && span(text, ends, id) == name;
        self.table.find(widen(short), same).map(|&(id, _)| id)
    }

    /// The string behind `id` (empty for an id this interner never gave out).
    pub fn name(&self, id: Id) -> &str {
        std::str::from_utf8(self.bytes(id)).unwrap_or("")
    }

    /// The bytes of the name behind `id` (empty for an id this interner never gave out).
    pub fn bytes(&self, id: Id) -> &[u8] {
        span(&self.text, &self.ends, id)
    }

    /// The string behind an optional id, if any.
    pub fn name_opt(&self, id: Option<Id>) -> Option<&str> {
        id.map(|id| self.name(id))
    }

    /// How many names are interned.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no name is interned.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The end offsets of the names in the arena, in four bytes each: their low 32 bits, with the
/// names whose end passed a multiple of 4 GiB listed aside (no name is 4 GiB long, so each
/// passes at most one).
#[derive(Default)]
struct Ends {
    low: Vec<u32>,
    /// The index of the first name ending past each multiple of 4 GiB.
    wraps: Vec<usize>,
}

impl Ends {
    fn push(&mut self, end: usize) {
        let high = (end as u64 >> 32) as usize;
        if high > self.wraps.len() {
            self.wraps.push(self.low.len());
        }
        self.low.push(end as u32);
    }

    fn get(&self, i: usize) -> Option<usize> {
        let low = u64::from(*self.low.get(i)?);
        let high = self.wraps.partition_point(|&w| w <= i) as u64;
        usize::try_from(high << 32 | low).ok()
    }

    fn len(&self) -> usize {
        self.low.len()
    }

    fn is_empty(&self) -> bool {
        self.low.is_empty()
    }
}

/// The table's hash from the 32 bits kept per name: the table picks buckets with the low bits
/// and tags with the high ones, so both come from them.
fn widen(h: u32) -> u64 {
    u64::from(h) << 32 | u64::from(h)
}

/// The bytes of name `id` in the arena.
fn span<'a>(text: &'a [u8], ends: &Ends, id: Id) -> &'a [u8] {
    let i = id.index();
    let start = if i == 0 {
        0
    } else {
        ends.get(i - 1).unwrap_or(0)
    };
    let end = ends.get(i).unwrap_or(start);
    text.get(start..end).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_same_id() {
        let mut i = Interner::default();
        let a = i.intern("evt-1").unwrap();
        let b = i.intern("evt-2").unwrap();
        let empty = i.intern("").unwrap();
        assert_ne!(a, b);
        assert_eq!(i.intern("evt-1").unwrap(), a);
        assert_eq!(i.name(b), "evt-2");
        assert_eq!(i.name(a), "evt-1");
        assert_eq!(i.name(empty), "");
        assert_eq!(i.intern("").unwrap(), empty);
        for n in 0..10_000 {
            let id = i.intern(&format!("k{n}")).unwrap();
            assert_eq!(i.name(id), format!("k{n}"));
        }
        assert_eq!(i.intern("evt-2").unwrap(), b);
        assert_eq!(i.len(), 10_003);
    }

    #[test]
    fn ends_past_4_gib_read_back() {
        let mut ends = Ends::default();
        let offsets = [
            3,
            u32::MAX as usize,
            (1 << 32) + 5,
            (1 << 32) + 9,
            (2 << 32) + 1,
        ];
        for &end in &offsets {
            ends.push(end);
        }
        let back: Vec<usize> = (0..offsets.len()).filter_map(|i| ends.get(i)).collect();
        assert_eq!(back, offsets);
        assert_eq!(ends.get(offsets.len()), None);
    }

    #[test]
    fn an_id_set_counts_distinct_members() {
        use outbox_trace::KeySet;
        let mut set = IdSet::default();
        let ids: Vec<Id> = [0, 63, 64, 1000, 63]
            .iter()
            .filter_map(|&i| Id::from_index(i))
            .collect();
        for &id in &ids {
            set.insert(id);
        }
        assert_eq!(set.count(), 4);
        assert!(set.contains(ids[3]));
        assert!(!set.contains(Id::from_index(999).unwrap()));
    }
}
