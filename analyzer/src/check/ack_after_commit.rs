//! `ack-after-commit`: a worker may ACK a delivery only after it committed the effect (or found the
//! dedup key and suppressed it). For every `acked` of event E by actor A incarnation I, take the
//! latest delivery of E to A#I before it (the one with the same `broker_seq` when the ack has one);
//! between that delivery and the ack, A#I must have an `effect_committed` or `duplicate_suppressed`
//! of E. Otherwise a crash between the ACK and the commit loses the task.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Skips, Violation};
use crate::history::History;
use crate::intern::{FastMap, Id, IdTable};

/// What one actor incarnation did with one event so far: its latest delivery and its latest
/// commit or suppression (row indices).
#[derive(Clone, Copy)]
struct Slot {
    actor: Id,
    incarnation: u32,
    delivery: Option<u32>,
    settle: Option<u32>,
    /// The event's next slot.
    next: Option<u32>,
}

/// Per event, a chain of slots, one per actor incarnation that handled it (almost always one).
struct Handlers {
    heads: IdTable<Option<u32>>,
    slots: Vec<Slot>,
}

impl Handlers {
    /// The slot of `actor#incarnation` for `event`, opened empty the first time.
    fn slot(&mut self, event: Id, actor: Id, incarnation: u32) -> usize {
        let head = *self.heads.get(event);
        let mut at = head;
        while let Some(i) = at {
            let s = &self.slots[i as usize];
            if s.actor == actor && s.incarnation == incarnation {
                return i as usize;
            }
            at = s.next;
        }
        let i = self.slots.len();
        self.slots.push(Slot {
            actor,
            incarnation,
            delivery: None,
            settle: None,
            next: head,
        });
        *self.heads.get_mut(event) = u32::try_from(i).ok();
        i
    }
}

/// Decides `ack-after-commit`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    let mut handlers = Handlers {
        heads: IdTable::new(h.id_bound(), None),
        slots: Vec::new(),
    };
    // Deliveries that a later delivery of another copy replaced in their slot: the latest one
    // per `(slot, broker_seq)`, for an ack naming that copy.
    let mut replaced: FastMap<(usize, u64), u32> = FastMap::default();
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
        let at32 = row32(at);
        let s = handlers.slot(e, r.actor, r.incarnation);
        let slot = &mut handlers.slots[s];
        if r.is_delivery() {
            if let Some(prev) = slot.delivery {
                let copy = h.rows[prev as usize].broker_seq();
                if let Some(b) = copy.filter(|&b| r.broker_seq() != Some(b)) {
                    replaced.insert((s, b), prev);
                }
            }
            slot.delivery = Some(at32);
        } else if settles {
            slot.settle = Some(at32);
        } else {
            // The latest delivery of the copy the ack names, else the latest delivery.
            let delivery = match (r.broker_seq(), slot.delivery) {
                (Some(b), Some(d)) if h.rows[d as usize].broker_seq() == Some(b) => Some(d),
                (Some(b), d) => replaced.get(&(s, b)).copied().or(d),
                (None, d) => d,
            };
            let settled = match (slot.settle, delivery) {
                (Some(s), Some(d)) => s > d,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !settled {
                found.push((at, (delivery.map(|d| d as usize), at)));
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
