//! `aggregate-order`: per `aggregate_id`, the events' first `publish_attempt`s (by `seq`) go out in
//! ascending `aggregate_seq`. The aggregate fields come from the publish row, or else from the
//! event's `intent_recorded` (or, lacking one, `task_accepted`) row, wherever that row is.
//!
//! A first publication is judged as it comes when its aggregate is already settled: carried by
//! the publish row, or by an intent seen before it (an intent's fields win, so a later row cannot
//! change them). Only the aggregate fields of events not yet published are held. When a first
//! publication must wait (its event has no intent yet, and a later intent may name another
//! aggregate), it and every first publication after it are kept, in order, and judged at the end
//! from the state reached so far, so the verdict is the same as judging them all at the end.

use outbox_trace::{Field, Kind};

use super::{
    row32, Decision, Ends, Examples, Finding, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::model::intern::{FastMap, Id, IdSet, IdTable};
use crate::model::row::Row;

/// An event's first publication, kept to be judged at the end.
struct FirstPublish {
    at: u32,
    event: Id,
    task: Option<Id>,
    /// Its aggregate fields, when settled by then (else the event's, at the end).
    settled: Option<(Id, u64)>,
}

/// An event's aggregate fields from its first intent, else its first acceptance.
#[derive(Clone, Copy)]
struct FromStore {
    seq: u64,
    /// None: no such row yet.
    aggregate: Option<Id>,
    /// Whether they came from an intent (which wins over an acceptance).
    intent: bool,
}

const NONE_YET: FromStore = FromStore {
    seq: 0,
    aggregate: None,
    intent: false,
};

/// Decides `aggregate-order`.
pub struct Rule {
    skips: Skips,
    /// Per event not yet published, or whose first publication waits: the aggregate fields of
    /// its first intent, else of its first acceptance.
    from_store: FastMap<Id, FromStore>,
    published: IdSet,
    /// From the first publication that had to wait on: every first publication, in order.
    waiting: Vec<FirstPublish>,
    /// Per aggregate: the highest `aggregate_seq` published so far, and by which row.
    highest: IdTable<Option<(u64, u32)>>,
    /// Whether any first publication had aggregate fields.
    any: bool,
    /// The earliest violations, the rest counted.
    found: Examples<usize, Violation>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            from_store: FastMap::default(),
            published: IdSet::default(),
            waiting: Vec::new(),
            highest: IdTable::new(0, None),
            any: false,
            found: Examples::default(),
        }
    }
}

impl Rule {
    /// Judges a first publication (in `seq` order) against those before it.
    fn judge(&mut self, p: &FirstPublish, aggregate: Id, seq: u64) {
        self.any = true;
        let at = p.at as usize;
        match *self.highest.get(aggregate) {
            Some((top, earlier)) if seq < top => {
                let earlier = earlier as usize;
                let finding = Finding::AggregateOutOfOrder {
                    aggregate,
                    earlier,
                    earlier_seq: top,
                    later: at,
                    later_seq: seq,
                };
                let v = Violation::new(Some(p.event), p.task, finding, vec![earlier, at]);
                self.found.push(at, v);
            }
            Some((top, _)) if seq == top => {}
            _ => *self.highest.get_mut(aggregate) = Some((seq, p.at)),
        }
    }
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[
            Kind::IntentRecorded,
            Kind::TaskAccepted,
            Kind::PublishAttempt,
        ]
    }

    fn row(&mut self, at: usize, r: &Row) {
        match r.kind {
            Kind::IntentRecorded | Kind::TaskAccepted => {
                let (Some(e), Some(a), Some(s)) = (r.event, r.aggregate, r.aggregate_seq()) else {
                    return;
                };
                let intent = r.kind == Kind::IntentRecorded;
                // A published event's fields matter only while its first publication waits.
                let slot = if self.published.contains(e) {
                    match self.from_store.get_mut(&e) {
                        Some(slot) => slot,
                        None => return,
                    }
                } else {
                    self.from_store.entry(e).or_insert(NONE_YET)
                };
                // The first of each; an intent's fields win over an acceptance's.
                if slot.aggregate.is_none() || (intent && !slot.intent) {
                    *slot = FromStore {
                        seq: s,
                        aggregate: Some(a),
                        intent,
                    };
                }
            }
            Kind::PublishAttempt => {
                if !self.skips.usable(r, &[Field::EventId]) {
                    return;
                }
                let Some(e) = r.event else { return };
                if !self.published.insert(e) {
                    return;
                }
                let own = match (r.aggregate, r.aggregate_seq()) {
                    (Some(a), Some(s)) => Some((a, s)),
                    _ => None,
                };
                let store = self.from_store.get(&e).copied().unwrap_or(NONE_YET);
                let settled = own.or(match store {
                    FromStore {
                        aggregate: Some(a),
                        intent: true,
                        seq,
                    } => Some((a, seq)),
                    _ => None,
                });
                let p = FirstPublish {
                    at: row32(at),
                    event: e,
                    task: r.task,
                    settled,
                };
                match settled {
                    Some(_) => {
                        self.from_store.remove(&e);
                    }
                    // A later intent may still give the event's aggregate.
                    None => {
                        self.from_store.insert(e, store);
                    }
                }
                match (settled, self.waiting.is_empty()) {
                    (Some((aggregate, seq)), true) => self.judge(&p, aggregate, seq),
                    _ => self.waiting.push(p),
                }
            }
            _ => {}
        }
    }

    fn finish(mut self: Box<Self>, _: &Ends) -> Decision {
        for p in std::mem::take(&mut self.waiting) {
            let info = p.settled.or_else(|| {
                let f = self.from_store.get(&p.event)?;
                f.aggregate.map(|a| (a, f.seq))
            });
            if let Some((aggregate, seq)) = info {
                self.judge(&p, aggregate, seq);
            }
        }
        let (any, found) = (self.any, self.found);
        if !any {
            return Outcome::pass(Invariant::AggregateOrder, Some(Reason::NoAggregateInfo)).into();
        }
        let (kept, more) = found.into_parts();
        Outcome::judge(Invariant::AggregateOrder, kept, more, self.skips.reason()).into()
    }
}
