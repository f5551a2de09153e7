//! `ack-after-commit`: a worker may ACK a delivery only after it committed the effect (or found the
//! dedup key and suppressed it). For every `acked` of event E by actor A incarnation I, take the
//! latest delivery of E to A#I before it (the one with the same `broker_seq` when the ack has one);
//! between that delivery and the ack, A#I must have an `effect_committed` or `duplicate_suppressed`
//! of E. Otherwise a crash between the ACK and the commit loses the task. Unknown when the
//! scenario delivers but has no `acked`, or ACKs but has neither `effect_committed` nor
//! `duplicate_suppressed` (each unless the producer declared it reports them).

use outbox_trace::{Field, Kind};

use super::{earliest, Decision, Ends, Finding, Gather, Invariant, Outcome, Pos, Skips, Violation};
use crate::model::intern::{FastMap, Id, IdTable};
use crate::model::row::Row;

/// What one actor incarnation did with one event so far: its latest delivery and its latest
/// commit or suppression (positions).
#[derive(Clone, Copy)]
struct Slot {
    actor: Id,
    incarnation: u32,
    delivery: Pos,
    settle: Pos,
    /// The copy (`broker_seq`) the latest delivery delivered, if `has_copy`.
    copy: u64,
    has_copy: bool,
    /// The event's next slot.
    next: Pos,
}

impl Slot {
    /// The copy the latest delivery delivered, if it said.
    fn copy(&self) -> Option<u64> {
        self.has_copy.then_some(self.copy)
    }
}

/// Per event, a chain of slots, one per actor incarnation that handled it (almost always one).
struct Handlers {
    heads: IdTable<Pos>,
    slots: Vec<Slot>,
}

impl Handlers {
    /// The slot of `actor#incarnation` for `event`, opened empty the first time.
    fn slot(&mut self, event: Id, actor: Id, incarnation: u32) -> usize {
        let head = *self.heads.get(event);
        let mut at = head;
        while let Some(i) = at.get() {
            let s = &self.slots[i];
            if s.actor == actor && s.incarnation == incarnation {
                return i;
            }
            at = s.next;
        }
        let i = self.slots.len();
        self.slots.push(Slot {
            actor,
            incarnation,
            delivery: Pos::NONE,
            settle: Pos::NONE,
            copy: 0,
            has_copy: false,
            next: head,
        });
        *self.heads.get_mut(event) = Pos::at(i);
        i
    }
}

/// An ack with no commit or suppression since its delivery.
#[derive(Clone, Copy)]
struct Found {
    delivery: Option<usize>,
    ack: usize,
    event: Option<Id>,
    task: Option<Id>,
    actor: Id,
    incarnation: u32,
}

