//! `ack-after-commit`: a worker may ACK a delivery only after it committed the effect (or found the
//! dedup key and suppressed it). For every `acked` of event E by actor A incarnation I, take the
//! latest delivery of E to A#I before it (the one of the same copy when the ack names one: the same
//! `broker_seq` in the same `partition`, so equal offsets in two Kafka partitions are two copies);
//! between that delivery and the ack, A#I must have an `effect_committed` or `duplicate_suppressed`
//! of E. Otherwise a crash between the ACK and the commit loses the task. Unknown when the
//! scenario delivers but has no `acked`, or ACKs but has neither `effect_committed` nor
//! `duplicate_suppressed` (each unless the producer declared it reports them).
//!
//! A broker without positions (RabbitMQ, SQS) leaves `broker_seq` null: an ack is then paired
//! with its life's latest delivery of the event, which is the one it answers unless the life
//! held two copies of the event at once (a second delivery before the first was ACKed). There,
//! a violation cannot be told from a pass: such acks are counted, and the outcome is `unknown`
//! when they are all it found.

use outbox_trace::{Field, Kind};

use super::{
    Decision, Ends, Examples, Finding, Gather, Invariant, Outcome, Pos, Reason, Skips, Violation,
};
use crate::model::intern::{FastMap, Id, IdSet, IdTable, IdTable64};
use crate::model::row::{Position, Row};

/// What one actor incarnation did with one event so far: its latest delivery and its latest
/// commit or suppression (positions), in 12 bytes; the copy its latest delivery delivered is
/// kept aside (see [`Handlers`]).
#[derive(Clone, Copy)]
struct Slot {
    /// The actor life (its number in [`Handlers::lives`] plus one; 0: none has handled the
    /// event yet).
    life: u32,
    delivery: Pos,
    settle: Pos,
}

const EMPTY: Slot = Slot {
    life: 0,
    delivery: Pos::NONE,
    settle: Pos::NONE,
};

/// A slot with the copy (its [`Position`]) its latest delivery delivered, if it named one.
#[derive(Clone, Copy)]
struct Handled {
    slot: Slot,
    copy: Option<Position>,
}

/// Which slot: an event, and which of the actor lives that handled it (0: the first).
type SlotKey = (Id, u32);

/// Per event, one slot per actor incarnation that handled it. The first is held in a table by
/// event (almost every event has only one), the others aside.
struct Handlers {
    /// Each actor life's number plus one, by `(actor, incarnation)`.
    lives: FastMap<(Id, u32), u32>,
    /// The life of the previous row: rows of one life come in runs, which skip the map.
    current: Option<((Id, u32), u32)>,
    first: IdTable<Slot>,
    /// The `broker_seq` of each first slot's latest delivery, if `first_has_copy`.
    first_copy: IdTable64,
    /// Events whose first slot's latest delivery named its copy.
    first_has_copy: IdSet,
    /// The `partition` of each first slot's latest delivery, where it named one (rare: a
    /// broker that orders per partition).
    first_partition: FastMap<Id, i32>,
    /// Per event, the slots of the second and later actor lives that handled it.
    others: FastMap<Id, Vec<Handled>>,
    /// Where the slot of `(event, life)` sits in `others` (plus one): an event delivered to many
    /// lives finds each life's slot without a scan of the others.
    other_slot: FastMap<(Id, u32), u32>,
}

impl Handlers {
    /// The number (plus one) of the life `actor#incarnation`.
    fn life(&mut self, actor: Id, incarnation: u32) -> u32 {
        let key = (actor, incarnation);
        if let Some((k, life)) = self.current {
            if k == key {
                return life;
            }
        }
        let next = u32::try_from(self.lives.len() + 1).unwrap_or(u32::MAX);
        let life = *self.lives.entry(key).or_insert(next);
        self.current = Some((key, life));
        life
    }

    /// The slot of `actor#incarnation` for `event`, opened empty the first time.
    fn key(&mut self, event: Id, actor: Id, incarnation: u32) -> SlotKey {
        let life = self.life(actor, incarnation);
        let first = self.first.get_mut(event);
        let first_life = first.life;
        if first_life == 0 {
            first.life = life;
            return (event, 0);
        }
        if first_life == life {
            return (event, 0);
        }
        if let Some(&i) = self.other_slot.get(&(event, life)) {
            return (event, i);
        }
        let others = self.others.entry(event).or_default();
        others.push(Handled {
            slot: Slot { life, ..EMPTY },
            copy: None,
        });
        let i = u32::try_from(others.len()).unwrap_or(u32::MAX);
        self.other_slot.insert((event, life), i);
        (event, i)
    }

