//! `external-single-effect` in SQL (see `crate::check::external_single_effect`): no event has
//! more than one `external_applied`; a scenario without `external_*` rows passes with a note.

use outbox_trace::{Field, Kind};

use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `external-single-effect`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_external_applied = Kind::ExternalApplied.as_str();
    let k_external_replayed = Kind::ExternalReplayed.as_str();
    let k_external_request = Kind::ExternalRequest.as_str();
    let skips = q.skips(&[(Kind::ExternalApplied, &[Field::EventId])]);
    let rows = q.cte(
        &format!("{p}_rows"),
        format!(
            "SELECT run_id, scenario, seq, event_id FROM base WHERE kind = '{k_external_applied}'"
        ),
    );
    let (violations, witness) = q.repeats(p, &rows, "event_id", None);
    let calls = q.count_where(&format!(
        "kind IN ('{k_external_request}', '{k_external_applied}', '{k_external_replayed}')"
    ));
    let mut part = Part::new(violations, witness, Some(skips));
    part.early = vec![(
        format!("{calls} = 0"),
        "pass",
        lit(&Reason::NoExternalCalls),
    )];
    part
}
