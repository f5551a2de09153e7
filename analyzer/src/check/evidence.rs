//! The contract's rules for evidence the producer knows it lacks: "zero rows are no evidence
//! where work happened" and "refused spans".
//!
//! - [`unworked`]: in a scenario that shows work (accepted tasks, a delivery, or the store's
//!   tasks or results above zero), an invariant with no row of the kinds it judges (the
//!   `judges` column of the table) is `unknown` unless `records` declares them, before its rule
//!   decides anything.
//! - [`apply`]: where the producer refused spans of a kind the invariant reads
//!   (`run_end.detail.refused`), the rows they would have given could break a pass or remove a
//!   violation: a pass is `unknown`, and so is a failure, except a duplicate (missing rows only
//!   hide those). Where spans mapped to no kind (`run_end.detail.unmapped`), the kinds without
//!   rows are no evidence (see [`Ends::lacks`], which each rule consults); the two passes the
//!   contract's table gives a note (no aggregate information, no external calls) keep it.
//!   An outcome already `unknown` because the store holds more than the trace gets the
//!   producer's own count as its reason instead: the spans were not lost, they were refused or
//!   unmapped.

use outbox_trace::Kind;

use super::invariant::{Invariant, LostRows, LostSpans};
use super::outcome::{Outcome, Reason, Verdict};
use super::rule::Ends;

/// The early verdict of `invariant` on a scenario that shows work without any row of the kinds
/// it judges, if that is so.
pub fn unworked(invariant: Invariant, ends: &Ends) -> Option<Outcome> {
    let reason = ends.unworked(invariant.judges())?;
    Some(Outcome::unknown(invariant, reason))
}

/// Turns the verdicts that refused or unmapped spans could change into `unknown`. `reads` are
/// the kinds each outcome's rule reads, in the same order.
pub fn apply(ends: &Ends, reads: &[&'static [Kind]], outcomes: &mut [Outcome]) {
    for (o, &kinds) in outcomes.iter_mut().zip(reads) {
        // Nothing was compared (one source): no row, refused or not, could change that.
        if o.reason == Some(Reason::OneSource) {
            continue;
        }
        let doubt = match o.verdict {
            Verdict::Pass => kinds.iter().find_map(|&k| ends.refused(k)),
            Verdict::Fail if removable(o.invariant) => kinds.iter().find_map(|&k| ends.refused(k)),
            // Rows missing against the store that the producer knows it refused or could not
            // map: say so, not that spans were lost.
            Verdict::Unknown if lost(o) => ends.doubt(kinds),
            _ => None,
        };
        if let Some(reason) = doubt {
            *o = Outcome::unknown(o.invariant, reason);
        }
    }
}

/// Whether rows missing from the trace could remove a violation of `invariant` (all but the
/// duplicates).
fn removable(invariant: Invariant) -> bool {
    !(invariant.lost_spans() == LostSpans::Never && invariant.lost_rows() == LostRows::Never)
}

/// Whether the outcome is unknown because rows seem lost against the store.
fn lost(o: &Outcome) -> bool {
    matches!(
        o.reason,
        Some(Reason::StoreHoldsMore(_) | Reason::TraceShort { .. })
    )
}
