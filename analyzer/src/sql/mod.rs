//! The invariants as one SQL statement, for checking a trace on an engine that already holds it
//! (DuckDB, DataFusion, Spark): `analyzer sql` prints it.
//!
//! One file per invariant, mirroring `crate::check`: each adds its common table expressions and
//! names three of them: the per-scenario tally (`n` violations, `r` the reason of rows it had to
//! skip, `ev`/`er` a verdict and reason decided before looking for violations), the violations
//! (one row each, keyed by the `seq` of the row where it shows, `vat`) and their witness rows
//! (`vat`, `wseq`). This module adds what every check shares (the rows of known kinds, the
//! scenarios, the actor lives that may have lost rows, the reason for skipped rows), applies the
//! verdict rule of [`crate::check::Outcome::judge`] and the lost-span rule of
//! `crate::check::lost_spans`, and unions the results. [`Dialect`] spells the few functions that
//! differ.
//!
//! The result has one row per `(run_id, scenario, invariant)`: `run_id`, `scenario`,
//! `invariant`, `verdict` (`pass`, `fail`, `unknown`), `violations` (what `check --json` counts:
//! its `violations` plus `more`) and `reason` (why it failed with skipped rows or is unknown, or a
//! pass's note; null otherwise).
//!
//! Two differences from the native checker, both about naming rather than deciding: the SQL
//! checks each `(run_id, scenario)` of the table as a whole (the native checker reads each file on
//! its own), and when several actor lives may have lost rows, the life an unknown names for
//! `no-lost-task`, `counter-exact` and `observed-agrees` is the earliest lossy one, by the actor's
//! first row (the native checker prefers one its witness rows touch).

use outbox_trace::{Field, Kind};

use crate::check::Invariant;

mod ack_after_commit;
mod aggregate_order;
mod counter_exact;
mod dialect;
mod external_single_effect;
mod intent_atomic;
mod mark_after_puback;
mod no_lost_task;
mod observed_agrees;
mod single_effect;

pub use dialect::{Dialect, DialectError};

/// How many violations the native checker keeps as examples (see `crate::check::EXAMPLES`):
/// the lost-span rule looks at those only.
const EXAMPLES: usize = crate::check::EXAMPLES;

/// The statement being built: its common table expressions, in order.
pub(crate) struct Query {
    /// The dialect.
    pub d: Dialect,
    ctes: Vec<(String, String)>,
}

/// What one invariant's file adds: the names of its three result tables.
pub(crate) struct Part {
    /// Per scenario of `scen`: `run_id, scenario, n, r, ev, er`.
    pub tally: String,
    /// One row per violation: `run_id, scenario, vat`.
    pub violations: String,
    /// Witness rows: `run_id, scenario, vat, wseq`.
    pub witness: String,
}

impl Query {
    /// Adds `name AS (sql)` and returns `name`.
    pub fn cte(&mut self, name: &str, sql: impl Into<String>) -> String {
        self.ctes.push((name.to_string(), sql.into()));
        name.to_string()
    }

    /// A table `{prefix}_sk (run_id, scenario, r)`: per scenario with skipped rows, the reason
    /// naming the first `(kind, column)` in the contract's kind order, then by column name, as
    /// `crate::check::Skips` does. A row is counted under the first of its kind's fields it
    /// lacks.
    pub fn skips(&mut self, prefix: &str, uses: &[(Kind, &[Field])]) -> String {
        let t = self.d.text();
        let branches: Vec<String> = uses
            .iter()
            .map(|(kind, fields)| {
                let whens: String = fields
                    .iter()
                    .map(|f| format!(" WHEN {c} IS NULL THEN '{c}'", c = f.column()))
                    .collect();
                format!(
                    "SELECT run_id, scenario, '{k}' AS kind, {rank} AS krank, CASE{whens} END AS col \
                     FROM base WHERE kind = '{k}'",
                    k = kind.as_str(),
                    rank = rank(*kind),
                )
            })
            .collect();
        let counted = format!(
            "SELECT run_id, scenario, kind, krank, col, count(*) AS n FROM ({}) x \
             WHERE col IS NOT NULL GROUP BY run_id, scenario, kind, krank, col",
            branches.join(" UNION ALL ")
        );
        let ranked = format!(
            "SELECT run_id, scenario, CAST(n AS {t}) || ' ' || kind || ' row(s) lack ' || col || \
             ' and could not be used' AS r, \
             row_number() OVER (PARTITION BY run_id, scenario ORDER BY krank, col) AS rn FROM ({counted}) y"
        );
        self.cte(
            &format!("{prefix}_sk"),
            format!("SELECT run_id, scenario, r FROM ({ranked}) z WHERE rn = 1"),
        )
    }

