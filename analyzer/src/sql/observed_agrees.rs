//! `observed-agrees` in SQL (see `crate::check::observed_agrees`): the last `observed` row's
//! totals against the trace's counts, each compared only where its keys are present.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `observed-agrees`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let d = q.d;
    let skips = q.skips(
        p,
        &[
            (Kind::PublishAcked, &[Field::EventId]),
            (Kind::TaskAccepted, &[Field::TaskId]),
            (Kind::IntentRecorded, &[Field::EventId]),
        ],
    );
    let keys = [
        "results",
        "processed",
        "dedup_keys",
        "stream_messages",
        "tasks",
        "outbox_published",
        "outbox_pending",
    ];
    let fields: Vec<String> = keys
        .iter()
        .map(|k| format!("{} AS o_{k}", d.json_int("detail", k)))
        .collect();
    q.cte(
        &format!("{p}_obs"),
        format!(
            "SELECT run_id, scenario, seq, {} FROM (SELECT run_id, scenario, seq, detail, \
             row_number() OVER (PARTITION BY run_id, scenario ORDER BY seq DESC) AS rn FROM base \
             WHERE kind = 'observed') x WHERE rn = 1",
            fields.join(", ")
        ),
    );
    q.cte(
        &format!("{p}_counts"),
        "SELECT run_id, scenario, \
         sum(CASE WHEN kind = 'effect_committed' THEN 1 ELSE 0 END) AS effects, \
         count(DISTINCT CASE WHEN kind = 'publish_acked' THEN event_id END) AS published, \
         count(DISTINCT CASE WHEN kind = 'task_accepted' THEN task_id END) AS tasks, \
         count(DISTINCT CASE WHEN kind = 'intent_recorded' THEN event_id END) AS intents \
         FROM base GROUP BY run_id, scenario",
    );
    q.cte(
        &format!("{p}_cmp"),
        format!(
            "SELECT o.run_id, o.scenario, o.seq, o.o_results AS observed, c.effects AS traced, 0 AS at_least FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario \
             UNION ALL SELECT o.run_id, o.scenario, o.seq, o.o_processed, c.effects, 0 FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario \
             UNION ALL SELECT o.run_id, o.scenario, o.seq, o.o_dedup_keys, c.effects, 0 FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario \
             UNION ALL SELECT o.run_id, o.scenario, o.seq, o.o_stream_messages, c.published, 1 FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario \
             UNION ALL SELECT o.run_id, o.scenario, o.seq, o.o_tasks, c.tasks, 0 FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario \
             UNION ALL SELECT o.run_id, o.scenario, o.seq, o.o_outbox_published + o.o_outbox_pending, c.intents, 0 FROM {p}_obs o JOIN {p}_counts c ON c.run_id = o.run_id AND c.scenario = o.scenario"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, seq AS vat FROM {p}_cmp WHERE observed IS NOT NULL \
             AND ((at_least = 1 AND observed < traced) OR (at_least = 0 AND observed <> traced))"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT DISTINCT run_id, scenario, vat, vat AS wseq FROM {violations}"),
    );
    let no_observed = q.cte(
        &format!("{p}_noobs"),
        format!(
            "SELECT s.run_id, s.scenario FROM scen s LEFT JOIN {p}_obs o ON o.run_id = s.run_id \
             AND o.scenario = s.scenario WHERE o.run_id IS NULL"
        ),
    );
    let no_totals = q.cte(
        &format!("{p}_nototals"),
        format!(
            "SELECT run_id, scenario FROM {p}_cmp GROUP BY run_id, scenario HAVING count(observed) = 0"
        ),
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&skips),
        &[
            (&no_observed, "unknown", lit(&Reason::NoObserved)),
            (&no_totals, "unknown", lit(&Reason::NoObservedTotals)),
        ],
    );
    Part {
        tally,
        violations,
        witness,
    }
}
