//! `single-effect` in SQL: events, and tasks whose commits carry more than one event, with more
//! than one `effect_committed` (see `crate::check::single_effect`).

use outbox_trace::{Field, Kind};

use super::{Part, Query};

/// Adds the tables of `single-effect`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(
        p,
        &[(Kind::EffectCommitted, &[Field::EventId, Field::TaskId])],
    );
    q.cte(
        &format!("{p}_rows"),
        "SELECT run_id, scenario, seq, event_id, task_id FROM base WHERE kind = 'effect_committed'",
    );
    // A task's commits are mixed when they do not all carry its first commit's event (a null
    // event differs from any event).
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, min(CASE WHEN rn = 2 THEN seq END) AS vat, 'event' AS by_key, event_id AS k \
             FROM (SELECT run_id, scenario, seq, event_id, row_number() OVER \
             (PARTITION BY run_id, scenario, event_id ORDER BY seq) AS rn FROM {p}_rows \
             WHERE event_id IS NOT NULL) x GROUP BY run_id, scenario, event_id HAVING count(*) > 1 \
             UNION ALL \
             SELECT run_id, scenario, min(CASE WHEN rn = 2 THEN seq END) AS vat, 'task' AS by_key, task_id AS k \
             FROM (SELECT run_id, scenario, seq, task_id, event_id, row_number() OVER \
             (PARTITION BY run_id, scenario, task_id ORDER BY seq) AS rn FROM {p}_rows \
             WHERE task_id IS NOT NULL) y GROUP BY run_id, scenario, task_id HAVING count(*) > 1 \
             AND (count(DISTINCT event_id) > 1 \
             OR (count(DISTINCT event_id) = 1 AND count(event_id) < count(*)))"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT v.run_id, v.scenario, v.vat, r.seq AS wseq FROM {violations} v \
             JOIN {p}_rows r ON r.run_id = v.run_id AND r.scenario = v.scenario \
             AND ((v.by_key = 'event' AND r.event_id = v.k) OR (v.by_key = 'task' AND r.task_id = v.k))"
        ),
    );
    let tally = q.tally(p, &violations, Some(&skips), &[]);
    Part {
        tally,
        violations,
        witness,
    }
}
