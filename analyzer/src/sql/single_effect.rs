//! `single-effect` in SQL: events, and tasks whose commits carry more than one event, with more
//! than one `effect_committed` (see `crate::check::single_effect`).

use outbox_trace::{Field, Kind};

use super::query::{Part, Query};

/// Adds the tables of `single-effect`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let skips = q.skips(&[(Kind::EffectCommitted, &[Field::EventId, Field::TaskId])]);
    let rows = q.cte(
        &format!("{p}_rows"),
        format!("SELECT run_id, scenario, seq, event_id, task_id FROM base WHERE kind = '{k_effect_committed}'"),
    );
    let (by_event, event_rows) = q.repeats(&format!("{p}_e"), &rows, "event_id", None);
    // A task's commits are mixed when they do not all carry one event (a null event differs
    // from any event).
    let (by_task, task_rows) = q.repeats(
        &format!("{p}_k"),
        &rows,
        "task_id",
        Some("min(event_id) <> max(event_id) OR (count(event_id) > 0 AND count(event_id) < count(*))"),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, vat FROM {by_event} \
             UNION ALL SELECT run_id, scenario, vat FROM {by_task}"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT * FROM {event_rows} UNION ALL SELECT * FROM {task_rows}"),
    );
    let mut part = Part::new(violations, witness, Some(skips));
    let delivered = q.any(&[Kind::Delivered, Kind::Redelivered]);
    part.early = vec![q.lacks(Some(&delivered), &[Kind::EffectCommitted])];
    part
}
