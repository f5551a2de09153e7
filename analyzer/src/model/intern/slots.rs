//! The interner's lookup table ([`Slots`]): which id each name has, found by the name's hash.

use std::num::NonZeroU32;

use super::Id;

/// The interner's lookup table: open addressing with linear probing over any number of slots,
/// each a tag byte (0: empty; else the high bit and seven bits of the name's hash) and an id. A
/// name's probe starts at its hash scaled to the capacity (so the table can grow straight to the
/// size expected), and the tags spare nearly every comparison of a name with another.
#[derive(Default)]
pub(super) struct Slots {
    tags: Vec<u8>,
    pub(super) ids: Vec<u32>,
}

impl Slots {
    /// Slots for `names` names at most four fifths full.
    pub(super) fn room_for(names: usize) -> Self {
        let capacity = names.saturating_add(names.div_ceil(4)).max(1024);
        Slots {
            tags: vec![0; capacity],
            ids: vec![0; capacity],
        }
    }

    #[inline]
    pub(super) fn capacity(&self) -> usize {
        self.tags.len()
    }

    /// Whether `names` names fit at most four fifths full.
    #[inline]
    pub(super) fn fits(&self, names: usize) -> bool {
        names.saturating_mul(5) <= self.capacity().saturating_mul(4)
    }

    /// Where the probe for `hash` starts.
    #[inline(always)]
    pub(super) fn home(&self, hash: u64) -> usize {
        ((u128::from(hash) * self.capacity() as u128) >> 64) as usize
    }

    #[inline(always)]
    fn tag(hash: u64) -> u8 {
        0x80 | (hash as u8 & 0x7f)
    }

    /// The id whose name hashes to `hash` and passes `is`, or the empty slot where it would go.
    /// The table is never full ([`Slots::fits`]), so the probe ends.
    #[inline(always)]
    pub(super) fn find(&self, hash: u64, is: impl Fn(Id) -> bool) -> Result<Id, usize> {
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
    pub(super) fn put(&mut self, at: usize, hash: u64, id: Id) {
        if let (Some(tag), Some(slot)) = (self.tags.get_mut(at), self.ids.get_mut(at)) {
            *tag = Self::tag(hash);
            *slot = id.0.get();
        }
    }

    /// Puts `id`, whose name is in no slot yet, in the first empty slot of its probe.
    pub(super) fn insert_new(&mut self, hash: u64, id: Id) {
        if let Err(at) = self.find(hash, |_| false) {
            self.put(at, hash, id);
        }
    }

    /// Asks for the first slots of the probe for `hash` to be brought into the cache.
    #[inline(always)]
    pub(super) fn prefetch(&self, hash: u64) {
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
