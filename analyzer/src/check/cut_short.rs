//! The contract's rule for a scenario cut short: where its `run_end` row is missing, or says
//! `interrupted` (a signal to the recorder), the store may have been read while the scenario's
//! processes still committed, so the last `observed` row is no ground truth. The invariants
//! that compare the trace with it (the `reads_observed` column of the table: `counter-exact`,
//! `observed-agrees`) lose the violations that comparison found, and are `unknown` where none
//! is left (a pass too: it compared with a read that proves nothing). A violation the trace
//! shows by itself (a commit that does not step the counter by its amount) stays, the failure
//! saying the comparison with the store was not made.

use super::outcome::{Finding, Outcome, Reason, Verdict};
use super::rule::Ends;

/// Applies the rule to `outcomes`.
pub fn apply(ends: &Ends, outcomes: &mut [Outcome]) {
    if !ends.cut_short() || ends.observed.is_none() {
        return;
    }
    let reason = Reason::CutShort {
        no_run_end: ends.run_end.is_none(),
    };
    for o in outcomes.iter_mut() {
        if !o.invariant.reads_observed() || o.verdict == Verdict::Unknown {
            continue;
        }
        o.violations.retain(|v| !reads_observed(&v.finding));
        if o.violations.is_empty() {
            *o = Outcome::unknown(o.invariant, reason.clone());
        } else {
            o.reason.get_or_insert_with(|| reason.clone());
        }
    }
}

/// Whether a finding compares the trace with the `observed` row.
fn reads_observed(f: &Finding) -> bool {
    matches!(
        f,
        Finding::CounterFinal { .. } | Finding::ObservedMismatch { .. }
    )
}
