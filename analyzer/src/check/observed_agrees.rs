//! `observed-agrees`: the last `observed` row's totals agree with the trace. `results` (or its
//! synonym `processed`) and `dedup_keys` equal the number of `effect_committed` rows;
//! `stream_messages` is at least the number of distinct events with a `publish_acked`; `tasks`
//! equals the distinct accepted tasks and `outbox_published + outbox_pending` the distinct
//! intents (observer-filled rows included). A comparison is made only where its keys are present,
//! the stream one only where the publish ACKs carry positions (a broker without them, such as a
//! RabbitMQ classic queue, holds copies the trace cannot count). A comparison whose trace side
//! counts a kind the trace is no evidence of (no rows and not declared, or refused spans, or no
//! rows where spans mapped to no kind: [`Ends::doubt`]) is not made either, and the outcome is
//! `unknown` where nothing else fails.

use outbox_trace::{Field, Kind};

use super::{Decision, Ends, Finding, Invariant, Outcome, Reason, Skips, Total, Violation};
use crate::model::intern::IdSet;
use crate::model::row::Row;

/// Decides `observed-agrees`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    effects: i64,
    published: IdSet,
    tasks: IdSet,
    intents: IdSet,
    /// Whether a `publish_acked` row carries a position.
    positions: bool,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[
            Kind::EffectCommitted,
            Kind::PublishAcked,
            Kind::TaskAccepted,
            Kind::IntentRecorded,
        ]
    }

    fn row(&mut self, _: usize, r: &Row) {
        let (distinct, field, id) = match r.kind {
            Kind::EffectCommitted => {
                self.effects += 1;
                return;
            }
            Kind::PublishAcked => {
                self.positions |= r.broker_seq().is_some();
                (&mut self.published, Field::EventId, r.event)
            }
            Kind::TaskAccepted => (&mut self.tasks, Field::TaskId, r.task),
            Kind::IntentRecorded => (&mut self.intents, Field::EventId, r.event),
            _ => return,
        };
        if let (true, Some(id)) = (self.skips.usable(r, &[field]), id) {
            distinct.insert(id);
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        let Some((at, observed)) = &ends.observed else {
            return Outcome::unknown(Invariant::ObservedAgrees, Reason::NoObserved).into();
        };
        let outbox = match (observed.outbox_published, observed.outbox_pending) {
            (Some(p), Some(q)) => Some(p.saturating_add(q)),
            _ => None,
        };
        let streamed = observed.stream_messages.filter(|_| self.positions);
        let comparisons: [(Total, Option<i64>, i64, bool); 6] = [
            (Total::Results, observed.results, self.effects, false),
            (Total::Processed, observed.processed, self.effects, false),
            (Total::DedupKeys, observed.dedup_keys, self.effects, false),
            (
                Total::StreamMessages,
                streamed,
                self.published.members(),
                true,
            ),
            (Total::Tasks, observed.tasks, self.tasks.members(), false),
            (Total::Intents, outbox, self.intents.members(), false),
        ];
        let mut compared = 0;
        let mut violations = Vec::new();
        let mut silent = None;
        for (total, observed, trace, at_least) in comparisons {
            let Some(observed) = observed else {
                continue;
            };
            if let Some(reason) = doubt(ends, total) {
                silent = silent.or(Some(reason));
                continue;
            }
            compared += 1;
            let ok = if at_least {
                observed >= trace
            } else {
                observed == trace
            };
            if !ok {
                let finding = Finding::ObservedMismatch {
                    observed_row: *at,
                    total,
                    observed,
                    trace,
                    at_least,
                };
                violations.push(Violation::new(None, None, finding, vec![*at]));
            }
        }
        if let (true, Some(reason)) = (violations.is_empty(), silent) {
            return Outcome::unknown(Invariant::ObservedAgrees, reason).into();
        }
        if compared == 0 {
            return Outcome::unknown(Invariant::ObservedAgrees, Reason::NoObservedTotals).into();
        }
        // All of them (at most six): `lost_rows` drops those that lost rows explain, then keeps
        // the examples.
        Outcome::judge(
            Invariant::ObservedAgrees,
            violations,
            0,
            self.skips.reason(),
        )
        .into()
    }
}

/// Why the trace side of `total` is no evidence, if it is not: the kind it counts has no rows
/// and is not declared, or lost spans the producer counted.
fn doubt(ends: &Ends, total: Total) -> Option<Reason> {
    let kind: &'static [Kind] = match total {
        Total::Results | Total::Processed | Total::DedupKeys => &[Kind::EffectCommitted],
        Total::StreamMessages => &[Kind::PublishAcked],
        Total::Tasks => &[Kind::TaskAccepted],
        Total::Intents => &[Kind::IntentRecorded],
    };
    ends.lacks(kind).or_else(|| ends.refused(kind[0]))
}
