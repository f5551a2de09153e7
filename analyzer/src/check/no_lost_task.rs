//! `no-lost-task` (liveness): when the scenario's `run_end` says `recovered: true`, every task of a
//! `task_accepted` has an `effect_committed`. Without a `run_end`, or when the run did not recover,
//! the verdict is unknown: a run that never recovered proves nothing either way; without a
//! `task_accepted` row (and none declared) too, or with acceptances but not one
//! `effect_committed` (nor declared): the trace does not report what the invariant judges.
//!
//! Tasks with more than one effect are `single-effect`'s business; here only tasks with none are
//! violations. The story of each lost task kept as an example is gathered on the second look.

use outbox_trace::{Field, Kind};

use super::{
    earliest, Decision, Ends, Finding, Gather, Invariant, Outcome, Pos, Reason, Skips, Violation,
};
use crate::model::intern::{Id, IdSet};
use crate::model::row::Row;

/// A task: its first acceptance (or first effect) and that row's event (`at` none: no such row).
#[derive(Clone, Copy)]
struct Task {
    at: Pos,
    event: Option<Id>,
}

/// Decides `no-lost-task`.
///
/// A task's first row is held only while it has no effect: once it has one, no later row can
/// make it lost, so what is held is the tasks in flight (for a valid trace), and a bit a task.
pub struct Rule {
    skips: Skips,
    /// Tasks with a first row.
    seen: IdSet,
    /// The first row of tasks first seen without an effect, in order; those that have one
    /// since are dropped whenever the list has doubled.
    open: Vec<(Id, Task)>,
    /// How long `open` may grow before it is next cleared of tasks with an effect.
    limit: usize,
    /// Tasks with an effect.
    effects: IdSet,
}

/// The least [`Rule::limit`].
const OPEN: usize = 4096;

impl Default for Rule {
    fn default() -> Self {
        Rule {
            skips: Skips::default(),
            seen: IdSet::default(),
            open: Vec::new(),
            limit: OPEN,
            effects: IdSet::default(),
        }
    }
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::TaskAccepted, Kind::EffectCommitted]
    }

    fn row(&mut self, at: usize, r: &Row) {
        let effect = match r.kind {
            Kind::TaskAccepted => false,
            Kind::EffectCommitted => true,
            _ => return,
        };
        if let (true, Some(t)) = (self.skips.usable(r, &[Field::TaskId]), r.task) {
            let first = self.seen.insert(t);
            if effect {
                self.effects.insert(t);
            } else if first {
                let task = Task {
                    at: Pos::at(at),
                    event: r.event,
                };
                if self.open.len() >= self.limit {
                    let effects = &self.effects;
                    self.open.retain(|(t, _)| !effects.contains(*t));
                    self.limit = (2 * self.open.len()).max(OPEN);
                }
                self.open.push((t, task));
            }
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Nothing accepted; or acceptances and not one commit, where "no effect" would rest
        // on rows the trace does not report.
        let silent = ends.lacks(&[Kind::TaskAccepted]).or_else(|| {
            ends.any(&[Kind::TaskAccepted])
                .then(|| ends.lacks(&[Kind::EffectCommitted]))
                .flatten()
        });
        if let Some(reason) = silent {
            return Outcome::unknown(Invariant::NoLostTask, reason).into();
        }
        let Some((_, end)) = &ends.run_end else {
            return Outcome::unknown(Invariant::NoLostTask, Reason::NoRunEnd).into();
        };
        match end.as_ref().and_then(|e| e.recovered) {
            Some(true) => {}
            Some(false) => {
                return Outcome::unknown(Invariant::NoLostTask, Reason::NotRecovered).into()
            }
            None => {
                return Outcome::unknown(Invariant::NoLostTask, Reason::RecoveredMissing).into()
            }
        }
        // In task order first, so that positions past the last a `Pos` tells apart keep it.
        // By position, then task, so that positions past the last a `Pos` tells apart keep an order.
        let found = self
            .open
            .iter()
            .filter(|(t, _)| !self.effects.contains(*t))
            .filter_map(|&(t, task)| task.at.get().map(|at| ((at, t), (t, task))));
        let (kept, more): (Vec<(Id, Task)>, usize) = earliest(found);
        let violations = kept
            .iter()
            .map(|&(t, task)| lost(t, task, Vec::new()))
            .collect();
        let outcome = Outcome::judge(Invariant::NoLostTask, violations, more, self.skips.reason());
        let gather = (!kept.is_empty()).then(|| {
            let stories = vec![Story::default(); kept.len()];
            Box::new(Witnesses { kept, stories }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

fn lost(task: Id, t: Task, rows: Vec<usize>) -> Violation {
    let accepted = t.at.get().unwrap_or(usize::MAX);
    Violation::new(t.event, Some(task), Finding::LostTask { accepted }, rows)
}

/// A lost task's rows so far, and the actor lives that handled it.
#[derive(Clone, Default)]
struct Story {
    rows: Vec<usize>,
    /// The actor lives that handled the task's event (a set: an event may reach many).
    handlers: std::collections::BTreeSet<(Id, u32)>,
}

/// The task's story: acceptance, intent, publishes, deliveries, suppressions and acks of its
/// event, and the crashes (after its acceptance) of the actor lives that handled it.
struct Witnesses {
    kept: Vec<(Id, Task)>,
    stories: Vec<Story>,
}

impl Gather for Witnesses {
    fn row(&mut self, at: usize, r: &Row) {
        let told = matches!(
            r.kind,
            Kind::TaskAccepted
                | Kind::IntentRecorded
                | Kind::PublishAttempt
                | Kind::PublishAcked
                | Kind::PublishUnacked
                | Kind::PublishFailed
                | Kind::OutboxMarked
                | Kind::Delivered
                | Kind::Redelivered
                | Kind::DuplicateSuppressed
                | Kind::CommitConflict
                | Kind::Acked
        );
        if !told && r.kind != Kind::Crash {
            return;
        }
        let life = (r.actor, r.incarnation);
        for (&(task, t), story) in self.kept.iter().zip(&mut self.stories) {
            if told {
                let ours = r.task == Some(task) || (t.event.is_some() && r.event == t.event);
                if ours {
                    story.rows.push(at);
                    story.handlers.insert(life);
                }
            } else if t.at.get().is_some_and(|first| at >= first) && story.handlers.contains(&life)
            {
                // A life's crash is its last row: every row of it that tells the story came before.
                story.rows.push(at);
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for (v, (&(task, t), story)) in outcome
            .violations
            .iter_mut()
            .zip(self.kept.iter().zip(self.stories))
        {
            *v = lost(task, t, story.rows);
        }
    }
}
