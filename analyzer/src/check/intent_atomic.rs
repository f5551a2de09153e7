//! `intent-atomic`: every `task_accepted` has an `intent_recorded` with the same `event_id` and the
//! same `store_rev`, i.e. the task and its outbox row were committed in one transaction. Unknown
//! when the scenario has no `task_accepted`, or acceptances but not one `intent_recorded` (each
//! unless the producer declared it reports them).
//!
//! An acceptance whose intent has already been seen with its revision is settled at once; the
//! others wait for their event's intents, which settle them as they come, so only the
//! acceptances still unmatched are held (for a valid trace, those in flight). The latest one
//! waits aside, out of the map: its intent is usually the next row.

use outbox_trace::{Field, Kind};

use super::{
    Decision, Ends, Examples, Finding, Gather, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::model::intern::{FastMap, FastState, Id, IdSet, IdTable64};
use crate::model::row::Row;

/// An acceptance not yet matched by an intent (its event is the key it waits under).
struct Pending {
    at: usize,
    task: Option<Id>,
    rev: i64,
}

/// Decides `intent-atomic`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    /// Events with a usable intent.
    intended: IdSet,
    /// Per event: the `store_rev` of its first usable intent (where that intent is, only the
    /// violations need: the second look finds it).
    intents: IdTable64,
    /// Events with an unusable intent.
    unusable: IdSet,
    /// The `(event, store_rev)` of further intents whose `store_rev` differs from the first's.
    other_revs: std::collections::HashSet<(Id, i64), FastState>,
    /// The latest acceptance not settled yet, with its event.
    latest: Option<(Id, Pending)>,
    /// The earlier acceptances not settled yet, by event.
    pending: FastMap<Id, Vec<Pending>>,
    /// Whether any acceptance or intent was seen, and whether any carried a `store_rev`.
    rows: bool,
    revs: bool,
}

impl Rule {
    /// Whether the intents seen so far settle an acceptance of `event` at `rev`.
    fn settled(&self, event: Id, rev: i64) -> bool {
        (self.intended.contains(event) && self.intents.get(event) == rev as u64)
            || self.unusable.contains(event)
            || self.other_revs.contains(&(event, rev))
    }

