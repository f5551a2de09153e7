//! `mark-after-puback`: every `outbox_marked` has an earlier (lower `seq`) `publish_acked` of the
//! same `event_id`. Marking first means a crash or a lost publish drops the event for good.
//! Unknown when the scenario publishes or delivers but has no `outbox_marked`, or marks but has
//! no `publish_acked` (each unless the producer declared it reports them).

use outbox_trace::{Field, Kind};

use super::{earliest, Decision, Ends, Finding, Invariant, Outcome, Pos, Skips, Violation};
use crate::model::intern::{FastMap, Id, IdSet};
use crate::model::row::Row;

/// Decides `mark-after-puback`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    /// Events with a `publish_acked`.
    pubacked: IdSet,
    /// Per event marked early, its first `publish_acked` (after the mark; none: not yet).
    late_puback: FastMap<Id, Pos>,
    /// Marks with no `publish_acked` before them: `(position, event, task)`.
    early: Vec<(usize, Id, Option<Id>)>,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::PublishAcked, Kind::OutboxMarked]
    }

    fn row(&mut self, at: usize, r: &Row) {
        if !matches!(r.kind, Kind::PublishAcked | Kind::OutboxMarked) {
            return;
        }
        if !self.skips.usable(r, &[Field::EventId]) {
            return;
        }
        let Some(e) = r.event else { return };
        if r.kind == Kind::PublishAcked {
            if self.pubacked.insert(e) {
                if let Some(first) = self.late_puback.get_mut(&e) {
                    *first = Pos::at(at);
                }
            }
        } else if !self.pubacked.contains(e) {
            self.late_puback.entry(e).or_insert(Pos::NONE);
            self.early.push((at, e, r.task));
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Publishes or deliveries and not one mark, or marks and not one publish ACK: the trace
        // does not report one side of the order judged.
        let moved = ends.any(&[
            Kind::PublishAttempt,
            Kind::PublishAcked,
            Kind::Delivered,
            Kind::Redelivered,
        ]);
        let silent = moved
            .then(|| ends.lacks(&[Kind::OutboxMarked]))
            .flatten()
            .or_else(|| {
                ends.any(&[Kind::OutboxMarked])
                    .then(|| ends.lacks(&[Kind::PublishAcked]))
                    .flatten()
            });
        if let Some(reason) = silent {
            return Outcome::unknown(Invariant::MarkAfterPuback, reason).into();
        }
        let found = self.early.iter().map(|&(at, e, task)| {
            let puback = self.late_puback.get(&e).and_then(|p| p.get());
            let mut witness = vec![at];
            witness.extend(puback);
            let finding = Finding::MarkBeforePuback {
                mark: at,
                later_puback: puback,
            };
            (at, Violation::new(Some(e), task, finding, witness))
        });
        let (kept, more) = earliest(found);
        Outcome::judge(Invariant::MarkAfterPuback, kept, more, self.skips.reason()).into()
    }
}
