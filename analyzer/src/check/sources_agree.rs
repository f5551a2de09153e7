//! `sources-agree`: where a scenario reads steps from the wire (`run_start.detail.wire_steps`)
//! and the process reports them in its spans too, both sources tell of the same steps. Per
//! step kind read from the wire, event, actor and life, the rows saying `source: "wire"` and
//! those saying `source: "span"` must be as many:
//! - more span rows: the process reported a step that never crossed the wire (a commit it
//!   says it made, with no COMMIT on the wire);
//! - more wire rows: a step crossed the wire that the process never reported.
//!
//! Some disagreements are a fault's doing, and cannot be judged: a step on the wire that a life
//! never reported, where the life crashed (its own `crash` row: killed before it could report)
//! or a wire fault hit it (a `fault` row with a `service`, whose `target` is the actor, or a
//! restart or pause of a store or broker, after the life began: a lost reply leaves it not
//! knowing, a copy delivered as its broker went down may never reach its handler); and a step a
//! life reported that the wire lacks, where such a fault hit it (a connection whose bytes were
//! dropped is no longer read; a client holds a publish while its broker is down).
//! A span claiming a step the wire never carried on a life no wire fault hit is judged even if
//! the life crashed. An unreported step a fault explains is counted in a note (the wire's row
//! is judged; the process had no chance to report it); a reported step the wire lacks on a life
//! a wire fault hit cannot be told from a lie, and makes the verdict `unknown` where nothing
//! else fails. A scenario that reads no step from the wire
//! passes with a note ("one source"), and so does one whose process reports none of the steps
//! read from the wire (nothing to compare).

use std::collections::BTreeSet;

use outbox_trace::Kind;

use super::{Decision, Ends, Examples, Finding, Gather, Invariant, Outcome, Reason, Violation};
use crate::model::intern::{FastMap, Id};
use crate::model::row::{Row, Source};

/// The steps compared as one: a kind, an event, an actor life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Step {
    kind: Kind,
    event: Option<Id>,
    actor: Id,
    incarnation: u32,
}

impl Step {
    fn of(r: &Row) -> Self {
        Step {
            kind: r.kind,
            event: r.event,
            actor: r.actor,
            incarnation: r.incarnation,
        }
    }
}

/// How many rows each source gave of one [`Step`], and where the first came.
#[derive(Debug, Clone, Copy)]
struct Tally {
    wire: u32,
    span: u32,
    first: usize,
}

/// Decides `sources-agree`.
#[derive(Default)]
pub struct Rule {
    steps: FastMap<Step, Tally>,
    /// Lives with their own `crash` row.
    crashed: BTreeSet<(Id, u32)>,
    /// Where each later life began (its `restart` row); a life without one began with the
    /// scenario.
    began: FastMap<(Id, u32), usize>,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::Crash, Kind::Restart]
    }

    fn row(&mut self, at: usize, r: &Row) {
        let life = (r.actor, r.incarnation);
        match r.kind {
            Kind::Crash => {
                self.crashed.insert(life);
            }
            Kind::Restart => {
                self.began.entry(life).or_insert(at);
            }
            _ => {}
        }
    }

    fn compares_sources(&self) -> bool {
        true
    }

    fn sourced(&mut self, at: usize, r: &Row) {
        let t = self.steps.entry(Step::of(r)).or_insert(Tally {
            wire: 0,
            span: 0,
            first: at,
        });
        match r.source {
            Source::Wire => t.wire += 1,
            Source::Span => t.span += 1,
            Source::Unsaid => {}
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        let inv = Invariant::SourcesAgree;
        if !ends.wire.any() {
            return Outcome::pass(inv, Some(Reason::OneSource)).into();
        }
        let listed = |s: &Step| ends.wire.lists(s.kind);
        if !self.steps.iter().any(|(s, t)| listed(s) && t.span > 0) {
            return Outcome::pass(inv, Some(Reason::NoSpanAccounts)).into();
        }
        let mut found = Examples::default();
        let (mut explained, mut unjudged) = (0, 0);
        for (step, t) in self
            .steps
            .iter()
            .filter(|(s, t)| listed(s) && t.wire != t.span)
        {
            match self.excuse(step, t, ends) {
                Some(Excuse::Explained) => explained += 1,
                Some(Excuse::Unjudged) => unjudged += 1,
                None => found.push(t.first, (*step, *t)),
            }
        }
        let (kept, more) = found.into_parts();
        let note = (explained + unjudged > 0).then_some(Reason::FaultHitLives {
            disagreements: explained + unjudged,
        });
        if kept.is_empty() {
            return match note {
                Some(reason) if unjudged > 0 => Outcome::unknown(inv, reason).into(),
                note => Outcome::pass(inv, note).into(),
            };
        }
        let violations = kept
            .iter()
            .map(|&(step, t)| disagreement(step, t, Vec::new(), Vec::new()))
            .collect();
        let outcome = Outcome::judge(inv, violations, more, note);
        let gather = Witnesses {
            rows: vec![(Vec::new(), Vec::new()); kept.len()],
            kept,
        };
        Decision {
            outcome,
            gather: Some(Box::new(gather)),
        }
    }
}

