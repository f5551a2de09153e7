//! The names and their ids: [`Interner`] keeps every name once in a text arena, in id order,
//! each preceded by its length, and finds a name's id through its lookup table (`slots`).

use std::hash::BuildHasher;
use std::num::NonZeroU32;

use super::slots::Slots;
use super::{FastState, Id};

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
    pub(super) slots: Slots,
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
