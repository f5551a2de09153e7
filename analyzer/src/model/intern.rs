//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.
//!
//! Names live in one text arena; the lookup table holds only ids into the arena, so a new name
//! costs one copy and no allocation of its own.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::num::NonZeroU32;

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
            self.extend(p + 1);
        }
        let page = self.pages[p].get_or_insert_with(|| page(&self.empty));
        &mut page[i % Self::PAGE]
    }

    /// Makes room for `pages` pages (ids come roughly in order, so this runs about once a page).
    #[cold]
    #[inline(never)]
    fn extend(&mut self, pages: usize) {
        self.pages.resize(pages, None);
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

/// A page of an [`IdTable`], every slot `empty` (a page is opened once, so this stays out of the
/// lookups' way).
#[cold]
#[inline(never)]
fn page<T: Clone>(empty: &T) -> Box<[T]> {
    vec![empty.clone(); IdTable::<T>::PAGE].into_boxed_slice()
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
    #[inline]
    pub fn insert(&mut self, id: Id) -> bool {
        let i = id.index();
        if self.bits.len() <= i / 64 {
            self.grow(i / 64 + 1);
        }
        let (word, bit) = (&mut self.bits[i / 64], 1u64 << (i % 64));
        let new = *word & bit == 0;
        if new {
            *word |= bit;
            self.members += 1;
        }
        new
    }

    /// Makes room for `words` words of bits (ids come roughly in order, so this runs once in 64
    /// inserts at most).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, words: usize) {
        self.bits.resize(words, 0);
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
/// Six to twelve bytes a name besides its text: the lookup table ([`Slots`]) holds a tag byte and
/// a four-byte id per slot, at most four fifths full (two fifths right after it doubles, unless
/// it was grown to the names expected); each name is preceded in the arena by its
/// length (one byte when shorter than 128), and the table of offsets holds every 16th name's
/// start only. The table keeps no hashes: it is rebuilt larger, walking the arena in order, when
/// it fills (a walk in order costs little next to the random reads of a rehash).
#[derive(Default)]
pub struct Interner {
    /// Each name's id, found by the name's hash.
    slots: Slots,
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

/// Lookups ahead whose slots a run of lookups prefetches.
const AHEAD: usize = 8;

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
        let hash = self.hasher.hash_one(name.as_bytes());
        self.find_or_insert(name.as_bytes(), hash, true)
    }

    /// The ids of `names` (UTF-8 text each, or absent for the empty string), assigning new ones
    /// to those seen for the first time, in order. The lookups overlap their waits for memory:
    /// each prefetches the slots of the one [`AHEAD`] places after it.
    pub fn intern_all<'a>(
        &mut self,
        names: impl Iterator<Item = Option<&'a str>>,
    ) -> Result<Vec<Id>, InternError> {
        let names: Vec<&[u8]> = names.map(|n| n.unwrap_or("").as_bytes()).collect();
        self.make_room(names.len())?;
        let hashes: Vec<u64> = names.iter().map(|n| self.hasher.hash_one(n)).collect();
        for &hash in hashes.iter().take(AHEAD) {
            self.slots.prefetch(hash);
        }
        let mut ids = Vec::with_capacity(names.len());
        for (i, (name, &hash)) in names.iter().zip(&hashes).enumerate() {
            if let Some(&ahead) = hashes.get(i + AHEAD) {
                self.slots.prefetch(ahead);
            }
            ids.push(self.find_or_insert(name, hash, true)?);
        }
        Ok(ids)
    }

    /// The id of the UTF-8 string in `name`, assigning a new one the first time.
    pub fn intern_bytes(&mut self, name: &[u8]) -> Result<Id, InternError> {
        let hash = self.hasher.hash_one(name);
        self.find_or_insert(name, hash, false)
    }

    /// Makes room for `more` names at once, so that interning several sets of names in turn
    /// (a row group's dictionaries) grows the table once rather than once a set.
    pub fn reserve(&mut self, more: usize) -> Result<(), InternError> {
        self.make_room(more).map(|_| ())
    }

    /// Says about how many names there will be in all, so the table grows once to hold them
    /// rather than doubling (each doubling hashes every name again, a random write each). Only
    /// the table's room follows it: an estimate too high costs memory, one too low another grow.
    pub fn expect(&mut self, names: usize) {
        self.expected = names;
    }

    /// Grows the table, if need be, so that `more` names fit without another grow: to the
    /// names expected, or at least twice the names held.
    fn make_room(&mut self, more: usize) -> Result<bool, InternError> {
        let needed = self.len.checked_add(more).ok_or(InternError::TooMany)?;
        if self.slots.fits(needed) {
            return Ok(false);
        }
        let wanted = needed.max(self.expected).max(self.len.saturating_mul(2));
        self.rebuild(Slots::room_for(wanted));
        Ok(true)
    }

    /// The id of `name` (hashed to `hash`; known to be UTF-8 when `utf8`), assigning a new one
    /// the first time, the table grown first if it is full.
    #[inline]
    fn find_or_insert(&mut self, name: &[u8], hash: u64, utf8: bool) -> Result<Id, InternError> {
        let (text, starts) = (self.text.as_slice(), self.starts.as_slice());
        let mut slot = match self.slots.find(hash, |id| span(text, starts, id) == name) {
            Ok(id) => return Ok(id),
            Err(slot) => slot,
        };
        if !utf8 && std::str::from_utf8(name).is_err() {
            return Err(InternError::NotUtf8);
        }
        let next = u32::try_from(self.len + 1).map_err(|_| InternError::TooMany)?;
        if u32::try_from(name.len()).is_err() {
            return Err(InternError::TooLong);
        }
        let id = Id(NonZeroU32::new(next).ok_or(InternError::TooMany)?);
        if self.make_room(1)? {
            // A new table, without `name` (it is not in the arena yet): where it goes there.
            if let Err(at) = self.slots.find(hash, |_| false) {
                slot = at;
            }
        }
        if self.len % BLOCK == 0 {
            self.starts.push(self.text.len());
        }
        // Checked UTF-8 above, or a `&str` already: every name in the arena is text.
        push_len(&mut self.text, name.len());
        self.text.extend_from_slice(name);
        self.len += 1;
        self.slots.put(slot, hash, id);
        Ok(id)
    }

    /// Replaces the table by `slots`, empty, filled with every name, hashed in id order.
    #[cold]
    fn rebuild(&mut self, mut slots: Slots) {
        let hasher = &self.hasher;
        let mut rest = self.text.as_slice();
        let mut pending: std::collections::VecDeque<(u64, Id)> = Default::default();
        for i in 0..self.len {
            let Some((name, after)) = next_name(rest) else {
                break;
            };
            rest = after;
            let hash = hasher.hash_one(name);
            slots.prefetch(hash);
            if let Some(id) = Id::from_index(i) {
                pending.push_back((hash, id));
            }
            if pending.len() > AHEAD {
                if let Some((hash, id)) = pending.pop_front() {
                    slots.insert_new(hash, id);
                }
            }
        }
        for (hash, id) in pending {
            slots.insert_new(hash, id);
        }
        self.slots = slots;
    }

    /// The id of `name`, if it was ever interned.
    pub fn get(&self, name: &str) -> Option<Id> {
        let name = name.as_bytes();
        let hash = self.hasher.hash_one(name);
        let (text, starts) = (self.text.as_slice(), self.starts.as_slice());
        self.slots
            .find(hash, |id| span(text, starts, id) == name)
            .ok()
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

/// The interner's lookup table: open addressing with linear probing over any number of slots,
/// each a tag byte (0: empty; else the high bit and seven bits of the name's hash) and an id. A
/// name's probe starts at its hash scaled to the capacity (so the table can grow straight to the
/// size expected), and the tags spare nearly every comparison of a name with another.
#[derive(Default)]
struct Slots {
    tags: Vec<u8>,
    ids: Vec<u32>,
}

impl Slots {
    /// Slots for `names` names at most four fifths full.
    fn room_for(names: usize) -> Self {
        let capacity = names.saturating_add(names.div_ceil(4)).max(1024);
        Slots {
            tags: vec![0; capacity],
            ids: vec![0; capacity],
        }
    }

    fn capacity(&self) -> usize {
        self.tags.len()
    }

    /// Whether `names` names fit at most four fifths full.
    fn fits(&self, names: usize) -> bool {
        names.saturating_mul(5) <= self.capacity().saturating_mul(4)
    }

    /// Where the probe for `hash` starts.
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.capacity() as u128) >> 64) as usize
    }

    #[inline(always)]
    fn tag(hash: u64) -> u8 {
        0x80 | (hash as u8 & 0x7f)
    }

    /// The id whose name hashes to `hash` and passes `is`, or the empty slot where it would go.
    /// The table is never full ([`Slots::fits`]), so the probe ends.
    #[inline(always)]
    fn find(&self, hash: u64, is: impl Fn(Id) -> bool) -> Result<Id, usize> {
        let tag = Self::tag(hash);
        let mut at = self.home(hash);
        loop {
            match self.tags.get(at) {
                Some(0) => return Err(at),
                Some(&t) if t == tag => {
                    let id = self.ids.get(at).copied().and_then(NonZeroU32::new).map(Id);
                    if let Some(id) = id.filter(|&id| is(id)) {
                        return Ok(id);
                    }
                }
                Some(_) => {}
                // Past the last slot: wrap around (an empty table has no slot at all).
                None if at == 0 => return Err(0),
                None => {
                    at = 0;
                    continue;
                }
            }
            at += 1;
        }
    }

    /// Puts `id` (its name hashing to `hash`) in the empty slot `at` that [`Slots::find`] gave.
    #[inline(always)]
    fn put(&mut self, at: usize, hash: u64, id: Id) {
        if let (Some(tag), Some(slot)) = (self.tags.get_mut(at), self.ids.get_mut(at)) {
            *tag = Self::tag(hash);
            *slot = id.0.get();
        }
    }

    /// Puts `id`, whose name is in no slot yet, in the first empty slot of its probe.
    fn insert_new(&mut self, hash: u64, id: Id) {
        if let Err(at) = self.find(hash, |_| false) {
            self.put(at, hash, id);
        }
    }

    /// Asks for the first slots of the probe for `hash` to be brought into the cache.
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let at = self.home(hash);
        prefetch(&self.tags, at);
        prefetch(&self.ids, at);
    }
}

