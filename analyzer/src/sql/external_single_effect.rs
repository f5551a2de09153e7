//! `external-single-effect` in SQL (see `crate::check::external_single_effect`): no event has
//! more than one `external_applied`; a scenario without `external_*` rows passes with a note.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `external-single-effect`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(p, &[(Kind::ExternalApplied, &[Field::EventId])]);
    let violations = q.cte(
        &format!("{p}_v"),
        "SELECT run_id, scenario, min(CASE WHEN rn = 2 THEN seq END) AS vat, event_id FROM \
         (SELECT run_id, scenario, seq, event_id, row_number() OVER (PARTITION BY run_id, scenario, \
         event_id ORDER BY seq) AS rn FROM base WHERE kind = 'external_applied' \
         AND event_id IS NOT NULL) x GROUP BY run_id, scenario, event_id HAVING count(*) > 1",
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT v.run_id, v.scenario, v.vat, b.seq AS wseq FROM {violations} v JOIN base b \
             ON b.run_id = v.run_id AND b.scenario = v.scenario AND b.event_id = v.event_id \
             AND b.kind = 'external_applied'"
        ),
    );
    let none = q.cte(
        &format!("{p}_none"),
        "SELECT s.run_id, s.scenario FROM scen s LEFT JOIN (SELECT DISTINCT run_id, scenario \
         FROM base WHERE kind IN ('external_request', 'external_applied', 'external_replayed')) e \
         ON e.run_id = s.run_id AND e.scenario = s.scenario WHERE e.run_id IS NULL",
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&skips),
        &[(&none, "pass", lit(&Reason::NoExternalCalls))],
    );
    Part {
        tally,
        violations,
        witness,
    }
}