/// Decides `ack-after-commit`.
pub struct Rule {
    skips: Skips,
    handlers: Handlers,
    /// Deliveries that a later delivery of another copy replaced in their slot: the latest one
    /// per `(slot, broker_seq)`, for an ack naming that copy.
    replaced: FastMap<(usize, u64), usize>,
    found: Vec<(usize, Found)>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            handlers: Handlers {
                heads: IdTable::new(0, Pos::NONE),
                slots: Vec::new(),
            },
            replaced: FastMap::default(),
            found: Vec::new(),
        }
    }
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[
            Kind::Delivered,
            Kind::Redelivered,
            Kind::EffectCommitted,
            Kind::DuplicateSuppressed,
            Kind::Acked,
        ]
    }

    fn row(&mut self, at: usize, r: &Row) {
        let settles = matches!(r.kind, Kind::EffectCommitted | Kind::DuplicateSuppressed);
        if !(r.is_delivery() || settles || r.kind == Kind::Acked) {
            return;
        }
        if !self.skips.usable(r, &[Field::EventId]) {
            return;
        }
        let Some(e) = r.event else { return };
        let s = self.handlers.slot(e, r.actor, r.incarnation);
        let slot = &mut self.handlers.slots[s];
        if r.is_delivery() {
            if let (Some(prev), Some(b)) = (slot.delivery.get(), slot.copy()) {
                if r.broker_seq() != Some(b) {
                    self.replaced.insert((s, b), prev);
                }
            }
            slot.delivery = Pos::at(at);
            slot.has_copy = r.broker_seq().is_some();
            slot.copy = r.broker_seq().unwrap_or(0);
        } else if settles {
            slot.settle = Pos::at(at);
        } else {
            // The latest delivery of the copy the ack names, else the latest delivery.
            let latest = slot.delivery.get();
            let delivery = match r.broker_seq() {
                Some(b) if latest.is_some() && slot.copy() == Some(b) => latest,
                Some(b) => self.replaced.get(&(s, b)).copied().or(latest),
                None => latest,
            };
            let settled = match (slot.settle.get(), delivery) {
                (Some(s), Some(d)) => s > d,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !settled {
                let found = Found {
                    delivery,
                    ack: at,
                    event: r.event,
                    task: r.task,
                    actor: r.actor,
                    incarnation: r.incarnation,
                };
                self.found.push((at, found));
            }
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Deliveries and not one ACK, or ACKs and not one commit or suppression: the trace does
        // not report one side of the order judged.
        let silent = ends
            .any(&[Kind::Delivered, Kind::Redelivered])
            .then(|| ends.lacks(&[Kind::Acked]))
            .flatten()
            .or_else(|| {
                ends.any(&[Kind::Acked])
                    .then(|| ends.lacks(&[Kind::EffectCommitted, Kind::DuplicateSuppressed]))
                    .flatten()
            });
        if let Some(reason) = silent {
            return Outcome::unknown(Invariant::AckAfterCommit, reason).into();
        }
        let (kept, more) = earliest(self.found);
        let violations = kept.iter().map(|f| violation(f, None, None)).collect();
        let outcome = Outcome::judge(
            Invariant::AckAfterCommit,
            violations,
            more,
            self.skips.reason(),
        );
        let gather = (!kept.is_empty()).then(|| {
            let later = vec![Later::default(); kept.len()];
            Box::new(Witnesses { kept, later }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

/// The delivery, the ack, the next commit or suppression of the event after the ack (by any
/// actor incarnation) and the crash of the acking incarnation after it, each if there is one.
fn violation(
    f: &Found,
    later_settle: Option<(usize, Option<Id>)>,
    crash: Option<usize>,
) -> Violation {
    let task = later_settle.and_then(|(_, t)| t).or(f.task);
    let later_settle = later_settle.map(|(at, _)| at);
    let mut rows = vec![f.ack];
    rows.extend(f.delivery);
    rows.extend(later_settle);
    rows.extend(crash);
    Violation::new(
        f.event,
        task,
        Finding::AckBeforeCommit {
            delivery: f.delivery,
            ack: f.ack,
            later_settle,
            crash,
        },
        rows,
    )
}

/// Looks, after each kept ack, for the next settle of its event and the crash of its life.
struct Witnesses {
    kept: Vec<Found>,
    /// Per kept ack: what came after it.
    later: Vec<Later>,
}

/// After a kept ack: the next settle of its event (position and task) and its life's crash.
#[derive(Clone, Copy, Default)]
struct Later {
    settle: Option<(usize, Option<Id>)>,
    crash: Option<usize>,
}

impl Gather for Witnesses {
    fn row(&mut self, at: usize, r: &Row) {
        let settles = matches!(r.kind, Kind::EffectCommitted | Kind::DuplicateSuppressed);
        if !settles && r.kind != Kind::Crash {
            return;
        }
        for (f, Later { settle, crash }) in self.kept.iter().zip(&mut self.later) {
            if at <= f.ack {
                continue;
            }
            if settles && settle.is_none() && r.event == f.event {
                *settle = Some((at, r.task));
            }
            if r.kind == Kind::Crash
                && crash.is_none()
                && r.actor == f.actor
                && r.incarnation == f.incarnation
            {
                *crash = Some(at);
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for (v, (f, Later { settle, crash })) in outcome
            .violations
            .iter_mut()
            .zip(self.kept.iter().zip(self.later))
        {
            *v = violation(f, settle, crash);
        }
    }
}
