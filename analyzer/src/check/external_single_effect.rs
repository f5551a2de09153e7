//! `external-single-effect`: no `event_id` has more than one `external_applied`: the external
//! receiver acted at most once per idempotency key.

use outbox_trace::{Field, Kind};

use super::{
    earliest, Decision, Ends, Finding, Gather, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::model::intern::{FastMap, Id};
use crate::model::row::Row;

/// Decides `external-single-effect`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    /// Whether any `external_*` row was seen.
    any: bool,
    /// Per event: how many applications, and the second one (where the duplicate shows).
    applied: FastMap<Id, (u32, usize)>,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[
            Kind::ExternalRequest,
            Kind::ExternalReplayed,
            Kind::ExternalApplied,
        ]
    }

    fn row(&mut self, at: usize, r: &Row) {
        match r.kind {
            Kind::ExternalRequest | Kind::ExternalReplayed => self.any = true,
            Kind::ExternalApplied => {
                self.any = true;
                if !self.skips.usable(r, &[Field::EventId]) {
                    return;
                }
                let Some(e) = r.event else { return };
                let t = self.applied.entry(e).or_insert((0, at));
                t.0 += 1;
                if t.0 == 2 {
                    t.1 = at;
                }
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>, _: &Ends) -> Decision {
        if !self.any {
            let reason = Some(Reason::NoExternalCalls);
            return Outcome::pass(Invariant::ExternalSingleEffect, reason).into();
        }
        let found = self
            .applied
            .iter()
            .filter(|(_, t)| t.0 > 1)
            .map(|(&e, t)| (t.1, e));
        let (kept, more) = earliest(found);
        let violations = kept.iter().map(|&e| twice(e, None, Vec::new())).collect();
        let reason = self.skips.reason();
        let outcome = Outcome::judge(Invariant::ExternalSingleEffect, violations, more, reason);
        let gather = (!kept.is_empty()).then(|| {
            let found = vec![(None, Vec::new()); kept.len()];
            Box::new(Witnesses { kept, found }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

fn twice(event: Id, task: Option<Id>, applied: Vec<usize>) -> Violation {
    let finding = Finding::ExternalTwice {
        applied: applied.clone(),
    };
    Violation::new(Some(event), task, finding, applied)
}

/// The `external_applied` rows of each kept event.
struct Witnesses {
    kept: Vec<Id>,
    /// Per kept event: the first task seen and the rows.
    found: Vec<(Option<Id>, Vec<usize>)>,
}

impl Gather for Witnesses {
    fn row(&mut self, at: usize, r: &Row) {
        if r.kind != Kind::ExternalApplied {
            return;
        }
        for (e, (task, rows)) in self.kept.iter().zip(&mut self.found) {
            if r.event == Some(*e) {
                *task = task.or(r.task);
                rows.push(at);
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for (v, (e, (task, rows))) in outcome
            .violations
            .iter_mut()
            .zip(self.kept.into_iter().zip(self.found))
        {
            *v = twice(e, task, rows);
        }
    }
}
