//! The figures of one scenario, defined once: the recorder's summary and `--report` JSON,
//! `analyzer check --json`, the report's `lab.json`, `analyzer compare` and `outbox-bench` all
//! count with [`FigureTally`], so one key means one number everywhere.
//!
//! | figure | definition |
//! |---|---|
//! | `tasks` | distinct `task_id`s of `task_accepted` rows |
//! | `publish_attempts` | `publish_attempt` rows |
//! | `publish_acks_lost` | `publish_unacked` rows |
//! | `stream_copies` | distinct `(partition, broker_seq)` pairs of `publish_acked`, `delivered` and `redelivered` rows (a null `partition`: the broker's one sequence), plus the `publish_acked` rows without a `broker_seq` (a broker without positions) |
//! | `stream_messages` | the broker's own count, `observed.stream_messages` (absent without it) |
//! | `deliveries` | `delivered` + `redelivered` rows: every copy a worker received |
//! | `redeliveries` | `redelivered` rows |
//! | `suppressions` | `duplicate_suppressed` rows |
//! | `effects` | `effect_committed` rows (observer-filled ones included) |
//! | `acks` | `acked` rows |
//! | `crashes` | `crash` rows |
//! | `conflicts` | `commit_conflict` rows |
//! | `counter` | `observed.counter`, else the `counter` of the last commit in `store_rev` order |
//! | `results`, `dedup_keys`, `outbox_pending` | the `observed` values of the same names |

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use foldhash::fast::RandomState;

use serde::{Deserialize, Serialize};

use crate::detail::Observed;
use crate::{Event, Kind};

/// The figures of one scenario (see the module's table for each definition).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Distinct `task_id`s of `task_accepted` rows, observer-filled ones included.
    pub tasks: u64,
    /// `publish_attempt` rows, retries included.
    pub publish_attempts: u64,
    /// Publishes whose ACK never came.
    pub publish_acks_lost: u64,
    /// Distinct broker positions seen in the trace.
    pub stream_copies: u64,
    /// The broker's own message count, from the observer.
    pub stream_messages: Option<i64>,
    /// Every delivery: first ones and redeliveries.
    pub deliveries: u64,
    /// `redelivered` rows: copies the broker handed out again because no consumer ACK came in time.
    pub redeliveries: u64,
    /// `duplicate_suppressed` rows: copies whose dedup key was already stored, so no effect ran.
    pub suppressions: u64,
    /// `effect_committed` rows, observer-filled ones included.
    pub effects: u64,
    /// `acked` rows: consumer ACKs sent.
    pub acks: u64,
    /// `crash` rows of every actor, whatever the crash point.
    pub crashes: u64,
    /// Commits that lost a revision race.
    pub conflicts: u64,
    /// `observed.counter`, else the `counter` of the last commit in `store_rev` order; `None` when
    /// the trace has neither.
    pub counter: Option<i64>,
    /// The `observed` count of effect results (`results`, or its synonym `processed`); `None`
    /// without an `observed` row.
    pub results: Option<i64>,
    /// The `observed` count of dedup keys; `None` without an `observed` row.
    pub dedup_keys: Option<i64>,
    /// Outbox records still pending when the observer read.
    pub outbox_pending: Option<i64>,
}

/// Whatever identifies a task to a [`FigureTally`], with the set that counts distinct ones.
pub trait TaskKey: Sized {
    /// A set of keys that counts its distinct members.
    type Set: KeySet<Self>;
}

/// A set of keys, counting its distinct members.
pub trait KeySet<K>: Default {
    /// Adds `key`.
    fn insert(&mut self, key: K);
    /// How many distinct keys were added.
    fn count(&self) -> u64;
}

impl<K: Hash + Eq> KeySet<K> for HashSet<K, RandomState> {
    fn insert(&mut self, key: K) {
        HashSet::insert(self, key);
    }

    fn count(&self) -> u64 {
        self.len() as u64
    }
}

impl TaskKey for String {
    type Set = HashSet<String, RandomState>;
}

impl<'a> TaskKey for &'a str {
    type Set = HashSet<&'a str, RandomState>;
}

/// Counts [`Figures`] one row at a time, in any order. `K` is whatever identifies a task to the
/// caller: a `String` in the recorder, an interned id in the analyzer (whose set is a bitmap).
#[derive(Debug, Clone)]
pub struct FigureTally<K: TaskKey> {
    figures: Figures,
    /// Distinct accepted tasks.
    tasks: K::Set,
    /// Distinct broker positions of the broker's one sequence (rows without a `partition`).
    copies: DistinctU64,
    /// Distinct broker positions per partition, for a broker that orders per partition.
    partitions: HashMap<i32, DistinctU64, RandomState>,
    /// Publish ACKs without a position: each is a copy the broker holds.
    unnumbered: u64,
    last_commit: Option<(i64, i64)>,
    observed: Option<Observed>,
}

impl<K: TaskKey> Default for FigureTally<K> {
    fn default() -> Self {
        FigureTally {
            figures: Figures::default(),
            tasks: K::Set::default(),
            copies: DistinctU64::default(),
            partitions: HashMap::default(),
            unnumbered: 0,
            last_commit: None,
            observed: None,
        }
    }
}

