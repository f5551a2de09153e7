//! The figures of one scenario, defined once: the recorder's summary and `--report` JSON,
//! `analyzer check --json`, the report's `lab.json`, `analyzer compare` and `recorder bench` all
//! count with [`FigureTally`], so one key means one number everywhere.
//!
//! | figure | definition |
//! |---|---|
//! | `tasks` | distinct `task_id`s of `task_accepted` rows |
//! | `publish_attempts` | `publish_attempt` rows |
//! | `publish_acks_lost` | `publish_unacked` rows |
//! | `stream_copies` | distinct `broker_seq`s of `publish_acked`, `delivered` and `redelivered` rows |
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

use std::collections::HashSet;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::detail::Observed;
use crate::{Event, Kind};

/// The figures of one scenario (see the module's table for each definition).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Distinct accepted tasks.
    pub tasks: u64,
    /// Publish attempts.
    pub publish_attempts: u64,
    /// Publishes whose ACK never came.
    pub publish_acks_lost: u64,
    /// Distinct broker positions seen in the trace.
    pub stream_copies: u64,
    /// The broker's own message count, from the observer.
    pub stream_messages: Option<i64>,
    /// Every delivery: first ones and redeliveries.
    pub deliveries: u64,
    /// Redeliveries.
    pub redeliveries: u64,
    /// Duplicates suppressed.
    pub suppressions: u64,
    /// Effects committed.
    pub effects: u64,
    /// Consumer ACKs.
    pub acks: u64,
    /// Crashes.
    pub crashes: u64,
    /// Commits that lost a revision race.
    pub conflicts: u64,
    /// The final counter.
    pub counter: Option<i64>,
    /// Results the observer read.
    pub results: Option<i64>,
    /// Dedup keys the observer read.
    pub dedup_keys: Option<i64>,
    /// Outbox records still pending when the observer read.
    pub outbox_pending: Option<i64>,
}

/// Counts [`Figures`] one row at a time, in any order. `K` is whatever identifies a task to the
/// caller: a `String` in the recorder, an interned id in the analyzer.
#[derive(Debug, Clone)]
pub struct FigureTally<K> {
    figures: Figures,
    /// Distinct accepted tasks (a fast hash: millions of them on a large trace).
    tasks: HashSet<K, foldhash::fast::RandomState>,
    copies: Vec<u64>,
    last_commit: Option<(i64, i64)>,
    observed: Option<Observed>,
}

impl<K> Default for FigureTally<K> {
    fn default() -> Self {
        FigureTally {
            figures: Figures::default(),
            tasks: HashSet::default(),
            copies: Vec::new(),
            last_commit: None,
            observed: None,
        }
    }
}

/// What [`FigureTally::add`] needs of a row.
#[derive(Debug, Clone, Copy)]
pub struct FigureRow<K> {
    /// The row's kind.
    pub kind: Kind,
    /// Its `task_id`.
    pub task: Option<K>,
    /// Its `broker_seq`.
    pub broker_seq: Option<u64>,
    /// Its `store_rev`.
    pub store_rev: Option<i64>,
    /// Its `counter`.
    pub counter: Option<i64>,
}

impl<'a> FigureRow<&'a str> {
    /// What the tally needs of a row of the flat model.
    pub fn of(event: &'a Event) -> Self {
        FigureRow {
            kind: event.kind,
            task: event.task_id.as_deref(),
            broker_seq: event.broker_seq,
            store_rev: event.store_rev,
            counter: event.counter,
        }
    }
}

impl<K: Hash + Eq> FigureTally<K> {
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
            if let Some(b) = row.broker_seq {
                self.copies.push(b);
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

    /// Adds the rows another tally counted (of the same scenario) to this one.
    pub fn merge(&mut self, other: FigureTally<K>) {
        let (a, b) = (&mut self.figures, other.figures);
        a.publish_attempts += b.publish_attempts;
        a.publish_acks_lost += b.publish_acks_lost;
        a.deliveries += b.deliveries;
        a.redeliveries += b.redeliveries;
        a.suppressions += b.suppressions;
        a.effects += b.effects;
        a.acks += b.acks;
        a.crashes += b.crashes;
        a.conflicts += b.conflicts;
        self.tasks.extend(other.tasks);
        self.copies.extend(other.copies);
        if let Some((rev, counter)) = other.last_commit {
            if self.last_commit.is_none_or(|(top, _)| rev >= top) {
                self.last_commit = Some((rev, counter));
            }
        }
        if other.observed.is_some() {
            self.observed = other.observed;
        }
    }

    /// The consumer ACKs counted so far (cheap: no distinct counts are taken).
    pub fn acks(&self) -> u64 {
        self.figures.acks
    }

    /// The figures so far.
    pub fn figures(&self) -> Figures {
        let mut f = self.figures.clone();
        f.tasks = self.tasks.len() as u64;
        f.stream_copies = distinct(self.copies.clone());
        let o = self.observed.as_ref();
        f.stream_messages = o.and_then(|o| o.stream_messages);
        f.counter = o
            .and_then(|o| o.counter)
            .or(self.last_commit.map(|(_, counter)| counter));
        f.results = o.and_then(Observed::results);
        f.dedup_keys = o.and_then(|o| o.dedup_keys);
        f.outbox_pending = o.and_then(|o| o.outbox_pending);
        f
    }
}

/// How many distinct values `values` holds: a bitmap over their range when it is dense (broker
/// positions usually are), else a sort.
fn distinct(mut values: Vec<u64>) -> u64 {
    let (Some(&low), Some(&high)) = (values.iter().min(), values.iter().max()) else {
        return 0;
    };
    let span = high - low;
    if span / 64 <= values.len() as u64 {
        let mut bits = vec![0u64; (span / 64 + 1) as usize];
        for v in &values {
            let i = v - low;
            bits[(i / 64) as usize] |= 1 << (i % 64);
        }
        return bits.iter().map(|w| u64::from(w.count_ones())).sum();
    }
    values.sort_unstable();
    values.dedup();
    values.len() as u64
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
            store_rev: None,
            counter: None,
        }
    }

    #[test]
    fn distinct_counts_dense_and_sparse_values() {
        assert_eq!(distinct(vec![]), 0);
        assert_eq!(distinct(vec![5, 3, 5, 4, 3]), 3);
        assert_eq!(distinct(vec![u64::MAX, 0, u64::MAX, 7]), 3);
        assert_eq!(distinct((0..1000).chain(500..1500).collect()), 1500);
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
    fn the_counter_is_observed_else_the_last_commit_by_store_rev() {
        let mut t: FigureTally<&str> = FigureTally::default();
        for (rev, counter) in [(5, 3), (9, 8), (7, 5)] {
            t.add(FigureRow {
                kind: Kind::EffectCommitted,
                task: None,
                broker_seq: None,
                store_rev: Some(rev),
                counter: Some(counter),
            });
        }
        assert_eq!(t.figures().counter, Some(8));
        t.observe(&Observed {
            counter: Some(10),
            ..Observed::default()
        });
        assert_eq!(t.figures().counter, Some(10));
    }
}
