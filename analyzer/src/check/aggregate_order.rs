//! `aggregate-order`: per `aggregate_id`, the events' first `publish_attempt`s (by `seq`) go out in
//! ascending `aggregate_seq`. The aggregate fields come from the publish row, or else from the
//! event's `intent_recorded` / `task_accepted` row.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Reason, Skips, Violation};
use crate::history::History;
use crate::intern::{Id, IdTable};

/// Decides `aggregate-order`.
pub fn check(h: &History) -> Outcome {
    let bound = h.id_bound();
    let mut from_intent: IdTable<Option<(Id, u64)>> = IdTable::new(bound, None);
    let mut seen = IdTable::new(bound, false);
    let mut first_publishes: Vec<usize> = Vec::new();
    let mut skips = Skips::default();
    let intents = h.of(Kind::IntentRecorded).chain(h.of(Kind::TaskAccepted));
    for (_, r) in intents {
        if let (Some(e), Some(a), Some(s)) = (r.event, r.aggregate, r.aggregate_seq()) {
            from_intent.get_mut(e).get_or_insert((a, s));
        }
    }
    for (at, r) in h.of(Kind::PublishAttempt) {
        if !skips.usable(r, &[Field::EventId]) {
            continue;
        }
        if r.event
            .is_some_and(|e| !std::mem::replace(seen.get_mut(e), true))
        {
            first_publishes.push(at);
        }
    }
    // Per aggregate: the highest aggregate_seq published so far, and by which row.
    let mut highest: IdTable<Option<(u64, u32)>> = IdTable::new(bound, None);
    let mut any = false;
    let mut found = Vec::new();
    for at in first_publishes {
        let r = &h.rows[at];
        let info = match (r.aggregate, r.aggregate_seq()) {
            (Some(a), Some(s)) => Some((a, s)),
            _ => r.event.and_then(|e| *from_intent.get(e)),
        };
        let Some((aggregate, seq)) = info else {
            continue;
        };
        any = true;
        match *highest.get(aggregate) {
            Some((top, earlier)) if seq < top => {
                let earlier = earlier as usize;
                let finding = Finding::AggregateOutOfOrder {
                    aggregate,
                    earlier,
                    earlier_seq: top,
                    later: at,
                    later_seq: seq,
                };
                found.push((
                    at,
                    Violation::new(r.event, r.task, finding, vec![earlier, at]),
                ));
            }
            Some((top, _)) if seq == top => {}
            _ => {
                *highest.get_mut(aggregate) = Some((seq, row32(at)));
            }
        }
    }
    if !any {
        return Outcome::pass(Invariant::AggregateOrder, Some(Reason::NoAggregateInfo));
    }
    let (kept, more) = earliest(found);
    Outcome::judge(Invariant::AggregateOrder, kept, more, skips.reason())
}
