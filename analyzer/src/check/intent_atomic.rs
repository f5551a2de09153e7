//! `intent-atomic`: every `task_accepted` has an `intent_recorded` with the same `event_id` and the
//! same `store_rev`, i.e. the task and its outbox row were committed in one transaction.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Reason, Skips, Violation};
use crate::history::History;
use crate::intern::{FastState, Id, IdTable};

/// Decides `intent-atomic`.
pub fn check(h: &History) -> Outcome {
    // A source that reports no store transactions cannot show two rows committed together.
    let rows = || h.of(Kind::TaskAccepted).chain(h.of(Kind::IntentRecorded));
    if rows().next().is_some() && rows().all(|(_, r)| r.store_rev().is_none()) {
        return Outcome::unknown(Invariant::IntentAtomic, Reason::NoStoreRev);
    }
    let mut skips = Skips::default();
    // Per event: its first usable intent, and whether one was unusable; the `(event, store_rev)`
    // of further intents whose `store_rev` differs from the first's (rare) in `other_revs`.
    let mut intents: IdTable<(Option<u32>, bool)> = IdTable::new(h.id_bound(), (None, false));
    let mut other_revs: std::collections::HashSet<(Id, i64), FastState> = Default::default();
    for (at, r) in h.of(Kind::IntentRecorded) {
        if !skips.usable(r, &[Field::EventId, Field::StoreRev]) {
            if let Some(e) = r.event {
                intents.get_mut(e).1 = true;
            }
            continue;
        }
        if let (Some(e), Some(rev)) = (r.event, r.store_rev()) {
            match intents.get_mut(e).0 {
                Some(first) if h.rows[first as usize].store_rev() != Some(rev) => {
                    other_revs.insert((e, rev));
                }
                Some(_) => {}
                ref mut first @ None => *first = Some(row32(at)),
            }
        }
    }
    let mut found = Vec::new();
    for (at, r) in h.of(Kind::TaskAccepted) {
        if !skips.usable(r, &[Field::EventId, Field::StoreRev]) {
            continue;
        }
        let (Some(e), Some(rev)) = (r.event, r.store_rev()) else {
            continue;
        };
        let (first, unusable) = *intents.get(e);
        let first = first.map(|i| i as usize);
        let exact = first.is_some_and(|i| h.rows[i].store_rev() == Some(rev))
            || other_revs.contains(&(e, rev));
        if exact || unusable {
            continue;
        }
        let v = match first {
            Some(intent) => Violation::new(
                Some(e),
                r.task,
                Finding::IntentOtherRev {
                    accepted: at,
                    intent,
                },
                vec![at, intent],
            ),
            None => Violation::new(
                Some(e),
                r.task,
                Finding::IntentMissing { accepted: at },
                vec![at],
            ),
        };
        found.push((at, v));
    }
    let (kept, more) = earliest(found);
    Outcome::judge(Invariant::IntentAtomic, kept, more, skips.reason())
}
