//! `mark-after-puback`: every `outbox_marked` has an earlier (lower `seq`) `publish_acked` of the
//! same `event_id`. Marking first means a crash or a lost publish drops the event for good.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Skips, Violation};
use crate::history::History;
use crate::intern::IdTable;

/// Decides `mark-after-puback`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    // Per event: its first `publish_acked`.
    let mut first_puback: IdTable<Option<u32>> = IdTable::new(h.id_bound(), None);
    for (at, r) in h.of(Kind::PublishAcked) {
        if skips.usable(r, &[Field::EventId]) {
            if let Some(e) = r.event {
                first_puback.get_mut(e).get_or_insert(row32(at));
            }
        }
    }
    let mut found = Vec::new();
    for (at, r) in h.of(Kind::OutboxMarked) {
        if !skips.usable(r, &[Field::EventId]) {
            continue;
        }
        let Some(e) = r.event else { continue };
        let puback = first_puback.get(e).map(|p| p as usize);
        if puback.is_some_and(|p| p < at) {
            continue;
        }
        let mut witness = vec![at];
        witness.extend(puback);
        let finding = Finding::MarkBeforePuback {
            mark: at,
            later_puback: puback,
        };
        found.push((at, Violation::new(Some(e), r.task, finding, witness)));
    }
    let (kept, more) = earliest(found);
    Outcome::judge(Invariant::MarkAfterPuback, kept, more, skips.reason())
}
