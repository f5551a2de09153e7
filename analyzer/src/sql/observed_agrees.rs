//! `observed-agrees` in SQL (see `crate::check::observed_agrees`): the last `observed` row's
//! totals against the trace's counts, each compared only where its keys are present.

use outbox_trace::detail::DetailKey;
use outbox_trace::{detail_key, Field, Kind};

use super::query::{lit, Part, Query};
use crate::check::{Reason, Total};

/// Adds the tables of `observed-agrees`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let k_intent_recorded = Kind::IntentRecorded.as_str();
    let k_publish_acked = Kind::PublishAcked.as_str();
    let k_task_accepted = Kind::TaskAccepted.as_str();
    let d = q.d;
    let skips = q.skips(&[
        (Kind::PublishAcked, &[Field::EventId]),
        (Kind::TaskAccepted, &[Field::TaskId]),
        (Kind::IntentRecorded, &[Field::EventId]),
    ]);
    let mut field = |key: DetailKey| q.note(Kind::Observed, true, &d.json_int("detail", key));
    let results = field(detail_key!(Observed.results));
    let processed = field(detail_key!(Observed.processed));
    let dedup_keys = field(detail_key!(Observed.dedup_keys));
    let stream_messages = field(detail_key!(Observed.stream_messages));
    let tasks = field(detail_key!(Observed.tasks));
    let outbox = format!(
        "{} + {}",
        field(detail_key!(Observed.outbox_published)),
        field(detail_key!(Observed.outbox_pending))
    );
    let present = q.note(Kind::Observed, true, "1");
    let at = q.note(Kind::Observed, true, "seq");
    let effects = q.count_where(&format!("kind = '{k_effect_committed}'"));
    // Distinct events published and recorded as intents, and distinct tasks accepted: each key
    // once per kind, then counted per scenario.
    let keys = q.cte(
        &format!("{p}_k"),
        format!("SELECT run_id, scenario, sum(CASE WHEN kind = '{k_publish_acked}' THEN 1 ELSE 0 END) AS published, \
         sum(CASE WHEN kind = '{k_task_accepted}' THEN 1 ELSE 0 END) AS tasks, \
         sum(CASE WHEN kind = '{k_intent_recorded}' THEN 1 ELSE 0 END) AS intents \
         FROM (SELECT run_id, scenario, kind FROM base \
         WHERE kind IN ('{k_publish_acked}', '{k_intent_recorded}', '{k_task_accepted}') \
         AND CASE WHEN kind = '{k_task_accepted}' THEN task_id ELSE event_id END IS NOT NULL \
         GROUP BY run_id, scenario, kind, CASE WHEN kind = '{k_task_accepted}' THEN task_id ELSE event_id END) x \
         GROUP BY run_id, scenario"),
    );
    let n = |c: &str| format!("coalesce({keys}.{c}, 0)");
    // (observed, traced, whether observed may exceed traced)
    let compared = [
        (results, effects.clone(), false),
        (processed, effects.clone(), false),
        (dedup_keys, effects, false),
        (stream_messages, n("published"), true),
        (tasks, n("tasks"), false),
        (outbox, n("intents"), false),
    ];
    let wrong: Vec<String> = compared
        .iter()
        .map(|(o, t, at_least)| {
            let op = if *at_least { "<" } else { "<>" };
            format!("CASE WHEN {o} {op} {t} THEN 1 ELSE 0 END")
        })
        .collect();
    let none: Vec<String> = compared
        .iter()
        .map(|(o, _, _)| format!("{o} IS NULL"))
        .collect();
    // One violation per wrong total, all at the observed row.
    let branches: Vec<String> = wrong
        .iter()
        .map(|w| {
            format!(
                "SELECT s.run_id, s.scenario, {at} AS vat FROM scen s LEFT JOIN {keys} \
                 ON {keys}.run_id = s.run_id AND {keys}.scenario = s.scenario WHERE {w} = 1"
            )
        })
        .collect();
    let violations = q.cte(&format!("{p}_v"), branches.join(" UNION ALL "));
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT DISTINCT run_id, scenario, vat, vat AS wseq FROM {violations}"),
    );
    // The totals the store holds more of: rows missing from the trace explain them.
    let totals = [
        Total::Results,
        Total::Processed,
        Total::DedupKeys,
        Total::StreamMessages,
        Total::Tasks,
        Total::Intents,
    ];
    let more: Vec<(Total, &(String, String, bool))> = totals
        .into_iter()
        .zip(&compared)
        .filter(|(_, c)| !c.2)
        .collect();
    let lost_count: Vec<String> = more
        .iter()
        .map(|(_, (o, t, _))| format!("CASE WHEN {o} > {t} THEN 1 ELSE 0 END"))
        .collect();
    let lost_text: String = more
        .iter()
        .map(|(total, (o, t, _))| {
            format!(
                " WHEN {o} > {t} THEN 'the observer read {} = ' || {} || ', the trace counts ' || {}",
                total.key(),
                d.to_text(o),
                d.to_text(t)
            )
        })
        .collect();
    let mut part = Part::new(violations, witness, Some(skips));
    part.lost = Some((
        format!("({})", lost_count.join(" + ")),
        format!("(CASE{lost_text} END)"),
    ));
    part.count = Some(format!("({})", wrong.join(" + ")));
    part.extra = vec![keys];
    part.early = vec![
        (
            format!("{present} IS NULL"),
            "unknown",
            lit(&Reason::NoObserved),
        ),
        (
            none.join(" AND "),
            "unknown",
            lit(&Reason::NoObservedTotals),
        ),
    ];
    part
}