/// What [`FigureTally::add`] needs of a row.
#[derive(Debug, Clone, Copy)]
pub struct FigureRow<K> {
    /// The row's kind: it decides which figure, if any, the row counts toward.
    pub kind: Kind,
    /// Its `task_id`, counted toward `tasks` on a `task_accepted` row.
    pub task: Option<K>,
    /// Its `broker_seq`, counted toward `stream_copies` on a row that saw a copy.
    pub broker_seq: Option<u64>,
    /// Its `partition`: positions count per partition (`None`: the broker's one sequence).
    pub partition: Option<i32>,
    /// Its `store_rev`: of the commits, the highest one gives the final `counter`.
    pub store_rev: Option<i64>,
    /// Its `counter`, the final one when its commit has the highest `store_rev`.
    pub counter: Option<i64>,
}

impl<'a> FigureRow<&'a str> {
    /// What the tally needs of a row of the flat model.
    pub fn of(event: &'a Event) -> Self {
        FigureRow {
            kind: event.kind,
            task: event.task_id.as_deref(),
            broker_seq: event.broker_seq,
            partition: event.partition,
            store_rev: event.store_rev,
            counter: event.counter,
        }
    }
}

impl<K: TaskKey> FigureTally<K> {
    /// Counts one row.
    pub fn add(&mut self, row: FigureRow<K>) {
        let f = &mut self.figures;
        match row.kind {
            Kind::TaskAccepted => {
                if let Some(t) = row.task {
                    self.tasks.insert(t);
                }
            }
            Kind::PublishAttempt => f.publish_attempts += 1,
            Kind::PublishUnacked => f.publish_acks_lost += 1,
            Kind::Delivered => f.deliveries += 1,
            Kind::Redelivered => {
                f.deliveries += 1;
                f.redeliveries += 1;
            }
            Kind::DuplicateSuppressed => f.suppressions += 1,
            Kind::EffectCommitted => {
                f.effects += 1;
                if let (Some(rev), Some(counter)) = (row.store_rev, row.counter) {
                    if self.last_commit.is_none_or(|(top, _)| rev >= top) {
                        self.last_commit = Some((rev, counter));
                    }
                }
            }
            Kind::Acked => f.acks += 1,
            Kind::Crash => f.crashes += 1,
            Kind::CommitConflict => f.conflicts += 1,
            _ => {}
        }
        if matches!(
            row.kind,
            Kind::PublishAcked | Kind::Delivered | Kind::Redelivered
        ) {
            match row.broker_seq {
                Some(b) => match row.partition {
                    None => self.copies.insert(b),
                    Some(p) => self.partitions.entry(p).or_default().insert(b),
                },
                None if row.kind == Kind::PublishAcked => self.unnumbered += 1,
                None => {}
            }
        }
    }

    /// Takes the ground truth of an `observed` row; the last one counts.
    pub fn observe(&mut self, observed: &Observed) {
        self.observed = Some(observed.clone());
    }

    /// The ground truth taken, if any.
    pub fn observed(&self) -> Option<&Observed> {
        self.observed.as_ref()
    }

    /// The consumer ACKs counted so far (cheap: no distinct counts are taken).
    pub fn acks(&self) -> u64 {
        self.figures.acks
    }

    /// The figures of the rows added so far; the distinct counts are taken on each call.
    pub fn figures(&self) -> Figures {
        let mut f = self.figures.clone();
        f.tasks = self.tasks.count();
        let partitioned: u64 = self.partitions.values().map(DistinctU64::count).sum();
        f.stream_copies = self.copies.count() + partitioned + self.unnumbered;
        let o = self.observed.as_ref();
        f.stream_messages = o.and_then(|o| o.stream_messages);
        // The run's one counter: none to show when the store reports counters by key.
        f.counter = match o.and_then(|o| o.counter.as_ref()) {
            Some(observed) => observed.one(),
            None => self.last_commit.map(|(_, counter)| counter),
        };
        f.results = o.and_then(Observed::results);
        f.dedup_keys = o.and_then(|o| o.dedup_keys);
        f.outbox_pending = o.and_then(|o| o.outbox_pending);
        f
    }
}

/// Distinct `u64` values, counted as they come, in about one bit each when they are dense
/// (broker positions count up from 1): a bitmap over the range the first values open, grown while
/// it stays within 64 bits per value added; values outside it are kept aside and sorted only when
/// counted.
#[derive(Debug, Clone, Default)]
pub struct DistinctU64 {
    /// The value of the bitmap's first bit (a multiple of 64).
    base: u64,
    bits: Vec<u64>,
    /// Bits set in `bits`.
    ones: u64,
    /// Values added (a bound on the bitmap's words).
    added: u64,
    /// Values outside the bitmap when they came.
    aside: Vec<u64>,
}

impl DistinctU64 {
    /// Words the bitmap may hold before its size is bound by the values added.
    const FREE_WORDS: u64 = 4096;

