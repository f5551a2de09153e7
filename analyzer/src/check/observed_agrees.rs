//! `observed-agrees`: the last `observed` row's totals agree with the trace. `results` (or its
//! synonym `processed`) and `dedup_keys` equal the number of `effect_committed` rows;
//! `stream_messages` is at least the number of distinct events with a `publish_acked`; `tasks`
//! equals the distinct accepted tasks and `outbox_published + outbox_pending` the distinct
//! intents (observer-filled rows included). A comparison is made only where its keys are present.

use outbox_trace::{Field, Kind};

use super::{Finding, Invariant, Outcome, Reason, Skips, Total, Violation, EXAMPLES};
use crate::history::History;
use crate::intern::IdTable;

/// How many distinct values of `key` the rows of `kind` carry (rows lacking it are skipped).
fn distinct(
    h: &History,
    kind: Kind,
    field: Field,
    key: impl Fn(&crate::history::Row) -> Option<crate::intern::Id>,
    skips: &mut Skips,
) -> i64 {
    let mut seen = IdTable::new(h.id_bound(), false);
    let mut n = 0;
    for (_, r) in h.of(kind) {
        if let (true, Some(id)) = (skips.usable(r, &[field]), key(r)) {
            n += i64::from(!std::mem::replace(seen.get_mut(id), true));
        }
    }
    n
}

/// Decides `observed-agrees`.
pub fn check(h: &History) -> Outcome {
    let Some((at, observed)) = h.observed() else {
        return Outcome::unknown(Invariant::ObservedAgrees, Reason::NoObserved);
    };
    let effects = i64::try_from(h.count(Kind::EffectCommitted)).unwrap_or(i64::MAX);
    let mut skips = Skips::default();
    let published = distinct(
        h,
        Kind::PublishAcked,
        Field::EventId,
        |r| r.event,
        &mut skips,
    );
    let tasks = distinct(h, Kind::TaskAccepted, Field::TaskId, |r| r.task, &mut skips);
    let intents = distinct(
        h,
        Kind::IntentRecorded,
        Field::EventId,
        |r| r.event,
        &mut skips,
    );
    let outbox = match (observed.outbox_published, observed.outbox_pending) {
        (Some(p), Some(q)) => Some(p.saturating_add(q)),
        _ => None,
    };
    let comparisons: [(Total, Option<i64>, i64, bool); 6] = [
        (Total::Results, observed.results, effects, false),
        (Total::Processed, observed.processed, effects, false),
        (Total::DedupKeys, observed.dedup_keys, effects, false),
        (
            Total::StreamMessages,
            observed.stream_messages,
            published,
            true,
        ),
        (Total::Tasks, observed.tasks, tasks, false),
        (Total::Intents, outbox, intents, false),
    ];
    let mut compared = 0;
    let mut violations = Vec::new();
    for (total, observed, trace, at_least) in comparisons {
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
                total,
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
