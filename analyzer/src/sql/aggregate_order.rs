//! `aggregate-order` in SQL (see `crate::check::aggregate_order`): each event's first
//! `publish_attempt`, with the aggregate fields of the publish row or else of the event's first
//! `intent_recorded` (then `task_accepted`) carrying both; per aggregate, in `seq` order, none may
//! have a lower `aggregate_seq` than one published before it.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `aggregate-order`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(p, &[(Kind::PublishAttempt, &[Field::EventId])]);
    q.cte(
        &format!("{p}_info"),
        "SELECT run_id, scenario, event_id, aggregate_id, aggregate_seq FROM (SELECT run_id, \
         scenario, event_id, aggregate_id, aggregate_seq, row_number() OVER (PARTITION BY run_id, \
         scenario, event_id ORDER BY CASE WHEN kind = 'intent_recorded' THEN 0 ELSE 1 END, seq) AS rn \
         FROM base WHERE kind IN ('intent_recorded', 'task_accepted') AND event_id IS NOT NULL \
         AND aggregate_id IS NOT NULL AND aggregate_seq IS NOT NULL) x WHERE rn = 1",
    );
    q.cte(
        &format!("{p}_first"),
        "SELECT run_id, scenario, seq, event_id, aggregate_id, aggregate_seq FROM (SELECT run_id, \
         scenario, seq, event_id, aggregate_id, aggregate_seq, row_number() OVER (PARTITION BY \
         run_id, scenario, event_id ORDER BY seq) AS rn FROM base \
         WHERE kind = 'publish_attempt' AND event_id IS NOT NULL) x WHERE rn = 1",
    );
    let own = "f.aggregate_id IS NOT NULL AND f.aggregate_seq IS NOT NULL";
    q.cte(
        &format!("{p}_pub"),
        format!(
            "SELECT run_id, scenario, seq, agg, aseq FROM (SELECT f.run_id, f.scenario, f.seq, \
             CASE WHEN {own} THEN f.aggregate_id ELSE i.aggregate_id END AS agg, \
             CASE WHEN {own} THEN f.aggregate_seq ELSE i.aggregate_seq END AS aseq \
             FROM {p}_first f LEFT JOIN {p}_info i ON i.run_id = f.run_id \
             AND i.scenario = f.scenario AND i.event_id = f.event_id) x WHERE agg IS NOT NULL"
        ),
    );
    let none = q.cte(
        &format!("{p}_none"),
        format!(
            "SELECT s.run_id, s.scenario FROM scen s LEFT JOIN (SELECT DISTINCT run_id, scenario \
             FROM {p}_pub) a ON a.run_id = s.run_id AND a.scenario = s.scenario WHERE a.run_id IS NULL"
        ),
    );
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, agg, aseq, max(aseq) OVER (PARTITION BY run_id, scenario, \
             agg ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior_max FROM {p}_pub"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!("SELECT run_id, scenario, seq AS vat, agg, prior_max FROM {p}_win WHERE aseq < prior_max"),
    );
    // The earlier publication is the first to reach the highest aggregate_seq before it.
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT run_id, scenario, vat, vat AS wseq FROM {violations} \
             UNION ALL SELECT v.run_id, v.scenario, v.vat, min(e.seq) AS wseq FROM {violations} v \
             JOIN {p}_pub e ON e.run_id = v.run_id AND e.scenario = v.scenario AND e.agg = v.agg \
             AND e.aseq = v.prior_max AND e.seq < v.vat GROUP BY v.run_id, v.scenario, v.vat"
        ),
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&skips),
        &[(&none, "pass", lit(&Reason::NoAggregateInfo))],
    );
    Part {
        tally,
        violations,
        witness,
    }
}