/// Hints the processor to bring `slice[at]` into the cache (nothing where it cannot be hinted).
#[inline(always)]
fn prefetch<T>(slice: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that reads and writes nothing; the address is in bounds.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, at);
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
    fn a_run_of_lookups_gives_each_name_one_id() {
        // Chunks of many sizes, names repeated within a chunk and across chunks, the table
        // growing on the way: a name keeps the id it was first given, and reads back.
        let mut i = Interner::default();
        let mut seen: HashMap<String, Id> = HashMap::new();
        let mut n = 0u64;
        for chunk in 0..400usize {
            let names: Vec<String> = (0..chunk % 37 * 50)
                .map(|k| {
                    n = n
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    format!("name-{}", (n >> 33) % 120_000 + k as u64 % 3)
                })
                .collect();
            let ids = i
                .intern_all(names.iter().map(|n| Some(n.as_str())))
                .unwrap();
            for (name, id) in names.iter().zip(ids) {
                let first = *seen.entry(name.clone()).or_insert(id);
                assert_eq!(id, first, "{name}");
                assert_eq!(i.name(id), name);
            }
        }
        assert_eq!(i.len(), seen.len());
        assert!(seen.len() > 50_000, "{}", seen.len());
        let absent = i.intern_all([None, Some("")].into_iter()).unwrap();
        assert_eq!(absent[0], absent[1]);
        assert_eq!(i.get(""), Some(absent[0]));
    }

    #[test]
    fn an_expected_size_grows_the_table_once() {
        let mut i = Interner::default();
        i.expect(100_000);
        i.intern("first").unwrap();
        let capacity = i.slots.capacity();
        assert!(capacity >= 100_000, "{capacity}");
        for n in 1..100_000 {
            i.intern(&format!("k{n}")).unwrap();
        }
        assert_eq!(i.slots.capacity(), capacity);
        assert_eq!(i.get("k99999").map(|id| i.name(id)), Some("k99999"));
    }

    #[test]
    fn a_probe_wraps_around_the_last_slot() {
        let mut slots = Slots::room_for(8);
        let last = slots.capacity() - 1;
        // Hashes whose probes start at the last slot: the second and third wrap to the first.
        let hash = u64::MAX;
        assert_eq!(slots.home(hash), last);
        let ids: Vec<Id> = (0..3).filter_map(Id::from_index).collect();
        for &id in &ids {
            slots.insert_new(hash, id);
        }
        for &id in &ids {
            assert_eq!(slots.find(hash, |x| x == id), Ok(id));
        }
        assert_eq!(slots.ids[last], ids[0].0.get());
        assert_eq!(slots.ids[0], ids[1].0.get());
        assert_eq!(slots.ids[1], ids[2].0.get());
        assert_eq!(slots.find(hash, |_| false), Err(2));
    }

    #[test]
    fn room_for_some_names_fits_them() {
        for names in [0, 1, 1000, 4097, 100_001, 123_457] {
            let slots = Slots::room_for(names);
            assert!(slots.fits(names), "{names}");
        }
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
