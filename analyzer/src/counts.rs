//! The one-line summary of a scenario: how many tasks, publishes, copies, deliveries, effects and
//! ACKs it holds, and the final counter.

use outbox_trace::Kind;
use serde::Serialize;

use crate::check::{json_int, last_detail};
use crate::history::History;
use crate::intern::IdTable;

/// Counts over one history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Distinct `task_id`s accepted.
    pub tasks: u64,
    /// `publish_attempt` rows.
    pub publish_attempts: u64,
    /// Distinct `broker_seq`s seen on publish ACKs and deliveries: copies in the stream.
    pub stream_copies: u64,
    /// `delivered` rows.
    pub deliveries: u64,
    /// `redelivered` rows.
    pub redeliveries: u64,
    /// `duplicate_suppressed` rows.
    pub suppressions: u64,
    /// `effect_committed` rows.
    pub effects: u64,
    /// `acked` rows.
    pub acks: u64,
    /// `crash` rows.
    pub crashes: u64,
    /// The observed counter, or else the counter of the last commit in `store_rev` order.
    pub counter: Option<i64>,
}

impl Counts {
    /// Counts `h`, visiting only the rows of the kinds counted.
    pub fn of(h: &History) -> Self {
        let n = |k| h.count(k) as u64;
        let mut c = Counts {
            publish_attempts: n(Kind::PublishAttempt),
            deliveries: n(Kind::Delivered),
            redeliveries: n(Kind::Redelivered),
            suppressions: n(Kind::DuplicateSuppressed),
            effects: n(Kind::EffectCommitted),
            acks: n(Kind::Acked),
            crashes: n(Kind::Crash),
            ..Counts::default()
        };
        let mut seen = IdTable::new(h.id_bound(), false);
        for t in h.of(Kind::TaskAccepted).filter_map(|(_, r)| r.task) {
            c.tasks += u64::from(!std::mem::replace(seen.get_mut(t), true));
        }
        let copies: Vec<u64> = [Kind::PublishAcked, Kind::Delivered, Kind::Redelivered]
            .iter()
            .flat_map(|&k| h.of(k))
            .filter_map(|(_, r)| r.broker_seq())
            .collect();
        c.stream_copies = distinct(copies);
        let mut last_commit: Option<(i64, i64)> = None;
        for (_, r) in h.of(Kind::EffectCommitted) {
            if let (Some(rev), Some(counter)) = (r.store_rev(), r.counter()) {
                if last_commit.is_none_or(|(top, _)| rev >= top) {
                    last_commit = Some((rev, counter));
                }
            }
        }
        c.counter = last_detail(h, Kind::Observed)
            .and_then(|(_, d)| json_int(&d, "counter"))
            .or(last_commit.map(|(_, counter)| counter));
        c
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
    use super::distinct;

    #[test]
    fn distinct_counts_dense_and_sparse_values() {
        assert_eq!(distinct(vec![]), 0);
        assert_eq!(distinct(vec![5, 3, 5, 4, 3]), 3);
        assert_eq!(distinct(vec![u64::MAX, 0, u64::MAX, 7]), 3);
        assert_eq!(distinct((0..1000).chain(500..1500).collect()), 1500);
    }
}