    /// Adds `v`.
    pub fn insert(&mut self, v: u64) {
        if self.added == 0 {
            self.base = v & !63;
        }
        self.added += 1;
        let word = match v.checked_sub(self.base) {
            Some(offset) => offset / 64,
            None => return self.aside.push(v),
        };
        if word >= self.bits.len() as u64 {
            if word >= Self::FREE_WORDS.max(self.added) {
                return self.aside.push(v);
            }
            self.bits.resize(word as usize + 1, 0);
        }
        let (w, bit) = (&mut self.bits[word as usize], 1u64 << (v % 64));
        if *w & bit == 0 {
            *w |= bit;
            self.ones += 1;
        }
    }

    /// Whether the bitmap holds `v`.
    fn in_bitmap(&self, v: u64) -> bool {
        let Some(offset) = v.checked_sub(self.base) else {
            return false;
        };
        usize::try_from(offset / 64)
            .ok()
            .and_then(|w| self.bits.get(w))
            .is_some_and(|w| w & (1 << (v % 64)) != 0)
    }

    /// How many distinct values were added.
    pub fn count(&self) -> u64 {
        let mut aside = self.aside.clone();
        aside.sort_unstable();
        aside.dedup();
        let outside = aside.iter().filter(|&&v| !self.in_bitmap(v)).count();
        self.ones + outside as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        kind: Kind,
        task: Option<&'static str>,
        broker_seq: Option<u64>,
    ) -> FigureRow<&'static str> {
        FigureRow {
            kind,
            task,
            broker_seq,
            partition: None,
            store_rev: None,
            counter: None,
        }
    }

    fn distinct(values: impl IntoIterator<Item = u64>) -> u64 {
        let mut d = DistinctU64::default();
        for v in values {
            d.insert(v);
        }
        d.count()
    }

    #[test]
    fn distinct_counts_dense_and_sparse_values() {
        assert_eq!(distinct([]), 0);
        assert_eq!(distinct([5, 3, 5, 4, 3]), 3);
        assert_eq!(distinct([u64::MAX, 0, u64::MAX, 7]), 3);
        assert_eq!(distinct((0..1000).chain(500..1500)), 1500);
        // Values below the first, far above it, then inside the range the bitmap grew to.
        assert_eq!(distinct([1000, 3, 1 << 40, 2 << 40, 1 << 40]), 4);
        let spread = (0..10_000u64).map(|i| i * 1_000_003);
        assert_eq!(distinct(spread.clone().chain(spread)), 10_000);
        let late = (0..300_000u64).rev().chain(0..300_000);
        assert_eq!(distinct(late), 300_000);
    }

    #[test]
    fn a_dense_range_takes_about_a_bit_per_value() {
        let mut d = DistinctU64::default();
        for v in 1..=1_000_000 {
            d.insert(v);
        }
        assert_eq!(d.count(), 1_000_000);
        assert!(d.aside.is_empty());
        assert!(d.bits.len() <= 1_000_000 / 64 + 1);
    }

    #[test]
    fn deliveries_count_redeliveries_too() {
        let mut t = FigureTally::default();
        t.add(row(Kind::TaskAccepted, Some("t1"), None));
        t.add(row(Kind::TaskAccepted, Some("t1"), None));
        t.add(row(Kind::PublishAcked, None, Some(1)));
        t.add(row(Kind::Delivered, None, Some(1)));
        t.add(row(Kind::Redelivered, None, Some(1)));
        let f = t.figures();
        assert_eq!(
            (f.tasks, f.deliveries, f.redeliveries, f.stream_copies),
            (1, 2, 1, 1)
        );
        assert_eq!(f.stream_messages, None);
    }

    #[test]
    fn stream_copies_count_positions_per_partition() {
        let mut t = FigureTally::default();
        let copy = |kind, partition, broker_seq| FigureRow {
            partition,
            ..row(kind, None, Some(broker_seq))
        };
        // Offset 5 in partitions 0 and 1 are two copies; a redelivery of one is none more.
        t.add(copy(Kind::PublishAcked, Some(0), 5));
        t.add(copy(Kind::PublishAcked, Some(1), 5));
        t.add(copy(Kind::Delivered, Some(0), 5));
        t.add(copy(Kind::Redelivered, Some(1), 5));
        t.add(copy(Kind::Delivered, Some(1), 6));
        assert_eq!(t.figures().stream_copies, 3);
        // A row without a partition counts in the broker's one sequence, apart from them.
        t.add(copy(Kind::Delivered, None, 5));
        assert_eq!(t.figures().stream_copies, 4);
    }

    #[test]
    fn the_counter_is_observed_else_the_last_commit_by_store_rev() {
        let mut t: FigureTally<&str> = FigureTally::default();
        for (rev, counter) in [(5, 3), (9, 8), (7, 5)] {
            t.add(FigureRow {
                kind: Kind::EffectCommitted,
                task: None,
                broker_seq: None,
                partition: None,
                store_rev: Some(rev),
                counter: Some(counter),
            });
        }
        assert_eq!(t.figures().counter, Some(8));
        t.observe(&Observed {
            counter: Some(10.into()),
            ..Observed::default()
        });
        assert_eq!(t.figures().counter, Some(10));
    }
}
