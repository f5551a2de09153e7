//! `ack-after-commit`: a worker may ACK a delivery only after it committed the effect (or found the
//! dedup key and suppressed it). For every `acked` of event E by actor A incarnation I, take the
//! latest delivery of E to A#I before it (the one with the same `broker_seq` when the ack has one);
//! between that delivery and the ack, A#I must have an `effect_committed` or `duplicate_suppressed`
//! of E. Otherwise a crash between the ACK and the commit loses the task.

use outbox_trace::{Field, Kind};

use super::{earliest, Finding, Invariant, Outcome, Skips, Violation};
use crate::history::History;
use crate::intern::{FastMap, Id};

/// An actor incarnation and an event.
type Key = (Id, u32, Id);

/// Decides `ack-after-commit`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    let mut last_delivery: FastMap<Key, usize> = FastMap::default();
    let mut last_delivery_copy: FastMap<(Key, u64), usize> = FastMap::default();
    let mut last_settle: FastMap<Key, usize> = FastMap::default();
    let mut found: Vec<(usize, (Option<usize>, usize))> = Vec::new();
    for (at, r) in h.rows.iter().enumerate() {
        let settles = matches!(r.kind, Kind::EffectCommitted | Kind::DuplicateSuppressed);
        if !(r.is_delivery() || settles || r.kind == Kind::Acked) {
            continue;
        }
        if !skips.usable(r, &[Field::EventId]) {
            continue;
        }
        let Some(e) = r.event else { continue };
        let key = (r.actor, r.incarnation, e);
        if r.is_delivery() {
            last_delivery.insert(key, at);
            if let Some(b) = r.broker_seq() {
                last_delivery_copy.insert((key, b), at);
            }
        } else if settles {
            last_settle.insert(key, at);
        } else {
            let delivery = r
                .broker_seq()
                .and_then(|b| last_delivery_copy.get(&(key, b)))
                .or_else(|| last_delivery.get(&key))
                .copied();
            let settled = match (last_settle.get(&key), delivery) {
                (Some(&s), Some(d)) => s > d,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !settled {
                found.push((at, (delivery, at)));
            }
        }
    }
    let (kept, more) = earliest(found);
    let violations = kept
        .into_iter()
        .map(|(delivery, ack)| witness(h, delivery, ack))
        .collect();
    Outcome::judge(Invariant::AckAfterCommit, violations, more, skips.reason())
}

/// The delivery, the ack, and the next commit or suppression of the event after the ack (by any
/// actor incarnation), if there is one.
fn witness(h: &History, delivery: Option<usize>, ack: usize) -> Violation {
    let a = &h.rows[ack];
    let later_settle = h.rows[ack + 1..]
        .iter()
        .position(|r| {
            matches!(r.kind, Kind::EffectCommitted | Kind::DuplicateSuppressed)
                && r.event == a.event
        })
        .map(|p| ack + 1 + p);
    let crash = h.rows[ack + 1..]
        .iter()
        .position(|r| r.kind == Kind::Crash && r.actor == a.actor && r.incarnation == a.incarnation)
        .map(|p| ack + 1 + p);
    let task = later_settle.and_then(|s| h.rows[s].task).or(a.task);
    let mut rows = vec![ack];
    rows.extend(delivery);
    rows.extend(later_settle);
    rows.extend(crash);
    Violation::new(
        a.event,
        task,
        Finding::AckBeforeCommit {
            delivery,
            ack,
            later_settle,
            crash,
        },
        rows,
    )
}
