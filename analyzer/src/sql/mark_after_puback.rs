//! `mark-after-puback` in SQL: every `outbox_marked` has an earlier `publish_acked` of its event
//! (see `crate::check::mark_after_puback`).

use outbox_trace::{Field, Kind};

use super::{Part, Query};

/// Adds the tables of `mark-after-puback`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(
        p,
        &[
            (Kind::PublishAcked, &[Field::EventId]),
            (Kind::OutboxMarked, &[Field::EventId]),
        ],
    );
    q.cte(
        &format!("{p}_first"),
        "SELECT run_id, scenario, event_id, min(seq) AS pseq FROM base \
         WHERE kind = 'publish_acked' AND event_id IS NOT NULL GROUP BY run_id, scenario, event_id",
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT m.run_id, m.scenario, m.seq AS vat, f.pseq FROM base m \
             LEFT JOIN {p}_first f ON f.run_id = m.run_id AND f.scenario = m.scenario \
             AND f.event_id = m.event_id \
             WHERE m.kind = 'outbox_marked' AND m.event_id IS NOT NULL \
             AND (f.pseq IS NULL OR f.pseq > m.seq)"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT run_id, scenario, vat, vat AS wseq FROM {violations} \
             UNION ALL SELECT run_id, scenario, vat, pseq AS wseq FROM {violations} WHERE pseq IS NOT NULL"
        ),
    );
    let tally = q.tally(p, &violations, Some(&skips), &[]);
    Part {
        tally,
        violations,
        witness,
    }
}