    /// The tally `{prefix}_t (run_id, scenario, n, r, ev, er)` of every scenario: `n` the rows of
    /// `violations`, `r` the reason of `skips` (when given), and `ev`/`er` the verdict and
    /// reason of the first of `early` (tables of `(run_id, scenario)`) that holds the scenario.
    pub fn tally(
        &mut self,
        prefix: &str,
        violations: &str,
        skips: Option<&str>,
        early: &[(&str, &str, String)],
    ) -> String {
        let t = self.d.text();
        let mut joins = format!(
            "LEFT JOIN (SELECT run_id, scenario, count(*) AS n FROM {violations} \
             GROUP BY run_id, scenario) c ON c.run_id = s.run_id AND c.scenario = s.scenario"
        );
        let r = match skips {
            Some(sk) => {
                joins.push_str(&format!(
                    " LEFT JOIN {sk} k ON k.run_id = s.run_id AND k.scenario = s.scenario"
                ));
                "k.r".to_string()
            }
            None => format!("CAST(NULL AS {t})"),
        };
        let (mut ev, mut er) = (String::new(), String::new());
        for (i, (table, verdict, reason)) in early.iter().enumerate() {
            joins.push_str(&format!(
                " LEFT JOIN (SELECT DISTINCT run_id, scenario FROM {table}) e{i} \
                 ON e{i}.run_id = s.run_id AND e{i}.scenario = s.scenario"
            ));
            ev.push_str(&format!(" WHEN e{i}.run_id IS NOT NULL THEN '{verdict}'"));
            er.push_str(&format!(" WHEN e{i}.run_id IS NOT NULL THEN {reason}"));
        }
        let case = |whens: &str| {
            if whens.is_empty() {
                format!("CAST(NULL AS {t})")
            } else {
                format!("CASE{whens} END")
            }
        };
        self.cte(
            &format!("{prefix}_t"),
            format!(
                "SELECT s.run_id, s.scenario, coalesce(c.n, 0) AS n, {r} AS r, {ev} AS ev, {er} AS er \
                 FROM scen s {joins}",
                ev = case(&ev),
                er = case(&er),
            ),
        )
    }

    /// The text of the statement: the common table expressions, then `select`.
    fn finish(&self, select: &str) -> String {
        let mut out = String::from("WITH\n");
        for (i, (name, sql)) in self.ctes.iter().enumerate() {
            let sep = if i + 1 == self.ctes.len() { "" } else { "," };
            out.push_str(&format!("{name} AS (\n  {sql}\n){sep}\n"));
        }
        out.push_str(select);
        out
    }
}

/// The position of `kind` in the contract's order (the order `Skips` sorts by).
fn rank(kind: Kind) -> usize {
    Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(usize::MAX)
}

/// A reason as an SQL string literal.
pub(crate) fn lit(reason: &crate::check::Reason) -> String {
    format!("'{}'", crate::explain::reason(reason).replace('\'', "''"))
}

/// How the lost-span rule treats an invariant's violations (see `crate::check::lost_spans`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LostSpans {
    /// A violation goes when one of its witness rows is in a life that may have lost rows.
    Touched,
    /// Every violation goes when the scenario has such a life.
    Any,
    /// Missing rows only hide violations: they stay.
    Never,
}

fn lost_spans(inv: Invariant) -> LostSpans {
    match inv {
        Invariant::AckAfterCommit
        | Invariant::MarkAfterPuback
        | Invariant::IntentAtomic
        | Invariant::AggregateOrder => LostSpans::Touched,
        Invariant::NoLostTask | Invariant::CounterExact | Invariant::ObservedAgrees => {
            LostSpans::Any
        }
        Invariant::SingleEffect | Invariant::ExternalSingleEffect => LostSpans::Never,
    }
}

/// A short prefix for an invariant's table names.
fn prefix(inv: Invariant) -> &'static str {
    match inv {
        Invariant::SingleEffect => "se",
        Invariant::IntentAtomic => "ia",
        Invariant::MarkAfterPuback => "mp",
        Invariant::AckAfterCommit => "ac",
        Invariant::AggregateOrder => "ao",
        Invariant::CounterExact => "ce",
        Invariant::ObservedAgrees => "oa",
        Invariant::ExternalSingleEffect => "es",
        Invariant::NoLostTask => "nl",
    }
}

