//! What a connection remembers until its answer comes, by subject, bounded in count and in bytes:
//! past either bound the oldest is forgotten.

use std::collections::{HashMap, VecDeque};

/// How many bytes a value holds beyond its own size (its heap).
pub(super) trait Weighed {
    /// The bytes.
    fn weight(&self) -> usize;
}

impl Weighed for () {
    fn weight(&self) -> usize {
        0
    }
}

/// Values by subject, at most `bound` of them and `bytes` of subjects and values; the oldest is
/// forgotten first.
pub(super) struct Remembered<V> {
    bound: usize,
    bytes: usize,
    /// The bytes of the subjects and values remembered.
    held: usize,
    /// Each value, with the stamp it was remembered under.
    entries: HashMap<Vec<u8>, (u64, V)>,
    /// Subjects in the order they were remembered, with their stamps (an entry forgotten or
    /// remembered again since leaves a stale stamp here).
    order: VecDeque<(u64, Vec<u8>)>,
    next: u64,
}

impl<V: Weighed> Remembered<V> {
    /// Remembers at most `bound` values, and `bytes` of subjects and values.
    pub(super) fn new(bound: usize, bytes: usize) -> Remembered<V> {
        Remembered {
            bound,
            bytes,
            held: 0,
            entries: HashMap::new(),
            order: VecDeque::new(),
            next: 0,
        }
    }

    /// Remembers `value` by `subject` (in place of one remembered by it before), forgetting the
    /// oldest past the bound; the subject it forgot, if it did.
    pub(super) fn remember(&mut self, subject: &[u8], value: V) -> Option<Vec<u8>> {
        let mut forgot = None;
        let stamp = self.next;
        self.next += 1;
        self.held += subject.len() + value.weight();
        if let Some((_, before)) = self.entries.insert(subject.to_vec(), (stamp, value)) {
            self.held -= subject.len() + before.weight();
        }
        self.order.push_back((stamp, subject.to_vec()));
        while self.entries.len() > self.bound || self.held > self.bytes {
            let Some((stamp, oldest)) = self.order.pop_front() else {
                break;
            };
            if self.is_current(stamp, &oldest) {
                self.forget(&oldest);
                forgot = Some(oldest);
            }
        }
        if self.order.len() > 2 * self.bound.max(1) {
            let entries = &self.entries;
            self.order
                .retain(|(stamp, subject)| entries.get(subject).is_some_and(|e| e.0 == *stamp));
        }
        forgot
    }

    /// The value remembered by `subject`.
    pub(super) fn get(&self, subject: &[u8]) -> Option<&V> {
        self.entries.get(subject).map(|(_, value)| value)
    }

    /// Forgets the value remembered by `subject`, and gives it.
    pub(super) fn forget(&mut self, subject: &[u8]) -> Option<V> {
        let (_, value) = self.entries.remove(subject)?;
        self.held -= subject.len() + value.weight();
        Some(value)
    }

    /// How many values it remembers.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_current(&self, stamp: u64, subject: &[u8]) -> bool {
        self.entries.get(subject).is_some_and(|e| e.0 == stamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A number weighs as many bytes as it says.
    impl Weighed for i32 {
        fn weight(&self) -> usize {
            *self as usize
        }
    }

    #[test]
    fn past_the_bytes_the_oldest_is_forgotten_and_what_is_forgotten_weighs_nothing_more() {
        // Each entry weighs its subject's byte and its value.
        let mut r = Remembered::new(10, 29);
        assert_eq!(r.remember(b"a", 9), None);
        assert_eq!(r.remember(b"b", 9), None);
        assert_eq!(r.remember(b"c", 9), Some(b"a".to_vec()), "30 bytes held");
        assert_eq!(r.remember(b"b", 1), None, "b weighs 2 now: 12 held");
        assert_eq!(r.forget(b"c"), Some(9));
        assert_eq!(r.remember(b"d", 26), None, "29 held");
        assert_eq!(r.remember(b"e", 0), Some(b"b".to_vec()), "30 held");
        assert_eq!((r.len(), r.held), (2, 28));
    }

    #[test]
    fn past_the_bound_the_oldest_is_forgotten_and_a_forgotten_one_leaves_no_trace() {
        let mut r = Remembered::new(2, usize::MAX);
        r.remember(b"a", 1);
        r.remember(b"b", 2);
        assert_eq!(r.forget(b"a"), Some(1));
        r.remember(b"c", 3);
        assert_eq!((r.get(b"b"), r.get(b"c"), r.len()), (Some(&2), Some(&3), 2));
        r.remember(b"d", 4);
        assert_eq!((r.get(b"b"), r.len()), (None, 2), "b was the oldest");
        r.remember(b"c", 5);
        r.remember(b"e", 6);
        assert_eq!((r.get(b"d"), r.get(b"c")), (None, Some(&5)));
        r.remember(b"x", 0);
        assert_eq!(
            (r.get(b"c"), r.len()),
            (None, 2),
            "c was remembered again, yet oldest"
        );
        for n in 0..100 {
            r.remember(b"x", n);
            r.forget(b"x");
        }
        assert!(r.order.len() <= 4, "stale stamps are swept");
        assert_eq!((r.len(), r.get(b"e")), (1, Some(&6)));
    }
}
