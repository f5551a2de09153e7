//! `no-lost-task` in SQL (see `crate::check::no_lost_task`): on a scenario whose last `run_end`
//! says `recovered: true`, every accepted task has an `effect_committed`; otherwise unknown.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `no-lost-task`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let d = q.d;
    let skips = q.skips(
        p,
        &[
            (Kind::TaskAccepted, &[Field::TaskId]),
            (Kind::EffectCommitted, &[Field::TaskId]),
        ],
    );
    q.cte(
        &format!("{p}_end"),
        format!(
            "SELECT run_id, scenario, {rec} AS rec FROM (SELECT run_id, scenario, detail, \
             row_number() OVER (PARTITION BY run_id, scenario ORDER BY seq DESC) AS rn FROM base \
             WHERE kind = 'run_end') x WHERE rn = 1",
            rec = d.json_bool("detail", "recovered")
        ),
    );
    let no_end = q.cte(
        &format!("{p}_noend"),
        format!(
            "SELECT s.run_id, s.scenario FROM scen s LEFT JOIN {p}_end e ON e.run_id = s.run_id \
             AND e.scenario = s.scenario WHERE e.run_id IS NULL"
        ),
    );
    let not_recovered = q.cte(
        &format!("{p}_notrec"),
        format!("SELECT run_id, scenario FROM {p}_end WHERE rec = false"),
    );
    let no_flag = q.cte(
        &format!("{p}_noflag"),
        format!("SELECT run_id, scenario FROM {p}_end WHERE rec IS NULL"),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        "SELECT a.run_id, a.scenario, min(a.seq) AS vat FROM base a \
         LEFT JOIN (SELECT DISTINCT run_id, scenario, task_id FROM base \
         WHERE kind = 'effect_committed' AND task_id IS NOT NULL) e \
         ON e.run_id = a.run_id AND e.scenario = a.scenario AND e.task_id = a.task_id \
         WHERE a.kind = 'task_accepted' AND a.task_id IS NOT NULL AND e.task_id IS NULL \
         GROUP BY a.run_id, a.scenario, a.task_id",
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT run_id, scenario, vat, vat AS wseq FROM {violations}"),
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&skips),
        &[
            (&no_end, "unknown", lit(&Reason::NoRunEnd)),
            (&not_recovered, "unknown", lit(&Reason::NotRecovered)),
            (&no_flag, "unknown", lit(&Reason::RecoveredMissing)),
        ],
    );
    Part {
        tally,
        violations,
        witness,
    }
}
