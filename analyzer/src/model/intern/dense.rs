//! Values and sets indexed by [`Id`]: since ids are dense, the checks index by them instead of
//! hashing ([`IdTable`], [`IdTable64`] for 64-bit values, [`IdSet`] as a bitmap).

use super::{FastMap, Id};

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
