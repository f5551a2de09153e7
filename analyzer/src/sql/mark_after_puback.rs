//! `mark-after-puback` in SQL: every `outbox_marked` has an earlier `publish_acked` of its event
//! (see `crate::check::mark_after_puback`).

use outbox_trace::{Field, Kind};

use super::query::{Part, Query};

/// Adds the tables of `mark-after-puback`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_outbox_marked = Kind::OutboxMarked.as_str();
    let k_publish_acked = Kind::PublishAcked.as_str();
    let skips = q.skips(&[
        (Kind::PublishAcked, &[Field::EventId]),
        (Kind::OutboxMarked, &[Field::EventId]),
    ]);
    // Per event, the first publish_acked; kept when a mark comes before it (or there is none).
    let early = q.cte(
        &format!("{p}_e"),
        format!(
            "SELECT run_id, scenario, event_id, pseq FROM (SELECT run_id, scenario, event_id, \
         min(CASE WHEN kind = '{k_publish_acked}' THEN seq END) AS pseq, \
         min(CASE WHEN kind = '{k_outbox_marked}' THEN seq END) AS mseq FROM base \
         WHERE kind IN ('{k_publish_acked}', '{k_outbox_marked}') AND event_id IS NOT NULL \
         GROUP BY run_id, scenario, event_id) x \
         WHERE mseq IS NOT NULL AND (pseq IS NULL OR pseq > mseq)"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT m.run_id, m.scenario, m.seq AS vat, e.pseq FROM base m \
             JOIN {early} e ON e.run_id = m.run_id AND e.scenario = m.scenario \
             AND e.event_id = m.event_id \
             WHERE m.kind = '{k_outbox_marked}' AND (e.pseq IS NULL OR e.pseq > m.seq)"
        ),
    );
    let witness = q.witness(&format!("{p}_w"), &violations, &["vat", "pseq"]);
    let mut part = Part::new(violations, witness, Some(skips));
    let moved = q.any(&[
        Kind::PublishAttempt,
        Kind::PublishAcked,
        Kind::Delivered,
        Kind::Redelivered,
    ]);
    let marked = q.any(&[Kind::OutboxMarked]);
    part.early = vec![
        q.lacks(Some(&moved), &[Kind::OutboxMarked]),
        q.lacks(Some(&marked), &[Kind::PublishAcked]),
    ];
    part
}