impl Rule {
    /// What a fault makes of the disagreement of `step`: an unreported step on a life that
    /// crashed or a wire fault hit is explained; a reported step the wire lacks, on a life a
    /// wire fault hit, cannot be judged; anything else is none of a fault's doing.
    fn excuse(&self, step: &Step, t: &Tally, ends: &Ends) -> Option<Excuse> {
        let life = (step.actor, step.incarnation);
        let hit = self.wire_fault_hit(step, ends);
        if t.wire > t.span {
            (hit || self.crashed.contains(&life)).then_some(Excuse::Explained)
        } else {
            hit.then_some(Excuse::Unjudged)
        }
    }

    /// Whether a wire fault aimed at the actor of `step`, or a fault that stopped a service, came
    /// after its life began.
    fn wire_fault_hit(&self, step: &Step, ends: &Ends) -> bool {
        let life = (step.actor, step.incarnation);
        let began = self.began.get(&life).copied().unwrap_or(0);
        let service_hit = ends.service_hits.iter().any(|&at| at >= began);
        service_hit
            || ends
                .wire_hits
                .iter()
                .any(|&(at, target)| target == step.actor && at >= began)
    }
}

/// What a fault makes of a disagreement.
enum Excuse {
    /// The wire's step stands; the process had no chance to report it.
    Explained,
    /// The wire may have lost its place: the span's claim can be neither confirmed nor refuted.
    Unjudged,
}

/// The violation of `step`, its rows of each source given (empty until gathered): the witness
/// is the side's surplus rows, with the wire's rows where the spans have more.
fn disagreement(step: Step, t: Tally, wire_rows: Vec<usize>, span_rows: Vec<usize>) -> Violation {
    let witness = if t.span > t.wire {
        let surplus = span_rows.iter().skip(wire_rows.len());
        surplus.chain(&wire_rows).copied().collect()
    } else {
        wire_rows.iter().skip(span_rows.len()).copied().collect()
    };
    let finding = Finding::SourcesDisagree {
        kind: step.kind,
        actor: step.actor,
        incarnation: step.incarnation,
        wire: t.wire,
        span: t.span,
        wire_rows,
        span_rows,
    };
    Violation::new(step.event, None, finding, witness)
}

/// The rows of each source of the kept steps.
struct Witnesses {
    kept: Vec<(Step, Tally)>,
    /// Per kept step: its wire rows and its span rows.
    rows: Vec<(Vec<usize>, Vec<usize>)>,
}

impl Gather for Witnesses {
    fn row(&mut self, _: usize, _: &Row) {}

    fn sourced(&mut self, at: usize, r: &Row) {
        let step = Step::of(r);
        for ((kept, _), (wire, span)) in self.kept.iter().zip(&mut self.rows) {
            if *kept != step {
                continue;
            }
            match r.source {
                Source::Wire => wire.push(at),
                Source::Span => span.push(at),
                Source::Unsaid => {}
            }
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for (v, ((step, t), (wire, span))) in outcome
            .violations
            .iter_mut()
            .zip(self.kept.into_iter().zip(self.rows))
        {
            *v = disagreement(step, t, wire, span);
        }
    }
}
