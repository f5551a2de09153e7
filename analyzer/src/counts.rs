//! The one-line summary of a scenario: how many tasks, publishes, copies, deliveries, effects and
//! ACKs it holds, and the final counter.

use std::collections::HashSet;

use outbox_trace::Kind;
use serde::Serialize;

use crate::check::{json_int, last_detail};
use crate::history::History;
use crate::intern::FastState;

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
        let tasks: HashSet<_, FastState> = h
            .of(Kind::TaskAccepted)
            .filter_map(|(_, r)| r.task)
            .collect();
        let copies: HashSet<u64, FastState> =
            [Kind::PublishAcked, Kind::Delivered, Kind::Redelivered]
                .iter()
                .flat_map(|&k| h.of(k))
                .filter_map(|(_, r)| r.broker_seq())
                .collect();
        let mut last_commit: Option<(i64, i64)> = None;
        for (_, r) in h.of(Kind::EffectCommitted) {
            if let (Some(rev), Some(counter)) = (r.store_rev(), r.counter()) {
                if last_commit.is_none_or(|(top, _)| rev >= top) {
                    last_commit = Some((rev, counter));
                }
            }
        }
        c.tasks = tasks.len() as u64;
        c.stream_copies = copies.len() as u64;
        c.counter = last_detail(h, Kind::Observed)
            .and_then(|(_, d)| json_int(&d, "counter"))
            .or(last_commit.map(|(_, counter)| counter));
        c
    }
}
