//! `single-effect`: no `event_id` and no `task_id` has more than one `effect_committed`. A
//! scenario with deliveries but no `effect_committed` at all (nor declared) is unknown: the trace
//! does not report the commits it would count.
//!
//! Commits are counted per event and per task as the rows pass; the commits of the examples kept
//! (and the deliveries that led to them) are gathered on the second look.

use outbox_trace::{Field, Kind};

use super::{
    row32, Decision, Ends, Examples, Finding, Gather, Invariant, Outcome, Pos, Skips, Violation,
};
use crate::model::intern::{FastMap, Id, IdSet, IdTable};
use crate::model::row::Row;

/// A task with more than one commit: the second (where the duplicate shows), and whether its
/// commits name more than one event.
#[derive(Clone, Copy)]
struct Twice {
    second: u32,
    mixed_events: bool,
}

/// The commits per task, in about five bytes a task: the first commit's event, whether there
/// was one, and aside the few tasks committed more than once.
struct Tasks {
    /// Tasks with a commit.
    committed: IdSet,
    first_event: IdTable<Option<Id>>,
    twice: FastMap<Id, Twice>,
}

impl Tasks {
    fn tally(&mut self, key: Id, at: u32, event: Option<Id>) {
        if self.committed.insert(key) {
            *self.first_event.get_mut(key) = event;
            return;
        }
        let mixed = *self.first_event.get(key) != event;
        let t = self.twice.entry(key).or_insert(Twice {
            second: at,
            mixed_events: false,
        });
        t.mixed_events |= mixed;
    }
}

/// Decides `single-effect`.
pub struct Rule {
    skips: Skips,
    /// Events with a commit.
    committed: IdSet,
    /// Per event, its second commit.
    second: IdTable<Pos>,
    by_task: Tasks,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            committed: IdSet::default(),
            second: IdTable::new(0, Pos::NONE),
            by_task: Tasks {
                committed: IdSet::default(),
                first_event: IdTable::new(0, None),
                twice: FastMap::default(),
            },
        }
    }
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::EffectCommitted]
    }

    fn row(&mut self, at: usize, r: &Row) {
        if r.kind != Kind::EffectCommitted {
            return;
        }
        let at = row32(at);
        if let Some(e) = r.event {
            if !self.committed.insert(e) {
                let second = self.second.get_mut(e);
                if *second == Pos::NONE {
                    *second = Pos::at(at as usize);
                }
            }
        }
        if let Some(t) = r.task {
            self.by_task.tally(t, at, r.event);
        }
        self.skips.usable(r, &[Field::EventId, Field::TaskId]);
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Deliveries without a single commit: the trace does not say what the worker did.
        if ends.any(&[Kind::Delivered, Kind::Redelivered]) {
            if let Some(reason) = ends.lacks(&[Kind::EffectCommitted]) {
                return Outcome::unknown(Invariant::SingleEffect, reason).into();
            }
        }
        let mut found = Examples::default();
        for (e, second) in self.second.iter() {
            if let Some(second) = second.get() {
                found.push(second, (e, false));
            }
        }
        // A task whose commits all share one event is already reported under that event.
        let mut mixed: Vec<(Id, Twice)> = self
            .by_task
            .twice
            .iter()
            .filter(|(_, t)| t.mixed_events)
            .map(|(&task, &t)| (task, t))
            .collect();
        mixed.sort_unstable_by_key(|&(task, _)| task);
        for (task, t) in mixed {
            found.push(t.second as usize, (task, true));
        }
        let (kept, more) = found.into_parts();
        let keys: Vec<(Id, bool)> = kept.clone();
        let violations = kept
            .into_iter()
            .map(|(key, by_task)| {
                let (event, task) = if by_task {
                    (None, Some(key))
                } else {
                    (Some(key), None)
                };
                let finding = Finding::MultipleEffects {
                    by_task,
                    commits: Vec::new(),
                };
                Violation::new(event, task, finding, Vec::new())
            })
            .collect();
        let outcome = Outcome::judge(
            Invariant::SingleEffect,
            violations,
            more,
            self.skips.reason(),
        );
        let gather = (!keys.is_empty()).then(|| {
            Box::new(Witnesses {
                keys,
                last_delivery: FastMap::default(),
                found: Vec::new(),
            }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

/// For each kept key, its commits and, for each, the latest delivery of its event to the same
/// actor incarnation before it.
struct Witnesses {
    keys: Vec<(Id, bool)>,
    last_delivery: FastMap<(Id, u32, Id), usize>,
    /// Per key, what was found.
    found: Vec<Found>,
}

/// A key's commits and witness rows, and the first task and event seen on them.
#[derive(Clone, Default)]
struct Found {
    commits: Vec<usize>,
    rows: Vec<usize>,
    task: Option<Id>,
    event: Option<Id>,
}

impl Gather for Witnesses {
    fn row(&mut self, at: usize, r: &Row) {
        let Some(e) = r.event else { return };
        if r.is_delivery() {
            self.last_delivery.insert((r.actor, r.incarnation, e), at);
            return;
        }
        if r.kind != Kind::EffectCommitted {
            return;
        }
        if self.found.is_empty() {
            self.found = vec![Default::default(); self.keys.len()];
        }
        for (i, &(key, by_task)) in self.keys.iter().enumerate() {
            let matches = if by_task {
                r.task == Some(key)
            } else {
                e == key
            };
            if !matches {
                continue;
            }
            let Found {
                commits,
                rows,
                task,
                event,
            } = &mut self.found[i];
            *task = task.or(r.task);
            *event = event.or(Some(e));
            commits.push(at);
            rows.push(at);
            if let Some(&d) = self.last_delivery.get(&(r.actor, r.incarnation, e)) {
                rows.push(d);
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        let found = self
            .found
            .into_iter()
            .chain(std::iter::repeat_with(Default::default));
        for (v, f) in outcome.violations.iter_mut().zip(found) {
            let Found {
                commits,
                rows,
                task,
                event,
            } = f;
            let Finding::MultipleEffects { by_task, .. } = v.finding else {
                continue;
            };
            let event = if by_task { None } else { event };
            *v = Violation::new(
                event,
                task,
                Finding::MultipleEffects { by_task, commits },
                rows,
            );
        }
    }
}
