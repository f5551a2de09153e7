//! `aggregate-order`: per `aggregate_id`, the events' first `publish_attempt`s (by `seq`) go out in
//! ascending `aggregate_seq`. The aggregate fields come from the publish row, or else from the
//! event's `intent_recorded` (or, lacking one, `task_accepted`) row, wherever that row is.
//!
//! First publications are kept compactly until the end, since the row giving an event's
//! aggregate may come after its publication.

use outbox_trace::{Field, Kind};

use super::{
    earliest, row32, Decision, Ends, Finding, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::history::Row;
use crate::intern::{Id, IdTable};

/// An event's first publication.
struct FirstPublish {
    at: u32,
    event: Id,
    task: Option<Id>,
    /// The aggregate fields of the publish row itself.
    own: Option<(Id, u64)>,
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
    /// Per event: the aggregate fields of its first intent, else of its first acceptance.
    from_intent: IdTable<FromStore>,
    published: IdTable<bool>,
    first_publishes: Vec<FirstPublish>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            from_intent: IdTable::new(0, NONE_YET),
            published: IdTable::new(0, false),
            first_publishes: Vec::new(),
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
                let slot = self.from_intent.get_mut(e);
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
                if !std::mem::replace(self.published.get_mut(e), true) {
                    let own = match (r.aggregate, r.aggregate_seq()) {
                        (Some(a), Some(s)) => Some((a, s)),
                        _ => None,
                    };
                    self.first_publishes.push(FirstPublish {
                        at: row32(at),
                        event: e,
                        task: r.task,
                        own,
                    });
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _: &Ends) -> Decision {
        // Per aggregate: the highest aggregate_seq published so far, and by which row.
        let mut highest: IdTable<Option<(u64, u32)>> = IdTable::new(0, None);
        let mut any = false;
        let mut found = Vec::new();
        for p in &self.first_publishes {
            let info = p.own.or_else(|| {
                let f = self.from_intent.get(p.event);
                f.aggregate.map(|a| (a, f.seq))
            });
            let Some((aggregate, seq)) = info else {
                continue;
            };
            any = true;
            let at = p.at as usize;
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
                    let v = Violation::new(Some(p.event), p.task, finding, vec![earlier, at]);
                    found.push((at, v));
                }
                Some((top, _)) if seq == top => {}
                _ => {
                    *highest.get_mut(aggregate) = Some((seq, p.at));
                }
            }
        }
        if !any {
            return Outcome::pass(Invariant::AggregateOrder, Some(Reason::NoAggregateInfo)).into();
        }
        let (kept, more) = earliest(found);
        Outcome::judge(Invariant::AggregateOrder, kept, more, self.skips.reason()).into()
    }
}