    /// The slot `key` names.
    fn load(&self, (event, i): SlotKey) -> Handled {
        match i.checked_sub(1) {
            None => Handled {
                slot: *self.first.get(event),
                copy: self.first_has_copy.contains(event).then(|| Position {
                    partition: self.first_partition(event),
                    broker_seq: self.first_copy.get(event),
                }),
            },
            Some(i) => self
                .others
                .get(&event)
                .and_then(|o| o.get(i as usize))
                .copied()
                .unwrap_or(Handled {
                    slot: EMPTY,
                    copy: None,
                }),
        }
    }

    /// The partition of the first slot's latest delivery of `event`, if it named one.
    fn first_partition(&self, event: Id) -> Option<i32> {
        if self.first_partition.is_empty() {
            return None;
        }
        self.first_partition.get(&event).copied()
    }

    /// Keeps `copy` as the copy of the latest delivery in `event`'s first slot.
    fn set_first_copy(&mut self, event: Id, copy: Option<Position>) {
        match copy {
            Some(copy) => {
                self.first_has_copy.insert(event);
                self.first_copy.set(event, copy.broker_seq);
            }
            None => {
                self.first_has_copy.remove(event);
            }
        }
        match copy.and_then(|c| c.partition) {
            Some(partition) => {
                self.first_partition.insert(event, partition);
            }
            None if !self.first_partition.is_empty() => {
                self.first_partition.remove(&event);
            }
            None => {}
        }
    }

    /// Writes back the slot `key` names (its copy too after a `delivery`).
    fn store(&mut self, (event, i): SlotKey, h: Handled, delivery: bool) {
        match i.checked_sub(1) {
            None => {
                *self.first.get_mut(event) = h.slot;
                if delivery {
                    self.set_first_copy(event, h.copy);
                }
            }
            Some(i) => {
                if let Some(slot) = self
                    .others
                    .get_mut(&event)
                    .and_then(|o| o.get_mut(i as usize))
                {
                    *slot = h;
                }
            }
        }
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
    /// per `(slot, copy)`, for an ack naming that copy.
    replaced: FastMap<(SlotKey, Position), usize>,
    found: Examples<usize, Found>,
    /// Per slot, its deliveries without a position not yet ACKed (only while some are).
    open: FastMap<SlotKey, u32>,
    /// Acks without a position found unsettled while their life held two copies.
    ambiguous: usize,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            handlers: Handlers {
                lives: FastMap::default(),
                current: None,
                first: IdTable::new(0, EMPTY),
                first_copy: IdTable64::default(),
                first_has_copy: IdSet::default(),
                first_partition: FastMap::default(),
                others: FastMap::default(),
                other_slot: FastMap::default(),
            },
            replaced: FastMap::default(),
            found: Examples::default(),
            open: FastMap::default(),
            ambiguous: 0,
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
        let s = self.handlers.key(e, r.actor, r.incarnation);
        let mut handled = self.handlers.load(s);
        if r.is_delivery() {
            let copy = r.position();
            if let (Some(prev), Some(b)) = (handled.slot.delivery.get(), handled.copy) {
                if copy != Some(b) {
                    self.replaced.insert((s, b), prev);
                }
            }
            if copy.is_none() {
                *self.open.entry(s).or_default() += 1;
            }
            handled.slot.delivery = Pos::at(at);
            handled.copy = copy;
            self.handlers.store(s, handled, true);
        } else if settles {
            handled.slot.settle = Pos::at(at);
            self.handlers.store(s, handled, false);
        } else {
            // The latest delivery of the copy the ack names, else the latest delivery.
            let latest = handled.slot.delivery.get();
            let delivery = match r.position() {
                Some(b) if latest.is_some() && handled.copy == Some(b) => latest,
                Some(b) => self.replaced.get(&(s, b)).copied().or(latest),
                None => latest,
            };
            let settled = match (handled.slot.settle.get(), delivery) {
                (Some(s), Some(d)) => s > d,
                (Some(_), None) => true,
                (None, _) => false,
            };
            // Without a position, two copies held at once leave the pairing open.
            let held = match r.broker_seq() {
                Some(_) => 0,
                None => {
                    let n = self.open.get(&s).copied().unwrap_or(0);
                    if n <= 1 {
                        self.open.remove(&s);
                    } else {
                        self.open.insert(s, n - 1);
                    }
                    n
                }
            };
            if !settled && held >= 2 {
                self.ambiguous += 1;
            } else if !settled {
                let found = Found {
                    delivery,
                    ack: at,
                    event: r.event,
                    task: r.task,
                    actor: r.actor,
                    incarnation: r.incarnation,
                };
                self.found.push(at, found);
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
        let (kept, more) = self.found.into_parts();
        let violations = kept.iter().map(|f| violation(f, None, None)).collect();
        let incomplete = self.skips.reason().or_else(|| {
            (self.ambiguous > 0).then_some(Reason::TwoCopies {
                acks: self.ambiguous,
            })
        });
        let outcome = Outcome::judge(Invariant::AckAfterCommit, violations, more, incomplete);
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
