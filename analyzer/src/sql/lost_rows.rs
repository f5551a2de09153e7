//! The lost-rows rule of `crate::check::lost_rows` in SQL: the shortfalls the last `observed`
//! row shows against the trace's counts (as columns of `wide`), and the verdicts they turn
//! unknown.

use outbox_trace::{detail_key, Kind};

use super::query::Query;
use crate::check::{Held, Invariant, LostRows, Stored};
use crate::explain::words::{held_words, LOST};

/// One store figure against the trace's: what the store holds, the store's SQL expression, the
/// trace's, and how many rows are missing (null unless the store holds more).
type Compared = (Held, String, String, String);

/// The columns of `wide` the rule reads: per shortfall, how many rows are missing (null when the
/// store holds no more than the trace) and its reason.
pub(super) fn columns(q: &mut Query) -> String {
    let d = q.d;
    let t = d.text();
    let k_effect = Kind::EffectCommitted.as_str();
    let k_intent = Kind::IntentRecorded.as_str();
    let effects = q.count_where(&format!("kind = '{k_effect}'"));
    let effect_tasks = q.fact(&format!(
        "count(DISTINCT CASE WHEN kind = '{k_effect}' THEN task_id END)"
    ));
    let intents = q.fact(&format!(
        "count(DISTINCT CASE WHEN kind = '{k_intent}' THEN event_id END)"
    ));
    let mut field = |key| q.note(Kind::Observed, true, &d.json_int("detail", key));
    let tasks_done = field(detail_key!(Observed.tasks_done));
    let results = format!(
        "coalesce({}, {})",
        field(detail_key!(Observed.results)),
        field(detail_key!(Observed.processed))
    );
    let dedup_keys = field(detail_key!(Observed.dedup_keys));
    let outbox = format!(
        "{} + {}",
        field(detail_key!(Observed.outbox_published)),
        field(detail_key!(Observed.outbox_pending))
    );
    let compared: Vec<Compared> = [
        (Held::TasksDone, tasks_done, effect_tasks),
        (Held::Results, results, effects.clone()),
        (Held::DedupKeys, dedup_keys, effects),
        (Held::OutboxRows, outbox, intents),
    ]
    .into_iter()
    .map(|(h, store, trace)| {
        let missing = format!("(CASE WHEN {store} > {trace} THEN {store} - {trace} END)");
        (h, store, trace, missing)
    })
    .collect();
    let reason = |c: &Compared| {
        let (store_words, trace_words) = held_words(c.0);
        format!(
            "'the store holds ' || {} || ' {store_words}, the trace ' || {} || ' {trace_words}: {LOST}'",
            d.to_text(&c.1),
            d.to_text(&c.2)
        )
    };
    // The effects' shortfall with the most missing, the first on a tie (as the native fold).
    let [a, b, c, i] = [&compared[0], &compared[1], &compared[2], &compared[3]];
    let (ma, mb, mc) = (&a.3, &b.3, &c.3);
    let pick = |x: &dyn Fn(&Compared) -> String| {
        format!(
            "(CASE WHEN {ma} IS NOT NULL AND {ma} >= coalesce({mb}, -1) AND {ma} >= coalesce({mc}, -1) \
             THEN {} WHEN {mb} IS NOT NULL AND {mb} >= coalesce({mc}, -1) THEN {} \
             WHEN {mc} IS NOT NULL THEN {} END)",
            x(a),
            x(b),
            x(c)
        )
    };
    format!(
        "{} AS lr_eff_missing, CAST({} AS {t}) AS lr_eff_reason, {} AS lr_int_missing, \
         CAST(CASE WHEN {} IS NOT NULL THEN {} END AS {t}) AS lr_int_reason",
        pick(&|x| x.3.clone()),
        pick(&reason),
        i.3,
        i.3,
        reason(i)
    )
}

/// Which invariants the rule touches, and how: `Some(true)` when any shortfall of its kind
/// turns its failure unknown, `Some(false)` when only one at least as large as its violations
/// does, with the columns (missing, reason) it reads.
pub(super) fn rule(inv: Invariant) -> Option<(bool, &'static str, &'static str)> {
    let (any, stored) = match inv.lost_rows() {
        LostRows::Any(stored) => (true, stored),
        LostRows::Covers(stored) => (false, stored),
        // `observed-agrees` states the totals itself (see `statement`).
        LostRows::Totals | LostRows::Never => return None,
    };
    let (missing, reason) = match stored {
        Stored::Effects => ("w.lr_eff_missing", "w.lr_eff_reason"),
        Stored::Intents => ("w.lr_int_missing", "w.lr_int_reason"),
    };
    Some((any, missing, reason))
}

/// The final verdict, count and reason of `inv` with the rule applied, over `(v, n, r)` (its
/// verdict, count and reason before), and the condition under which the rule made it unknown.
pub(super) fn apply(
    inv: Invariant,
    (v, n, r): (String, String, String),
) -> ((String, String, String), String) {
    let Some((any, missing, reason)) = rule(inv) else {
        return ((v, n, r), "FALSE".to_string());
    };
    let bound = if any {
        String::new()
    } else {
        format!(" AND {n} <= {missing}")
    };
    let gone = format!("{v} = 'fail' AND {missing} IS NOT NULL{bound}");
    (
        (
            format!("CASE WHEN {gone} THEN 'unknown' ELSE {v} END"),
            format!("CASE WHEN {gone} THEN 0 ELSE {n} END"),
            format!("CASE WHEN {gone} THEN {reason} ELSE {r} END"),
        ),
        gone,
    )
}
