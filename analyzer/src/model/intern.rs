//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.
//!
//! Names live in one text arena; the lookup table holds only ids into the arena, so a new name
//! costs one copy and no allocation of its own.

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

/// A 64-bit value per [`Id`], in four bytes while it is below `u32::MAX` (store revisions and
/// broker positions count up from small numbers), the others aside in a map. An id never
/// written reads as 0.
#[derive(Debug, Clone)]
pub struct IdTable64 {
    low: IdTable<u32>,
    wide: FastMap<Id, u64>,
}

impl Default for IdTable64 {
    fn default() -> Self {
        IdTable64 {
            low: IdTable::new(0, 0),
            wide: FastMap::default(),
        }
    }
}

impl IdTable64 {
    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: Id) -> u64 {
        match *self.low.get(id) {
            u32::MAX => self.wide.get(&id).copied().unwrap_or(0),
            v => u64::from(v),
        }
    }

    /// Sets the value of `id`.
    #[inline]
    pub fn set(&mut self, id: Id, v: u64) {
        match u32::try_from(v) {
            Ok(low) if low != u32::MAX => {
                *self.low.get_mut(id) = low;
                if !self.wide.is_empty() {
                    self.wide.remove(&id);
                }
            }
            _ => {
                *self.low.get_mut(id) = u32::MAX;
                self.wide.insert(id, v);
            }
        }
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

    /// Removes `id`; whether it was a member.
    pub fn remove(&mut self, id: Id) -> bool {
        let i = id.index();
        let Some(word) = self.bits.get_mut(i / 64) else {
            return false;
        };
        let bit = 1u64 << (i % 64);
        let was = *word & bit != 0;
        if was {
            *word &= !bit;
            self.members -= 1;
        }
        was
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
///
/// About eight bytes a name besides its text: the lookup table holds four-byte ids (and
/// a control byte) at most seven eighths full; each name is preceded in the arena by its
/// length (one byte when shorter than 128), and the table of offsets holds every 16th name's
/// start only. The table keeps no hashes: it is rebuilt twice as large, walking the arena in
/// order, when it fills (a walk in order costs little next to the random reads of a rehash).
#[derive(Default)]
pub struct Interner {
    /// Each name's id, found by the name's hash.
    table: HashTable<Id>,
    hasher: FastState,
    /// The names in id order, each as its length (LEB128) then its bytes.
    text: Vec<u8>,
    /// Where in `text` name `16 k` starts, for every `k`.
    starts: Vec<usize>,
    /// How many names.
    len: usize,
    /// How many names the caller expects in all (see [`Interner::expect`]).
    expected: usize,
}

/// Names per entry of [`Interner::starts`].
const BLOCK: usize = 16;

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("names", &self.len)
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
        let hash = self.hasher.hash_one(name);
        let (text, starts) = (self.text.as_slice(), self.starts.as_slice());
        if let Some(&id) = self.table.find(hash, |&id| span(text, starts, id) == name) {
            return Ok(id);
        }
        if !utf8 && std::str::from_utf8(name).is_err() {
            return Err(InternError::NotUtf8);
        }
        let next = u32::try_from(self.len + 1).map_err(|_| InternError::TooMany)?;
        if u32::try_from(name.len()).is_err() {
            return Err(InternError::TooLong);
        }
        let id = Id(NonZeroU32::new(next).ok_or(InternError::TooMany)?);
        if self.len % BLOCK == 0 {
            self.starts.push(self.text.len());
        }
        // Checked UTF-8 above, or a `&str` already: every name in the arena is text.
        push_len(&mut self.text, name.len());
        self.text.extend_from_slice(name);
        self.len += 1;
        if self.table.len() == self.table.capacity() {
            self.grow();
        }
        let (text, starts, hasher) = (self.text.as_slice(), self.starts.as_slice(), &self.hasher);
        self.table
            .insert_unique(hash, id, |&id| hasher.hash_one(span(text, starts, id)));
        Ok(id)
    }

    /// Says about how many names there will be in all, so the table grows once to hold them
    /// rather than doubling (each doubling hashes every name again, a random write each). Only
    /// the table's room follows it: an estimate too high costs memory, one too low another grow.
    pub fn expect(&mut self, names: usize) {
        self.expected = names;
    }

    /// Replaces the table by one at least twice as large and as large as expected, holding every
    /// name but the newest (which the caller inserts), hashed in id order.
    #[cold]
    fn grow(&mut self) {
        let capacity = (self.table.capacity() * 2)
            .max(self.expected.saturating_add(self.expected / 8))
            .max(1024);
        let mut table = HashTable::with_capacity(capacity);
        let hasher = &self.hasher;
        let mut rest = self.text.as_slice();
        for i in 0..self.len - 1 {
            let Some((name, after)) = next_name(rest) else {
                break;
            };
            rest = after;
            if let Some(id) = Id::from_index(i) {
                // Room was made for all: the hasher is never called.
                table.insert_unique(hasher.hash_one(name), id, |_| 0);
            }
        }
        self.table = table;
    }

    /// The id of `name`, if it was ever interned.
    pub fn get(&self, name: &str) -> Option<Id> {
        let name = name.as_bytes();
        let hash = self.hasher.hash_one(name);
        let (text, starts) = (self.text.as_slice(), self.starts.as_slice());
        self.table
            .find(hash, |&id| span(text, starts, id) == name)
            .copied()
    }

    /// The string behind `id` (empty for an id this interner never gave out).
    pub fn name(&self, id: Id) -> &str {
        std::str::from_utf8(self.bytes(id)).unwrap_or("")
    }

    /// The bytes of the name behind `id` (empty for an id this interner never gave out).
    pub fn bytes(&self, id: Id) -> &[u8] {
        if id.index() >= self.len {
            return &[];
        }
        span(&self.text, &self.starts, id)
    }

    /// The string behind an optional id, if any.
    pub fn name_opt(&self, id: Option<Id>) -> Option<&str> {
        id.map(|id| self.name(id))
    }

    /// How many names are interned.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no name is interned.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Appends `n` as LEB128: seven bits a byte, low first, the high bit set on all but the last.
fn push_len(text: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        text.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    text.push(n as u8);
}

/// The name at the start of `text` and the text after it (none past the end).
#[inline]
fn next_name(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let (mut n, mut shift, mut at) = (0usize, 0u32, 0usize);
    loop {
        let b = *text.get(at)?;
        at += 1;
        n |= usize::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let end = at.checked_add(n)?;
    Some((text.get(at..end)?, text.get(end..)?))
}

/// The bytes of name `id` in the arena (empty past the last).
#[inline]
fn span<'a>(text: &'a [u8], starts: &[usize], id: Id) -> &'a [u8] {
    let i = id.index();
    let Some(mut rest) = starts.get(i / BLOCK).and_then(|&s| text.get(s..)) else {
        return &[];
    };
    for _ in 0..i % BLOCK {
        match next_name(rest) {
            Some((_, after)) => rest = after,
            None => return &[],
        }
    }
    next_name(rest).map_or(&[], |(name, _)| name)
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
    fn names_of_any_length_read_back() {
        let mut i = Interner::default();
        let names: Vec<String> = (0..3000).map(|n| "x".repeat(n % 300)).collect();
        let mut ids = Vec::new();
        for (n, name) in names.iter().enumerate() {
            let name = format!("{name}{n}");
            ids.push((i.intern(&name).unwrap(), name));
        }
        for (id, name) in &ids {
            assert_eq!(i.name(*id), name);
            assert_eq!(i.get(name), Some(*id));
            assert_eq!(i.intern(name).unwrap(), *id);
        }
        assert_eq!(i.len(), ids.len());
        assert_eq!(i.get("absent"), None);
        assert_eq!(i.name(Id::from_index(ids.len()).unwrap()), "");
    }

    #[test]
    fn wide_values_read_back() {
        let mut t = IdTable64::default();
        let ids: Vec<Id> = (0..5).filter_map(Id::from_index).collect();
        let values = [0, u64::from(u32::MAX) - 1, u64::from(u32::MAX), u64::MAX, 7];
        for (&id, &v) in ids.iter().zip(&values) {
            t.set(id, v);
        }
        for (&id, &v) in ids.iter().zip(&values) {
            assert_eq!(t.get(id), v);
        }
        t.set(ids[3], 9);
        assert_eq!(t.get(ids[3]), 9);
        assert_eq!(t.get(Id::from_index(99).unwrap()), 0);
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