fn part(inv: Invariant, q: &mut Query) -> Part {
    let p = prefix(inv);
    match inv {
        Invariant::SingleEffect => single_effect::part(q, p),
        Invariant::IntentAtomic => intent_atomic::part(q, p),
        Invariant::MarkAfterPuback => mark_after_puback::part(q, p),
        Invariant::AckAfterCommit => ack_after_commit::part(q, p),
        Invariant::AggregateOrder => aggregate_order::part(q, p),
        Invariant::CounterExact => counter_exact::part(q, p),
        Invariant::ObservedAgrees => observed_agrees::part(q, p),
        Invariant::ExternalSingleEffect => external_single_effect::part(q, p),
        Invariant::NoLostTask => no_lost_task::part(q, p),
    }
}

/// The contract's columns, as the checks read them.
const COLUMNS: &str = "run_id, scenario, seq, actor, incarnation, kind, task_id, event_id, \
                       aggregate_id, aggregate_seq, attempt, broker_seq, store_rev, amount, counter, detail";

/// What to print.
#[derive(Debug, Clone)]
pub struct Request {
    /// The engine.
    pub dialect: Dialect,
    /// The invariants, in the contract's order (all when empty).
    pub invariants: Vec<Invariant>,
    /// A path for the statement to read instead of the table `trace`.
    pub source: Option<String>,
}

/// The shared tables, every invariant's tables, and the per-invariant verdict tables `v_<prefix>`
/// (`run_id, scenario, invariant, verdict, violations, reason`); returns the query and the
/// invariants in order.
fn build(req: &Request) -> Result<(Query, Vec<Invariant>), DialectError> {
    let d = req.dialect;
    let source = match &req.source {
        Some(path) => d.read(path)?,
        None => "trace".to_string(),
    };
    let mut invariants: Vec<Invariant> = if req.invariants.is_empty() {
        Invariant::ALL.to_vec()
    } else {
        req.invariants.clone()
    };
    invariants.sort();
    invariants.dedup();
    let mut q = Query {
        d,
        ctes: Vec::new(),
    };
    let kinds: Vec<String> = Kind::ALL
        .iter()
        .map(|k| format!("'{}'", k.as_str()))
        .collect();
    // Rows of kinds the contract does not define are ignored, as the native loader does.
    q.cte(
        "base",
        format!(
            "SELECT {COLUMNS} FROM {source} WHERE kind IN ({})",
            kinds.join(", ")
        ),
    );
    q.cte(
        "scen",
        "SELECT DISTINCT run_id, scenario FROM base".to_string(),
    );
    // Lives without their own crash row while a later life of the actor exists.
    q.cte(
        "lives",
        "SELECT run_id, scenario, actor, incarnation, \
         max(CASE WHEN kind = 'crash' THEN 1 ELSE 0 END) AS crashed \
         FROM base GROUP BY run_id, scenario, actor, incarnation",
    );
    q.cte(
        "actors",
        "SELECT run_id, scenario, actor, max(incarnation) AS last_life, min(seq) AS first_seq \
         FROM base GROUP BY run_id, scenario, actor",
    );
    q.cte(
        "lossy",
        "SELECT l.run_id, l.scenario, l.actor, l.incarnation, a.first_seq FROM lives l \
         JOIN actors a ON l.run_id = a.run_id AND l.scenario = a.scenario AND l.actor = a.actor \
         WHERE l.crashed = 0 AND a.last_life > l.incarnation",
    );
    q.cte(
        "lossy_first",
        "SELECT run_id, scenario, actor, incarnation FROM (SELECT run_id, scenario, actor, \
         incarnation, row_number() OVER (PARTITION BY run_id, scenario \
         ORDER BY first_seq, incarnation) AS rn FROM lossy) x WHERE rn = 1",
    );
    for &inv in &invariants {
        let p = prefix(inv);
        let parts = part(inv, &mut q);
        verdicts(&mut q, inv, p, &parts);
    }
    Ok((q, invariants))
}

