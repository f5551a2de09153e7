//! The lost-span rule of `crate::check::lost_spans` in SQL: the actor lives that may have lost
//! their last rows (`lossy`, built by `statement`), and the violations such rows could remove
//! (the `lost_spans` column of the invariant table): those whose witness touches such a life
//! ([`touched`]), every one where the scenario has one, or, for `observed-agrees`, the totals the
//! store holds more of.

use outbox_trace::{detail_key, Kind};

use super::query::{Part, Query, EXAMPLES};
use crate::check::{Invariant, LostSpans};

/// `inv`'s verdict, count and reason over a row `w` of `wide` with the rule applied, from
/// `(v, n, r)` (before it), adding to `cols` the columns of `wide` it reads; and the condition
/// under which it made the verdict unknown because the store holds more than the trace.
pub(super) fn apply(
    q: &Query,
    inv: Invariant,
    part: &Part,
    (v, n, r): (String, String, String),
    cols: &mut Vec<String>,
) -> ((String, String, String), String) {
    let p = inv.sql_prefix();
    let d = q.d;
    let because = |actor: &str, inc: &str| {
        let inc = d.to_text(inc);
        format!(
            "{actor} || '#' || {inc} || ' ends without a {crash} row before a later life of ' || \
             {actor} || ': spans it never exported could remove the violation'",
            crash = Kind::Crash
        )
    };
    let mut short = "FALSE".to_string();
    let out = match inv.lost_spans() {
        LostSpans::Never if part.lost.is_some() => {
            let (count, text) = part.lost.clone().unwrap_or_default();
            cols.push(format!(
                "{count} AS {p}_lost, {text} AS {p}_lost_text, lf.actor AS {p}_actor, \
                 lf.incarnation AS {p}_inc, ln.n AS {p}_lives"
            ));
            let lossy = format!("{v} = 'fail' AND w.{p}_actor IS NOT NULL");
            let left = format!("{n} - w.{p}_lost");
            let gone = format!("{lossy} AND {left} = 0");
            short = gone.clone();
            let inc = d.to_text(&format!("w.{p}_inc"));
            let others = format!("w.{p}_lives - 1");
            let more = format!(
                "CASE WHEN {others} = 0 THEN '' WHEN {others} = 1 THEN ' (and 1 more life)' \
                 ELSE ' (and ' || {} || ' more lives)' END",
                d.to_text(&others)
            );
            (
                format!("CASE WHEN {gone} THEN 'unknown' ELSE {v} END"),
                format!("CASE WHEN {lossy} THEN {left} ELSE {n} END"),
                format!(
                    "CASE WHEN {gone} THEN w.{p}_lost_text || ': ' || w.{p}_actor || '#' || {inc} \
                     || {more} || ' may not have exported its last spans, which would explain it' \
                     ELSE {r} END"
                ),
            )
        }
        LostSpans::Never => (v, n, r),
        LostSpans::Any => {
            cols.push(format!("lf.actor AS {p}_actor, lf.incarnation AS {p}_inc"));
            let gone = format!("{v} = 'fail' AND {n} <= {EXAMPLES} AND w.{p}_actor IS NOT NULL");
            (
                format!("CASE WHEN {gone} THEN 'unknown' ELSE {v} END"),
                format!("CASE WHEN {gone} THEN 0 ELSE {n} END"),
                format!(
                    "CASE WHEN {gone} THEN {} ELSE {r} END",
                    because(&format!("w.{p}_actor"), &format!("w.{p}_inc"))
                ),
            )
        }
        LostSpans::Touched => {
            cols.push(format!(
                "touched.{p}_total, touched.{p}_untouched, touched.{p}_kept, \
                 touched.{p}_actor, touched.{p}_inc"
            ));
            let (total, untouched, kept) = (
                format!("w.{p}_total"),
                format!("w.{p}_untouched"),
                format!("w.{p}_kept"),
            );
            let gone = format!("{v} = 'fail' AND {total} <= {EXAMPLES} AND {untouched} = 0");
            (
                format!("CASE WHEN {gone} THEN 'unknown' ELSE {v} END"),
                format!(
                    "CASE WHEN {v} <> 'fail' OR {total} IS NULL THEN {n} \
                     WHEN {total} <= {EXAMPLES} THEN {untouched} \
                     WHEN {kept} = 0 THEN {total} \
                     ELSE {kept} + {total} - {EXAMPLES} END"
                ),
                format!(
                    "CASE WHEN {gone} THEN {} ELSE {r} END",
                    because(&format!("w.{p}_actor"), &format!("w.{p}_inc"))
                ),
            )
        }
    };
    (out, short)
}

