//! `intent-atomic`: every `task_accepted` has an `intent_recorded` with the same `event_id` and the
//! same `store_rev`, i.e. the task and its outbox row were committed in one transaction.

use outbox_trace::{Field, Kind};

use super::{earliest, Finding, Invariant, Outcome, Skips, Violation};
use crate::history::History;
use crate::intern::{FastMap, FastState, Id};

/// Decides `intent-atomic`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    let mut exact: std::collections::HashSet<(Id, i64), FastState> = Default::default();
    let mut any_intent: FastMap<Id, usize> = FastMap::default();
    let mut unusable_intent: std::collections::HashSet<Id, FastState> = Default::default();
    for (at, r) in h.of(Kind::IntentRecorded) {
        if !skips.usable(r, &[Field::EventId, Field::StoreRev]) {
            if let Some(e) = r.event {
                unusable_intent.insert(e);
            }
            continue;
        }
        if let (Some(e), Some(rev)) = (r.event, r.store_rev()) {
            exact.insert((e, rev));
            any_intent.entry(e).or_insert(at);
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
        if exact.contains(&(e, rev)) || unusable_intent.contains(&e) {
            continue;
        }
        let v = match any_intent.get(&e) {
            Some(&intent) => Violation::new(
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
