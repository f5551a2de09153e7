//! `observed-agrees`: the last `observed` row's totals agree with the trace. `results` (or its
//! synonym `processed`) and `dedup_keys` equal the number of `effect_committed` rows;
//! `stream_messages` is at least the number of distinct events with a `publish_acked`. Absent keys
//! are skipped.

use outbox_trace::Kind;

use outbox_trace::Field;

use super::{Finding, Invariant, Outcome, Reason, Skips, Violation, EXAMPLES};
use crate::history::History;
use crate::intern::IdTable;

/// Decides `observed-agrees`.
pub fn check(h: &History) -> Outcome {
    let Some((at, observed)) = h.observed() else {
        return Outcome::unknown(Invariant::ObservedAgrees, Reason::NoObserved);
    };
    let effects = i64::try_from(h.count(Kind::EffectCommitted)).unwrap_or(i64::MAX);
    let mut seen = IdTable::new(h.id_bound(), false);
    let mut published: i64 = 0;
    let mut skips = Skips::default();
    for (_, r) in h.of(Kind::PublishAcked) {
        if skips.usable(r, &[Field::EventId]) {
            if let Some(e) = r.event {
                let seen = seen.get_mut(e);
                published += i64::from(!*seen);
                *seen = true;
            }
        }
    }
    let comparisons: [(&'static str, Option<i64>, i64, bool); 4] = [
        ("results", observed.results, effects, false),
        ("processed", observed.processed, effects, false),
        ("dedup_keys", observed.dedup_keys, effects, false),
        ("stream_messages", observed.stream_messages, published, true),
    ];
    let mut compared = 0;
    let mut violations = Vec::new();
    for (key, observed, trace, at_least) in comparisons {
        let Some(observed) = observed else {
            continue;
        };
        compared += 1;
        let ok = if at_least {
            observed >= trace
        } else {
            observed == trace
        };
        if !ok {
            let finding = Finding::ObservedMismatch {
                observed_row: at,
                key,
                observed,
                trace,
                at_least,
            };
            violations.push(Violation::new(None, None, finding, vec![at]));
        }
    }
    if compared == 0 {
        return Outcome::unknown(Invariant::ObservedAgrees, Reason::NoObservedTotals);
    }
    let more = violations.len().saturating_sub(EXAMPLES);
    violations.truncate(EXAMPLES);
    Outcome::judge(Invariant::ObservedAgrees, violations, more, skips.reason())
}