/// Adds `v_<prefix>`: the native verdict rule, then the lost-span rule.
fn verdicts(q: &mut Query, inv: Invariant, p: &str, parts: &Part) {
    let id = inv.id();
    let judged = q.cte(
        &format!("{p}_j"),
        format!(
            "SELECT s.run_id, s.scenario, \
             CASE WHEN t.ev IS NOT NULL THEN t.ev WHEN t.n > 0 THEN 'fail' \
             WHEN t.r IS NOT NULL THEN 'unknown' ELSE 'pass' END AS verdict, \
             CASE WHEN t.ev IS NOT NULL THEN 0 ELSE t.n END AS violations, \
             CASE WHEN t.ev IS NOT NULL THEN t.er ELSE t.r END AS reason \
             FROM scen s JOIN {tally} t ON s.run_id = t.run_id AND s.scenario = t.scenario",
            tally = parts.tally
        ),
    );
    let d = q.d;
    let lost = |actor: &str, inc: &str| {
        let inc = d.to_text(inc);
        format!(
            "{actor} || '#' || {inc} || ' ends without a crash row before a later life of ' || \
             {actor} || ': spans it never exported could remove the violation'"
        )
    };
    let select = match lost_spans(inv) {
        LostSpans::Never => format!(
            "SELECT run_id, scenario, '{id}' AS invariant, verdict, violations, reason FROM {judged}"
        ),
        LostSpans::Any => {
            let gone = format!("j.verdict = 'fail' AND j.violations <= {EXAMPLES} AND l.actor IS NOT NULL");
            format!(
                "SELECT j.run_id, j.scenario, '{id}' AS invariant, \
                 CASE WHEN {gone} THEN 'unknown' ELSE j.verdict END AS verdict, \
                 CASE WHEN {gone} THEN 0 ELSE j.violations END AS violations, \
                 CASE WHEN {gone} THEN {reason} ELSE j.reason END AS reason \
                 FROM {judged} j LEFT JOIN lossy_first l \
                 ON j.run_id = l.run_id AND j.scenario = l.scenario",
                reason = lost("l.actor", "l.incarnation"),
            )
        }
        LostSpans::Touched => {
            // Per violation: the first witness row (by seq) in a lossy life, if any.
            let touched = q.cte(
                &format!("{p}_tw"),
                format!(
                    "SELECT w.run_id, w.scenario, w.vat, b.actor, b.incarnation, \
                     row_number() OVER (PARTITION BY w.run_id, w.scenario, w.vat ORDER BY w.wseq) AS rn \
                     FROM {witness} w \
                     JOIN base b ON b.run_id = w.run_id AND b.scenario = w.scenario AND b.seq = w.wseq \
                     JOIN lossy l ON l.run_id = b.run_id AND l.scenario = b.scenario \
                     AND l.actor = b.actor AND l.incarnation = b.incarnation",
                    witness = parts.witness
                ),
            );
            let each = q.cte(
                &format!("{p}_vt"),
                format!(
                    "SELECT v.run_id, v.scenario, v.vat, t.actor, t.incarnation, \
                     row_number() OVER (PARTITION BY v.run_id, v.scenario ORDER BY v.vat) AS vr \
                     FROM {violations} v LEFT JOIN {touched} t ON t.run_id = v.run_id \
                     AND t.scenario = v.scenario AND t.vat = v.vat AND t.rn = 1",
                    violations = parts.violations
                ),
            );
            let sums = q.cte(
                &format!("{p}_vs"),
                format!(
                    "SELECT run_id, scenario, count(*) AS total, \
                     sum(CASE WHEN actor IS NULL THEN 1 ELSE 0 END) AS untouched, \
                     sum(CASE WHEN actor IS NULL AND vr <= {EXAMPLES} THEN 1 ELSE 0 END) AS untouched_kept, \
                     min(CASE WHEN actor IS NOT NULL THEN vr END) AS first_touched \
                     FROM {each} GROUP BY run_id, scenario"
                ),
            );
            let gone = format!(
                "j.verdict = 'fail' AND s.total <= {EXAMPLES} AND s.untouched = 0"
            );
            format!(
                "SELECT j.run_id, j.scenario, '{id}' AS invariant, \
                 CASE WHEN {gone} THEN 'unknown' ELSE j.verdict END AS verdict, \
                 CASE WHEN j.verdict <> 'fail' OR s.total IS NULL THEN j.violations \
                 WHEN s.total <= {EXAMPLES} THEN s.untouched \
                 WHEN s.untouched_kept = 0 THEN s.total \
                 ELSE s.untouched_kept + s.total - {EXAMPLES} END AS violations, \
                 CASE WHEN {gone} THEN {reason} ELSE j.reason END AS reason \
                 FROM {judged} j \
                 LEFT JOIN {sums} s ON j.run_id = s.run_id AND j.scenario = s.scenario \
                 LEFT JOIN {each} e ON e.run_id = s.run_id AND e.scenario = s.scenario \
                 AND e.vr = s.first_touched",
                reason = lost("e.actor", "e.incarnation"),
            )
        }
    };
    q.cte(&format!("v_{p}"), select);
}

