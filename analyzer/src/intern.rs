//! Interning: every string the checks compare (run, scenario, actor, event, task, aggregate) becomes
//! a small integer once, so the history holds no `String` per row and the checks hash integers.

use std::collections::HashMap;
use std::num::NonZeroU32;

/// A fast, non-cryptographic hash map builder for the analyzer's maps.
pub type FastState = foldhash::fast::RandomState;
/// A `HashMap` with the analyzer's fast hasher.
pub type FastMap<K, V> = HashMap<K, V, FastState>;

/// An interned string. `Option<Id>` is as small as `Id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(NonZeroU32);

/// More distinct strings than an `Id` can number.
#[derive(Debug, thiserror::Error)]
#[error("more than {} distinct names", u32::MAX - 1)]
pub struct TooManyNames;

/// Maps strings to [`Id`]s and back.
#[derive(Debug, Default)]
pub struct Interner {
    ids: FastMap<Box<str>, Id>,
    names: Vec<Box<str>>,
}

impl Interner {
    /// The id of `name`, assigning a new one the first time.
    pub fn intern(&mut self, name: &str) -> Result<Id, TooManyNames> {
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        let next = u32::try_from(self.names.len() + 1).map_err(|_| TooManyNames)?;
        let id = Id(NonZeroU32::new(next).ok_or(TooManyNames)?);
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        Ok(id)
    }

    /// The string behind `id` (empty for an id this interner never gave out).
    pub fn name(&self, id: Id) -> &str {
        self.names
            .get(id.0.get() as usize - 1)
            .map_or("", |n| n.as_ref())
    }

    /// The string behind an optional id, if any.
    pub fn name_opt(&self, id: Option<Id>) -> Option<&str> {
        id.map(|id| self.name(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_string_same_id() {
        let mut i = Interner::default();
        let a = i.intern("evt-1").unwrap();
        let b = i.intern("evt-2").unwrap();
        assert_ne!(a, b);
        assert_eq!(i.intern("evt-1").unwrap(), a);
        assert_eq!(i.name(b), "evt-2");
    }
}
