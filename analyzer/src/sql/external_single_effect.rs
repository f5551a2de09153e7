//! `external-single-effect` in SQL (see `crate::check::external_single_effect`): no event has
//! more than one `external_applied`; a scenario without `external_*` rows passes with a note.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `external-single-effect`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(&[(Kind::ExternalApplied, &[Field::EventId])]);
    let rows = q.cte(
        &format!("{p}_rows"),
        "SELECT run_id, scenario, seq, event_id FROM base WHERE kind = 'external_applied'",
    );
    let (violations, witness) = q.repeats(p, &rows, "event_id", None);
    let calls =
        q.count_where("kind IN ('external_request', 'external_applied', 'external_replayed')");
    let mut part = Part::new(violations, witness, Some(skips));
    part.early = vec![(
        format!("{calls} = 0"),
        "pass",
        lit(&Reason::NoExternalCalls),
    )];
    part
}