    /// Drops the acceptances of `event` that the intents seen so far settle (an acceptance once
    /// settled stays settled: intents only add).
    fn settle(&mut self, event: Id) {
        let latest = self.latest.as_ref();
        if latest.is_some_and(|(e, p)| *e == event && self.settled(event, p.rev)) {
            self.latest = None;
        }
        if self.pending.is_empty() {
            return;
        }
        let Some(mut waiting) = self.pending.remove(&event) else {
            return;
        };
        waiting.retain(|p| !self.settled(event, p.rev));
        if !waiting.is_empty() {
            self.pending.insert(event, waiting);
        }
    }
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::TaskAccepted, Kind::IntentRecorded]
    }

    fn row(&mut self, at: usize, r: &Row) {
        if !matches!(r.kind, Kind::TaskAccepted | Kind::IntentRecorded) {
            return;
        }
        self.rows = true;
        self.revs |= r.store_rev().is_some();
        let usable = self.skips.usable(r, &[Field::EventId, Field::StoreRev]);
        let (Some(e), Some(rev)) = (r.event, r.store_rev()) else {
            if let (Kind::IntentRecorded, Some(e)) = (r.kind, r.event) {
                self.unusable.insert(e);
                self.settle(e);
            }
            return;
        };
        if !usable {
            return;
        }
        if r.kind == Kind::IntentRecorded {
            // A revision is kept as its bits (`as` is the identity on them).
            if self.intended.insert(e) {
                self.intents.set(e, rev as u64);
            } else if self.intents.get(e) != rev as u64 {
                self.other_revs.insert((e, rev));
            }
            self.settle(e);
        } else if !self.settled(e, rev) {
            let p = Pending {
                at,
                task: r.task,
                rev,
            };
            if let Some((earlier, p)) = self.latest.replace((e, p)) {
                self.pending.entry(earlier).or_default().push(p);
            }
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Nothing accepted, or acceptances and not one intent: the trace does not report what
        // the invariant judges.
        let silent = ends.lacks(&[Kind::TaskAccepted]).or_else(|| {
            ends.any(&[Kind::TaskAccepted])
                .then(|| ends.lacks(&[Kind::IntentRecorded]))
                .flatten()
        });
        if let Some(reason) = silent {
            return Outcome::unknown(Invariant::IntentAtomic, reason).into();
        }
        // A source that reports no store transactions cannot show two rows committed together.
        if self.rows && !self.revs {
            return Outcome::unknown(Invariant::IntentAtomic, Reason::NoStoreRev).into();
        }
        let mut found = Examples::default();
        let waiting = self
            .pending
            .iter()
            .flat_map(|(&e, w)| w.iter().map(move |p| (e, p)))
            .chain(self.latest.as_ref().map(|(e, p)| (*e, p)));
        for (event, p) in waiting {
            if self.settled(event, p.rev) {
                continue;
            }
            let v = if self.intended.contains(event) {
                // Where the intent is, the second look finds.
                let finding = Finding::IntentOtherRev {
                    accepted: p.at,
                    intent: p.at,
                };
                Violation::new(Some(event), p.task, finding, vec![p.at])
            } else {
                let finding = Finding::IntentMissing { accepted: p.at };
                Violation::new(Some(event), p.task, finding, vec![p.at])
            };
            found.push(p.at, v);
        }
        let (kept, more) = found.into_parts();
        // Per violation kept, the event whose first usable intent it names.
        let wanted: Vec<Option<Id>> = kept
            .iter()
            .map(|v: &Violation| match v.finding {
                Finding::IntentOtherRev { .. } => v.event,
                _ => None,
            })
            .collect();
        let outcome = Outcome::judge(Invariant::IntentAtomic, kept, more, self.skips.reason());
        let gather = wanted.iter().any(Option::is_some).then(|| {
            let found = vec![None; wanted.len()];
            Box::new(Witnesses { wanted, found }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

/// Finds the first usable intent of each event a violation kept names.
struct Witnesses {
    wanted: Vec<Option<Id>>,
    found: Vec<Option<usize>>,
}

impl Gather for Witnesses {
    fn row(&mut self, at: usize, r: &Row) {
        // Usable as the first pass took it: with an event and a `store_rev`.
        if r.kind != Kind::IntentRecorded || r.store_rev().is_none() || r.event.is_none() {
            return;
        }
        for (e, found) in self.wanted.iter().zip(&mut self.found) {
            if found.is_none() && *e == r.event {
                *found = Some(at);
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for (v, found) in outcome.violations.iter_mut().zip(self.found) {
            let (&Finding::IntentOtherRev { accepted, .. }, Some(intent)) = (&v.finding, found)
            else {
                continue;
            };
            let finding = Finding::IntentOtherRev { accepted, intent };
            *v = Violation::new(v.event, v.task, finding, vec![accepted, intent]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::outcome::Verdict;
    use crate::model::history::History;
    use crate::model::intern::Interner;
    use crate::model::row::Numbers;

    /// Checks rows `(kind, event, store_rev)` in order, each event its own task.
    fn check(rows: &[(Kind, &str, i64)]) -> Outcome {
        let mut names = Interner::default();
        let mut id = |name: &str| names.intern(name).expect("a short name");
        let (run, actor) = (id("run"), id("api"));
        let mut h = History::new(0, run, id("scenario"), id("backend"));
        for (seq, &(kind, event, rev)) in rows.iter().enumerate() {
            let numbers = Numbers {
                store_rev: Some(rev),
                ..Numbers::default()
            };
            let mut row = Row::new(seq as u64, kind, actor, 0).with_numbers(numbers);
            row.event = Some(id(event));
            row.task = Some(id(&format!("task-{event}")));
            h.push(row);
        }
        h.finish();
        Invariant::IntentAtomic.check(&h, &names)
    }

    const ACCEPTED: Kind = Kind::TaskAccepted;
    const INTENT: Kind = Kind::IntentRecorded;

    #[test]
    fn intents_settle_acceptances_in_any_order() {
        let rows = [
            (ACCEPTED, "e1", 1),
            (ACCEPTED, "e2", 2),
            (ACCEPTED, "e3", 3),
            (INTENT, "e2", 2),
            (INTENT, "e3", 3),
            (ACCEPTED, "e3", 3),
            (INTENT, "e1", 1),
        ];
        assert_eq!(check(&rows).verdict, Verdict::Pass);
    }

    #[test]
    fn an_acceptance_left_waiting_is_found_wherever_it_waits() {
        // e1 waits in the map, e3 aside as the latest; e1's intent has another revision.
        let rows = [
            (ACCEPTED, "e1", 1),
            (ACCEPTED, "e2", 2),
            (INTENT, "e2", 2),
            (INTENT, "e1", 9),
            (ACCEPTED, "e3", 3),
        ];
        let outcome = check(&rows);
        assert_eq!(outcome.verdict, Verdict::Fail);
        let findings: Vec<&Finding> = outcome.violations.iter().map(|v| &v.finding).collect();
        assert!(
            matches!(
                findings[..],
                [
                    Finding::IntentOtherRev {
                        accepted: 0,
                        intent: 3
                    },
                    Finding::IntentMissing { accepted: 4 }
                ]
            ),
            "{findings:?}"
        );
    }
}