/// The statement deciding the invariants: one row per `(run_id, scenario, invariant)`.
pub fn statement(req: &Request) -> Result<String, DialectError> {
    let (q, invariants) = build(req)?;
    let union = union_of(&invariants);
    Ok(q.finish(&format!(
        "SELECT run_id, scenario, invariant, verdict, CAST(violations AS BIGINT) AS violations, reason\n\
         FROM ({union}) u\nORDER BY run_id, scenario, {order}\n",
        order = order_by(&invariants)
    )))
}

/// The statement listing up to `n` witness rows per failing invariant: `run_id`, `scenario`,
/// `invariant`, then the row's `seq`, `actor`, `incarnation`, `kind`, `task_id`, `event_id`,
/// `store_rev`, `broker_seq`, in order of the violation they show, then `seq`.
pub fn witnesses(req: &Request, n: usize) -> Result<String, DialectError> {
    let (mut q, invariants) = build(req)?;
    let union = union_of(&invariants);
    q.cte("verdicts", union);
    let rows: Vec<String> = invariants
        .iter()
        .map(|inv| {
            let p = prefix(*inv);
            format!(
                "SELECT run_id, scenario, '{id}' AS invariant, min(vat) AS vat, wseq \
                 FROM {p}_w GROUP BY run_id, scenario, wseq",
                id = inv.id()
            )
        })
        .collect();
    q.cte("witness_rows", rows.join(" UNION ALL "));
    q.cte(
        "witness_ranked",
        "SELECT w.run_id, w.scenario, w.invariant, w.wseq, w.vat, \
         row_number() OVER (PARTITION BY w.run_id, w.scenario, w.invariant ORDER BY w.vat, w.wseq) AS rn \
         FROM witness_rows w JOIN verdicts v ON v.run_id = w.run_id AND v.scenario = w.scenario \
         AND v.invariant = w.invariant WHERE v.verdict = 'fail'",
    );
    Ok(q.finish(&format!(
        "SELECT w.run_id, w.scenario, w.invariant, b.seq, b.actor, b.incarnation, b.kind, \
         b.task_id, b.event_id, b.store_rev, b.broker_seq\n\
         FROM witness_ranked w JOIN base b ON b.run_id = w.run_id AND b.scenario = w.scenario \
         AND b.seq = w.wseq\nWHERE w.rn <= {n}\n\
         ORDER BY w.run_id, w.scenario, {order}, w.rn\n",
        order = order_by(&invariants).replace("invariant", "w.invariant")
    )))
}

fn union_of(invariants: &[Invariant]) -> String {
    invariants
        .iter()
        .map(|inv| {
            format!(
                "SELECT run_id, scenario, invariant, verdict, violations, reason FROM v_{}",
                prefix(*inv)
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// Sorts the invariants in the contract's order.
fn order_by(invariants: &[Invariant]) -> String {
    let whens: String = invariants
        .iter()
        .enumerate()
        .map(|(i, inv)| format!(" WHEN '{}' THEN {i}", inv.id()))
        .collect();
    format!("CASE invariant{whens} END")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Reason;

    #[test]
    fn the_texts_built_in_sql_are_the_native_reasons() {
        // The SQL concatenates these; they must read as `explain::reason` writes them.
        let skipped = crate::explain::reason(&Reason::MissingFields {
            kind: Kind::Acked,
            column: "event_id",
            rows: 7,
        });
        assert_eq!(
            skipped,
            "7 acked row(s) lack event_id and could not be used"
        );
        let lost = crate::explain::reason(&Reason::MayHaveLostSpans {
            actor: "worker".into(),
            incarnation: 0,
        });
        assert_eq!(
            lost,
            "worker#0 ends without a crash row before a later life of worker: spans it never \
             exported could remove the violation"
        );
    }

    #[test]
    fn datafusion_cannot_read_a_path() {
        let req = Request {
            dialect: Dialect::Datafusion,
            invariants: vec![],
            source: Some("t.parquet".into()),
        };
        assert!(matches!(
            statement(&req),
            Err(DialectError::NoPathInSelect(_))
        ));
    }
}
