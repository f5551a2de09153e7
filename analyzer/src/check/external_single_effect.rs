//! `external-single-effect`: no `event_id` has more than one `external_applied`: the external
//! receiver acted at most once per idempotency key.

use outbox_trace::{Field, Kind};

use super::{earliest, Finding, Invariant, Outcome, Reason, Skips, Violation};
use crate::history::History;
use crate::intern::{FastMap, Id};

/// Decides `external-single-effect`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    let any = [
        Kind::ExternalRequest,
        Kind::ExternalApplied,
        Kind::ExternalReplayed,
    ]
    .iter()
    .any(|&k| h.count(k) > 0);
    // Per event: how many applications, and the second one (where the duplicate shows).
    let mut applied: FastMap<Id, (u32, usize)> = FastMap::default();
    for (at, r) in h.of(Kind::ExternalApplied) {
        if !skips.usable(r, &[Field::EventId]) {
            continue;
        }
        let Some(e) = r.event else { continue };
        let t = applied.entry(e).or_insert((0, at));
        t.0 += 1;
        if t.0 == 2 {
            t.1 = at;
        }
    }
    if !any {
        return Outcome::pass(
            Invariant::ExternalSingleEffect,
            Some(Reason::NoExternalCalls),
        );
    }
    let found = applied
        .iter()
        .filter(|(_, t)| t.0 > 1)
        .map(|(&e, t)| (t.1, e))
        .collect();
    let (kept, more) = earliest(found);
    let violations = kept
        .into_iter()
        .map(|e| {
            let rows: Vec<usize> = h
                .of(Kind::ExternalApplied)
                .filter(|(_, r)| r.event == Some(e))
                .map(|(at, _)| at)
                .collect();
            let task = rows.iter().find_map(|&at| h.rows[at].task);
            Violation::new(
                Some(e),
                task,
                Finding::ExternalTwice {
                    applied: rows.clone(),
                },
                rows,
            )
        })
        .collect();
    Outcome::judge(
        Invariant::ExternalSingleEffect,
        violations,
        more,
        skips.reason(),
    )
}
