//! `no-lost-task` in SQL (see `crate::check::no_lost_task`): on a scenario whose last `run_end`
//! says `recovered: true`, every accepted task has an `effect_committed`; otherwise unknown.

use outbox_trace::{detail_key, Field, Kind};

use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `no-lost-task`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let k_task_accepted = Kind::TaskAccepted.as_str();
    let d = q.d;
    let skips = q.skips(&[
        (Kind::TaskAccepted, &[Field::TaskId]),
        (Kind::EffectCommitted, &[Field::TaskId]),
    ]);
    let end = q.note(Kind::RunEnd, true, "1");
    let recovered = q.note(
        Kind::RunEnd,
        true,
        &d.json_bool("detail", detail_key!(RunEnd.recovered)),
    );
    // Per accepted task without a commit, its first acceptance.
    let violations = q.cte(
        &format!("{p}_v"),
        format!("SELECT run_id, scenario, min(CASE WHEN kind = '{k_task_accepted}' THEN seq END) AS vat \
         FROM base WHERE kind IN ('{k_task_accepted}', '{k_effect_committed}') AND task_id IS NOT NULL \
         GROUP BY run_id, scenario, task_id \
         HAVING sum(CASE WHEN kind = '{k_effect_committed}' THEN 1 ELSE 0 END) = 0"),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT run_id, scenario, vat, vat AS wseq FROM {violations}"),
    );
    let mut part = Part::new(violations, witness, Some(skips));
    let accepted = q.any(&[Kind::TaskAccepted]);
    part.early = vec![
        q.lacks(None, &[Kind::TaskAccepted]),
        q.lacks(Some(&accepted), &[Kind::EffectCommitted]),
        (format!("{end} IS NULL"), "unknown", lit(&Reason::NoRunEnd)),
        (
            format!("{recovered} = false"),
            "unknown",
            lit(&Reason::NotRecovered),
        ),
        (
            format!("{recovered} IS NULL"),
            "unknown",
            lit(&Reason::RecoveredMissing),
        ),
    ];
    part
}
