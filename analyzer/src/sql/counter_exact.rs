//! `counter-exact` in SQL (see `crate::check::counter_exact`): commits in `store_rev` order (ties
//! by `seq`) step the counter by their amount from `run_start.detail.counter_start` (else 0), each
//! from the counter the commit before it reported; the last `observed` row's counter is the start
//! plus every amount.

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `counter-exact`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let d = q.d;
    let skips = q.skips(
        p,
        &[(
            Kind::EffectCommitted,
            &[Field::StoreRev, Field::Amount, Field::Counter],
        )],
    );
    q.cte(
        &format!("{p}_rows"),
        "SELECT run_id, scenario, seq, store_rev, amount, counter FROM base \
         WHERE kind = 'effect_committed'",
    );
    let no_rev = q.cte(
        &format!("{p}_norev"),
        format!("SELECT run_id, scenario FROM {p}_rows GROUP BY run_id, scenario HAVING count(store_rev) = 0"),
    );
    q.cte(
        &format!("{p}_start"),
        format!(
            "SELECT run_id, scenario, coalesce({cs}, 0) AS cs FROM (SELECT run_id, scenario, detail, \
             row_number() OVER (PARTITION BY run_id, scenario ORDER BY seq) AS rn FROM base \
             WHERE kind = 'run_start') x WHERE rn = 1",
            cs = d.json_int("detail", "counter_start")
        ),
    );
    q.cte(
        &format!("{p}_obs"),
        format!(
            "SELECT run_id, scenario, seq, {oc} AS oc FROM (SELECT run_id, scenario, seq, detail, \
             row_number() OVER (PARTITION BY run_id, scenario ORDER BY seq DESC) AS rn FROM base \
             WHERE kind = 'observed') x WHERE rn = 1",
            oc = d.json_int("detail", "counter")
        ),
    );
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, amount, counter, \
             lag(counter) OVER (PARTITION BY run_id, scenario ORDER BY store_rev, seq) AS prevc, \
             lag(seq) OVER (PARTITION BY run_id, scenario ORDER BY store_rev, seq) AS prevseq \
             FROM {p}_rows"
        ),
    );
    q.cte(
        &format!("{p}_sum"),
        format!(
            "SELECT run_id, scenario, sum(amount) AS total FROM {p}_rows GROUP BY run_id, scenario"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT w.run_id, w.scenario, w.seq AS vat, w.prevseq FROM {p}_win w \
             LEFT JOIN {p}_start s ON s.run_id = w.run_id AND s.scenario = w.scenario \
             WHERE w.counter <> coalesce(w.prevc, s.cs, 0) + w.amount \
             UNION ALL SELECT o.run_id, o.scenario, o.seq AS vat, CAST(NULL AS BIGINT) AS prevseq \
             FROM {p}_obs o \
             LEFT JOIN {p}_sum t ON t.run_id = o.run_id AND t.scenario = o.scenario \
             LEFT JOIN {p}_start s ON s.run_id = o.run_id AND s.scenario = o.scenario \
             WHERE o.oc IS NOT NULL AND o.oc <> coalesce(s.cs, 0) + coalesce(t.total, 0)"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT run_id, scenario, vat, vat AS wseq FROM {violations} \
             UNION ALL SELECT run_id, scenario, vat, prevseq AS wseq FROM {violations} WHERE prevseq IS NOT NULL"
        ),
    );
    // Without an observed counter the final comparison is missing: a pass becomes unknown, and
    // a failure says so.
    let no_counter = q.cte(
        &format!("{p}_nocounter"),
        format!(
            "SELECT s.run_id, s.scenario, {reason} AS r FROM scen s LEFT JOIN {p}_obs o \
             ON o.run_id = s.run_id AND o.scenario = s.scenario WHERE o.oc IS NULL",
            reason = lit(&Reason::NoObservedCounter)
        ),
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&no_counter),
        &[(&no_rev, "unknown", lit(&Reason::NoStoreRev))],
    );
    // A skipped commit makes every later step look wrong: the verdict is unknown with the skip's
    // reason, after the store_rev test.
    let tally = q.cte(
        &format!("{p}_t2"),
        format!(
            "SELECT t.run_id, t.scenario, t.n, t.r, \
             CASE WHEN t.ev IS NOT NULL THEN t.ev WHEN k.r IS NOT NULL THEN 'unknown' END AS ev, \
             CASE WHEN t.ev IS NOT NULL THEN t.er ELSE k.r END AS er \
             FROM {tally} t LEFT JOIN {skips} k ON k.run_id = t.run_id AND k.scenario = t.scenario"
        ),
    );
    Part {
        tally,
        violations,
        witness,
    }
}
