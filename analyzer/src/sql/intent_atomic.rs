//! `intent-atomic` in SQL: every usable `task_accepted` has an `intent_recorded` of its event
//! with its `store_rev`, unless an intent of that event lacks `store_rev` (see
//! `crate::check::intent_atomic`).

use outbox_trace::{Field, Kind};

use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `intent-atomic`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_intent_recorded = Kind::IntentRecorded.as_str();
    let k_task_accepted = Kind::TaskAccepted.as_str();
    let needed: &[Field] = &[Field::EventId, Field::StoreRev];
    let skips = q.skips(&[(Kind::TaskAccepted, needed), (Kind::IntentRecorded, needed)]);
    // No row of either kind carries a store_rev: the source reports no transactions.
    let kinds = &format!("kind IN ('{k_task_accepted}', '{k_intent_recorded}')");
    let accepted = q.count_where(kinds);
    let revs = q.count_where(&format!("{kinds} AND store_rev IS NOT NULL"));
    // Per event, the first intent with a store_rev; kept when a task_accepted with a store_rev
    // may lack its intent: no intent lacks store_rev, and the intents do not all carry the one
    // store_rev every such task_accepted carries.
    let (task, intent) = (
        &format!("CASE WHEN kind = '{k_task_accepted}' THEN store_rev END"),
        &format!("CASE WHEN kind = '{k_intent_recorded}' THEN store_rev END"),
    );
    let events = q.cte(
        &format!("{p}_e"),
        format!(
            "SELECT run_id, scenario, event_id, \
             min(CASE WHEN kind = '{k_intent_recorded}' AND store_rev IS NOT NULL THEN seq END) AS iseq \
             FROM base WHERE {kinds} AND event_id IS NOT NULL GROUP BY run_id, scenario, event_id \
             HAVING count({task}) > 0 \
             AND sum(CASE WHEN kind = '{k_intent_recorded}' AND store_rev IS NULL THEN 1 ELSE 0 END) = 0 \
             AND NOT coalesce(min({intent}) = max({intent}) AND min({task}) = min({intent}) \
             AND max({task}) = min({intent}), false)"),
    );
    // Their rows with a store_rev; a task_accepted whose (event, store_rev) has no intent is a
    // violation.
    let rows = q.cte(
        &format!("{p}_r"),
        format!(
            "SELECT b.run_id, b.scenario, b.event_id, b.kind, b.seq, b.store_rev, e.iseq FROM base b \
             JOIN {events} e ON b.run_id = e.run_id AND b.scenario = e.scenario \
             AND b.event_id = e.event_id WHERE b.{kinds} AND b.store_rev IS NOT NULL"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, seq AS vat, iseq FROM (SELECT run_id, scenario, kind, seq, iseq, \
             sum(CASE WHEN kind = '{k_intent_recorded}' THEN 1 ELSE 0 END) \
             OVER (PARTITION BY run_id, scenario, event_id, store_rev) AS intents FROM {rows}) x \
             WHERE kind = '{k_task_accepted}' AND intents = 0"),
    );
    let witness = q.witness(&format!("{p}_w"), &violations, &["vat", "iseq"]);
    let mut part = Part::new(violations, witness, Some(skips));
    let any_accepted = q.any(&[Kind::TaskAccepted]);
    part.early = vec![
        q.lacks(None, &[Kind::TaskAccepted]),
        q.lacks(Some(&any_accepted), &[Kind::IntentRecorded]),
        (
            format!("{accepted} > 0 AND {revs} = 0"),
            "unknown",
            lit(&Reason::NoStoreRev),
        ),
    ];
    part
}