/// For the lost-span rule, `touched`: per scenario with violations of the invariants
/// `witnessed` (their prefixes and witness tables), for each invariant `p`: how many violations
/// there are (`{p}_total`), how many no witness row of a lossy life touches (in all,
/// `{p}_untouched`, and among the first [`EXAMPLES`], `{p}_kept`), and the life touched by the
/// first touched violation (`{p}_actor`, `{p}_inc`: the life of its first witness row by `seq`
/// in a lossy life). One table for all, so the rows of lossy lives are read once; each
/// violation has its own row among its witness rows, so the violation tables are not read
/// again.
pub(super) fn touched(q: &mut Query, witnessed: &[(&str, String)]) {
    let d = q.d;
    let rows: Vec<String> = witnessed
        .iter()
        .map(|(p, w)| format!("SELECT '{p}' AS inv, run_id, scenario, vat, wseq FROM {w}"))
        .collect();
    let first = |x: &str| d.first_by(&format!("l.{x}"), "l.seq");
    let each = q.cte(
        "touched_each",
        format!(
            "SELECT inv, run_id, scenario, vat, actor, incarnation, \
             row_number() OVER (PARTITION BY inv, run_id, scenario ORDER BY vat) AS vr, \
             row_number() OVER (PARTITION BY inv, run_id, scenario, \
             CASE WHEN actor IS NULL THEN 0 ELSE 1 END ORDER BY vat) AS tr \
             FROM (SELECT w.inv, w.run_id, w.scenario, w.vat, {} AS actor, {} AS incarnation \
             FROM ({}) w LEFT JOIN lossy_rows l ON l.run_id = w.run_id AND l.scenario = w.scenario \
             AND l.seq = w.wseq GROUP BY w.inv, w.run_id, w.scenario, w.vat) x",
            first("actor"),
            first("incarnation"),
            rows.join(" UNION ALL ")
        ),
    );
    let sums: Vec<String> = witnessed
        .iter()
        .map(|(p, _)| {
            let first = format!("inv = '{p}' AND actor IS NOT NULL AND tr = 1");
            format!(
                "sum(CASE WHEN inv = '{p}' THEN 1 ELSE 0 END) AS {p}_total, \
                 sum(CASE WHEN inv = '{p}' AND actor IS NULL THEN 1 ELSE 0 END) AS {p}_untouched, \
                 sum(CASE WHEN inv = '{p}' AND actor IS NULL AND vr <= {EXAMPLES} THEN 1 ELSE 0 END) \
                 AS {p}_kept, max(CASE WHEN {first} THEN actor END) AS {p}_actor, \
                 max(CASE WHEN {first} THEN incarnation END) AS {p}_inc"
            )
        })
        .collect();
    q.cte(
        "touched",
        format!(
            "SELECT run_id, scenario, {} FROM {each} GROUP BY run_id, scenario",
            sums.join(", ")
        ),
    );
}

/// The actor lives that may have lost their last rows: `lives` (every life, and whether it has
/// its own crash row), `unannounced`, `lossy` (those without a crash row before a later life of
/// their actor, or whose crash row says `announced: false`), `lossy_first` (the earliest),
/// `lossy_rows` (their rows) and `lossy_n` (how many), from `base` and `source`.
pub(super) fn lives(q: &mut Query, source: &str) {
    let k_crash = Kind::Crash.as_str();
    let d = q.d;
    // Every life, and whether it has its own crash row.
    q.cte(
        "lives",
        format!(
            "SELECT run_id, scenario, actor, incarnation, min(seq) AS first_seq, \
         max(CASE WHEN kind = '{k_crash}' THEN 1 ELSE 0 END) AS crashed \
         FROM base GROUP BY run_id, scenario, actor, incarnation"
        ),
    );
    // Lives whose crash row says `announced: false`: rows of them may be missing too.
    q.cte(
        "unannounced",
        format!(
            "SELECT DISTINCT run_id, scenario, actor, incarnation FROM {source} \
             WHERE kind = '{k_crash}' AND {} = false",
            d.json_bool("detail", detail_key!(Crash.announced))
        ),
    );
    q.cte(
        "lossy",
        "SELECT run_id, scenario, actor, incarnation, first_seq FROM (SELECT l.run_id, l.scenario, \
         l.actor, l.incarnation, l.crashed, CASE WHEN u.actor IS NULL THEN 0 ELSE 1 END AS unann, \
         max(l.incarnation) OVER (PARTITION BY l.run_id, l.scenario, l.actor) AS last_life, \
         min(l.first_seq) OVER (PARTITION BY l.run_id, l.scenario, l.actor) AS first_seq \
         FROM lives l LEFT JOIN unannounced u ON u.run_id = l.run_id AND u.scenario = l.scenario \
         AND u.actor = l.actor AND u.incarnation = l.incarnation) x \
         WHERE (crashed = 0 AND last_life > incarnation) OR unann = 1",
    );
    q.cte(
        "lossy_first",
        "SELECT run_id, scenario, actor, incarnation FROM (SELECT run_id, scenario, actor, \
         incarnation, row_number() OVER (PARTITION BY run_id, scenario \
         ORDER BY first_seq, incarnation) AS rn FROM lossy) x WHERE rn = 1",
    );
    // The rows of those lives: few, and only these can touch a violation.
    q.cte(
        "lossy_rows",
        "SELECT b.run_id, b.scenario, b.seq, b.actor, b.incarnation FROM base b JOIN lossy l \
         ON b.run_id = l.run_id AND b.scenario = l.scenario AND b.actor = l.actor \
         AND b.incarnation = l.incarnation",
    );
    q.cte(
        "lossy_n",
        "SELECT run_id, scenario, count(*) AS n FROM lossy GROUP BY run_id, scenario",
    );
}
