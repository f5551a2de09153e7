//! The invariants as one SQL statement, for checking a trace on an engine that already holds it
//! (DuckDB, DataFusion, Spark): `analyzer sql` prints it.
//!
//! One file per invariant, mirroring `crate::check`: each adds its common table expressions and
//! describes itself as a `Part`: its violations (one row each, keyed by the `seq` of the row
//! where it shows, `vat`), their witness rows (`vat`, `wseq`), and the per-scenario conditions of
//! its verdict (rows it had to skip, verdicts decided before looking for violations), written as
//! expressions over one row per scenario.
//!
//! The statement is shaped for engines that do not materialise common table expressions
//! (DataFusion and Spark expand each reference anew): the trace is scanned by a few grouped
//! aggregates, not joined with itself. Every per-scenario figure an invariant needs (skipped
//! rows, row counts, sums) is one column of ONE `GROUP BY run_id, scenario` over the trace
//! (`Query::fact`), and every `detail` field one column of a table built from the few
//! `run_start`, `observed` and `run_end` rows (`Query::note`); both meet in `scen`. An
//! invariant that compares rows per event, task or actor life first groups by that key and keeps
//! only the keys that can hold a violation; only their rows are joined or windowed (the orders
//! `aggregate-order` and `counter-exact` follow are windowed over the rows they compare, with a
//! running frame). The verdicts
//! of every invariant are columns of one row per scenario (`wide`), which a cross join with the
//! invariants' positions turns into one row per `(run_id, scenario, invariant)`. This module also
//! applies the verdict rule of [`crate::check::Outcome::judge`] and the lost-span rule of
//! `crate::check::lost_spans`; [`Dialect`] spells the few functions that differ.
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

/// The statement being built: its common table expressions, in order, and the columns of the
/// per-scenario tables `facts` and `notes`.
pub(crate) struct Query {
    /// The dialect.
    pub d: Dialect,
    ctes: Vec<(String, String)>,
    /// What the statement reads: the table `trace` or a path.
    source: String,
    /// `facts` columns: aggregate expressions over `base`, grouped by scenario.
    facts: Vec<String>,
    /// `notes` columns: the kind, whether its last row (else its first), and the expression.
    notes: Vec<(Kind, bool, String)>,
}

/// What one invariant's file adds.
pub(crate) struct Part {
    /// One row per violation: `run_id, scenario, vat`.
    pub violations: String,
    /// Witness rows: `run_id, scenario, vat, wseq`; for the lost-span rule, a violation's own
    /// row (`wseq = vat`) is among them.
    pub witness: String,
    /// How many violations a scenario has, as an expression over `s` (a row of `scen`) and
    /// `extra`; `None`: the rows of `violations`.
    pub count: Option<String>,
    /// Tables of `(run_id, scenario, ...)` the expressions read, joined by their own names.
    pub extra: Vec<String>,
    /// The reason of a scenario without violations that is not a pass (skipped rows), or null.
    pub reason: Option<String>,
    /// Verdicts decided before counting violations: the first condition that holds gives the
    /// verdict and its reason.
    pub early: Vec<(String, &'static str, String)>,
}

impl Part {
    /// A part whose verdict rests on its violations and, when given, skipped rows.
    pub fn new(violations: String, witness: String, reason: Option<String>) -> Part {
        Part {
            violations,
            witness,
            count: None,
            extra: Vec::new(),
            reason,
            early: Vec::new(),
        }
    }
}

/// Placeholders in `ctes` filled by [`Query::finish`], once every column is known.
const LATE: [&str; 4] = ["facts", "det", "notes", "scen"];

impl Query {
    /// Adds `name AS (sql)` and returns `name`.
    pub fn cte(&mut self, name: &str, sql: impl Into<String>) -> String {
        self.ctes.push((name.to_string(), sql.into()));
        name.to_string()
    }

    /// A column of `scen` holding the aggregate `agg` over a scenario's rows of `base` (one
    /// `GROUP BY` computes all of them); returns `s.<column>`.
    pub fn fact(&mut self, agg: &str) -> String {
        let i = match self.facts.iter().position(|f| f == agg) {
            Some(i) => i,
            None => {
                self.facts.push(agg.to_string());
                self.facts.len() - 1
            }
        };
        format!("s.f{i}")
    }

    /// The number of a scenario's rows matching `cond`, as a column of `scen`.
    pub fn count_where(&mut self, cond: &str) -> String {
        self.fact(&format!("sum(CASE WHEN {cond} THEN 1 ELSE 0 END)"))
    }

    /// A column of `scen` holding `expr` (over the contract's columns, `detail` among them) on
    /// the scenario's last row of `kind` (its first when `last` is false); null without one.
    pub fn note(&mut self, kind: Kind, last: bool, expr: &str) -> String {
        let key = (kind, last, expr.to_string());
        let i = match self.notes.iter().position(|n| *n == key) {
            Some(i) => i,
            None => {
                self.notes.push(key);
                self.notes.len() - 1
            }
        };
        format!("s.n{i}")
    }

    /// An expression over `s` (a row of `scen`): the reason naming the first `(kind, column)`
    /// with skipped rows, in the contract's kind order, then by column name, as
    /// `crate::check::Skips` does (null when none). A row is counted under the first of its
    /// kind's fields it lacks.
    pub fn skips(&mut self, uses: &[(Kind, &[Field])]) -> String {
        let t = self.d.text();
        let mut counted: Vec<(usize, &str, Kind, String)> = Vec::new();
        for (kind, fields) in uses {
            for (i, f) in fields.iter().enumerate() {
                let present: String = fields[..i]
                    .iter()
                    .map(|g| format!(" AND {} IS NOT NULL", g.column()))
                    .collect();
                let n = self.count_where(&format!(
                    "kind = '{k}'{present} AND {c} IS NULL",
                    k = kind.as_str(),
                    c = f.column()
                ));
                counted.push((rank(*kind), f.column(), *kind, n));
            }
        }
        counted.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let whens: String = counted
            .iter()
            .map(|(_, col, kind, n)| {
                format!(
                    " WHEN {n} > 0 THEN CAST({n} AS {t}) || ' {k} row(s) lack {col} and could not be used'",
                    k = kind.as_str()
                )
            })
            .collect();
        format!("(CASE{whens} END)")
    }

    /// Keys (`key`, a column of `rows`) whose rows in `rows` (a table with `run_id, scenario,
    /// seq`) number more than one and satisfy `having`, each a violation at its second row:
    /// adds `{name}_g`, `{name}_v (run_id, scenario, k, vat)` and `{name}_w` (every row of the
    /// key) and returns the last two.
    pub fn repeats(
        &mut self,
        name: &str,
        rows: &str,
        key: &str,
        having: Option<&str>,
    ) -> (String, String) {
        let having = having.map(|h| format!(" AND ({h})")).unwrap_or_default();
        let g = self.cte(
            &format!("{name}_g"),
            format!(
                "SELECT run_id, scenario, {key} AS k, min(seq) AS s1 FROM {rows} \
                 WHERE {key} IS NOT NULL GROUP BY run_id, scenario, {key} HAVING count(*) > 1{having}"
            ),
        );
        let on = format!("r.run_id = g.run_id AND r.scenario = g.scenario AND r.{key} = g.k");
        let v = self.cte(
            &format!("{name}_v"),
            format!(
                "SELECT g.run_id, g.scenario, g.k, min(r.seq) AS vat FROM {g} g JOIN {rows} r \
                 ON {on} AND r.seq > g.s1 GROUP BY g.run_id, g.scenario, g.k"
            ),
        );
        let w = self.cte(
            &format!("{name}_w"),
            format!(
                "SELECT g.run_id, g.scenario, g.vat, r.seq AS wseq FROM {v} g JOIN {rows} r ON {on}"
            ),
        );
        (v, w)
    }

    /// `{name} (run_id, scenario, n)`: the number of rows of `table` per scenario.
    pub fn counts(&mut self, name: &str, table: &str) -> String {
        self.cte(
            name,
            format!(
                "SELECT run_id, scenario, count(*) AS n FROM {table} GROUP BY run_id, scenario"
            ),
        )
    }

    /// `{name} (run_id, scenario, vat, wseq)`: for each row of `violations`, one witness row
    /// per column of `seqs` that is not null (a cross join, so `violations` is read once).
    pub fn witness(&mut self, name: &str, violations: &str, seqs: &[&str]) -> String {
        let whens: String = seqs
            .iter()
            .enumerate()
            .map(|(i, c)| format!(" WHEN {i} THEN v.{c}"))
            .collect();
        self.cte(
            name,
            format!(
                "SELECT run_id, scenario, vat, wseq FROM (SELECT v.run_id, v.scenario, v.vat, \
                 CASE i.k{whens} END AS wseq FROM {violations} v CROSS JOIN ({}) i) x \
                 WHERE wseq IS NOT NULL",
                positions("k", seqs.len())
            ),
        )
    }

    /// The text of the statement: the common table expressions, then `select`.
    fn finish(&self, select: &str) -> String {
        let late = self.late();
        let ctes: Vec<(&str, &str)> = self
            .ctes
            .iter()
            .filter_map(|(name, sql)| match LATE.iter().position(|l| l == name) {
                Some(i) => late[i].as_deref().map(|s| (name.as_str(), s)),
                None => Some((name.as_str(), sql.as_str())),
            })
            .collect();
        let mut out = String::from("WITH\n");
        for (i, (name, sql)) in ctes.iter().enumerate() {
            let sep = if i + 1 == ctes.len() { "" } else { "," };
            // Every consumer of `base` reads a few of its columns and rows: a scan each is
            // cheaper than holding the whole trace.
            let inline = if *name == "base" { self.d.inline() } else { "" };
            out.push_str(&format!("{name} AS {inline}(\n  {sql}\n){sep}\n"));
        }
        out.push_str(select);
        out
    }

    /// The texts of `facts`, `det`, `notes` and `scen` (`det` and `notes` only when a note is
    /// asked for).
    fn late(&self) -> [Option<String>; 4] {
        let facts: String = self
            .facts
            .iter()
            .enumerate()
            .map(|(i, f)| format!(", {f} AS f{i}"))
            .collect();
        let facts = format!("SELECT run_id, scenario{facts} FROM base GROUP BY run_id, scenario");
        let fcols: String = (0..self.facts.len()).map(|i| format!(", f.f{i}")).collect();
        if self.notes.is_empty() {
            return [
                Some(facts),
                None,
                None,
                Some(format!("SELECT f.run_id, f.scenario{fcols} FROM facts f")),
            ];
        }
        let mut kinds: Vec<String> = self
            .notes
            .iter()
            .map(|(k, _, _)| format!("'{}'", k.as_str()))
            .collect();
        kinds.sort();
        kinds.dedup();
        let exprs: String = self
            .notes
            .iter()
            .enumerate()
            .map(|(i, (_, _, e))| format!(", {e} AS n{i}"))
            .collect();
        let det = format!(
            "SELECT run_id, scenario, kind{exprs}, \
             row_number() OVER (PARTITION BY run_id, scenario, kind ORDER BY seq) AS rf, \
             row_number() OVER (PARTITION BY run_id, scenario, kind ORDER BY seq DESC) AS rl \
             FROM {} WHERE kind IN ({})",
            self.source,
            kinds.join(", ")
        );
        let picks: String = self
            .notes
            .iter()
            .enumerate()
            .map(|(i, (k, last, _))| {
                format!(
                    ", max(CASE WHEN kind = '{k}' AND {r} = 1 THEN n{i} END) AS n{i}",
                    k = k.as_str(),
                    r = if *last { "rl" } else { "rf" }
                )
            })
            .collect();
        let notes = format!("SELECT run_id, scenario{picks} FROM det GROUP BY run_id, scenario");
        let ncols: String = (0..self.notes.len()).map(|i| format!(", n.n{i}")).collect();
        let scen = format!(
            "SELECT f.run_id, f.scenario{fcols}{ncols} FROM facts f LEFT JOIN notes n \
             ON n.run_id = f.run_id AND n.scenario = f.scenario"
        );
        [Some(facts), Some(det), Some(notes), Some(scen)]
    }
}

/// A table of one column `name` holding 0 to `n - 1`.
fn positions(name: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("SELECT {i} AS {name}"))
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
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

/// The contract's columns the checks compare (`detail` is read by `det` alone).
const COLUMNS: &str = "run_id, scenario, seq, actor, incarnation, kind, task_id, event_id, \
                       aggregate_id, aggregate_seq, broker_seq, store_rev, amount, counter";

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

/// The shared tables, every invariant's tables, and `verdicts` (`run_id, scenario, pos,
/// invariant, verdict, violations, reason`, `pos` the invariant's place in the contract's
/// order); returns the query and the invariants in order.
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
        source: source.clone(),
        facts: Vec::new(),
        notes: Vec::new(),
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
    for late in LATE {
        q.cte(late, String::new());
    }
    // Lives without their own crash row while a later life of the actor exists.
    q.cte(
        "lives",
        "SELECT run_id, scenario, actor, incarnation, min(seq) AS first_seq, \
         max(CASE WHEN kind = 'crash' THEN 1 ELSE 0 END) AS crashed \
         FROM base GROUP BY run_id, scenario, actor, incarnation",
    );
    q.cte(
        "lossy",
        "SELECT run_id, scenario, actor, incarnation, first_seq FROM (SELECT run_id, scenario, \
         actor, incarnation, crashed, \
         max(incarnation) OVER (PARTITION BY run_id, scenario, actor) AS last_life, \
         min(first_seq) OVER (PARTITION BY run_id, scenario, actor) AS first_seq FROM lives) l \
         WHERE crashed = 0 AND last_life > incarnation",
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
    let mut cols = Vec::new();
    let mut joins = String::new();
    let mut finals = Vec::new();
    let mut witnessed = Vec::new();
    for &inv in &invariants {
        let p = prefix(inv);
        let parts = part(inv, &mut q);
        let (c, j, f) = verdict(&mut q, inv, p, &parts);
        cols.push(c);
        joins.push_str(&j);
        finals.push(f);
        if parts.count.is_none() && lost_spans(inv) == LostSpans::Touched {
            witnessed.push((p, parts.witness));
        }
    }
    if !witnessed.is_empty() {
        touched(&mut q, &witnessed);
        joins.push_str(
            " LEFT JOIN touched ON touched.run_id = s.run_id AND touched.scenario = s.scenario",
        );
    }
    if invariants.iter().any(|i| lost_spans(*i) == LostSpans::Any) {
        joins.push_str(
            " LEFT JOIN lossy_first lf ON lf.run_id = s.run_id AND lf.scenario = s.scenario",
        );
    }
    q.cte(
        "wide",
        format!(
            "SELECT s.run_id, s.scenario, {} FROM scen s{joins}",
            cols.join(", ")
        ),
    );
    let case = |pick: &dyn Fn(&(String, String, String)) -> &String| {
        let whens: String = finals
            .iter()
            .enumerate()
            .map(|(i, f)| format!(" WHEN {i} THEN {}", pick(f)))
            .collect();
        format!("CASE i.pos{whens} END")
    };
    let ids: String = invariants
        .iter()
        .enumerate()
        .map(|(i, inv)| format!(" WHEN {i} THEN '{}'", inv.id()))
        .collect();
    q.cte(
        "verdicts",
        format!(
            "SELECT w.run_id, w.scenario, i.pos, CASE i.pos{ids} END AS invariant, \
             {} AS verdict, {} AS violations, {} AS reason FROM wide w CROSS JOIN ({}) i",
            case(&|f| &f.0),
            case(&|f| &f.1),
            case(&|f| &f.2),
            positions("pos", invariants.len())
        ),
    );
    Ok((q, invariants))
}

/// One invariant's verdict: the columns it adds to `wide`, the joins they need, and its final
/// verdict, count and reason over a row of `wide` (alias `w`): the native verdict rule, then
/// the lost-span rule.
fn verdict(
    q: &mut Query,
    inv: Invariant,
    p: &str,
    part: &Part,
) -> (String, String, (String, String, String)) {
    let t = q.d.text();
    let on = |a: &str| format!(" ON {a}.run_id = s.run_id AND {a}.scenario = s.scenario");
    let mut joins = String::new();
    for x in &part.extra {
        joins.push_str(&format!(" LEFT JOIN {x}{}", on(x)));
    }
    let lost = lost_spans(inv);
    let count = match (&part.count, lost) {
        (Some(expr), _) => expr.clone(),
        (None, LostSpans::Touched) => format!("coalesce(touched.{p}_total, 0)"),
        (None, _) => {
            let n = q.counts(&format!("{p}_n"), &part.violations);
            joins.push_str(&format!(" LEFT JOIN {n}{}", on(&n)));
            format!("coalesce({n}.n, 0)")
        }
    };
    let reason = part
        .reason
        .clone()
        .unwrap_or_else(|| format!("CAST(NULL AS {t})"));
    let early = |f: &dyn Fn(&(String, &'static str, String)) -> String| -> String {
        part.early
            .iter()
            .map(|e| format!(" WHEN {} THEN {}", e.0, f(e)))
            .collect()
    };
    let mut cols = vec![
        format!(
            "CASE{} WHEN {count} > 0 THEN 'fail' WHEN {reason} IS NOT NULL THEN 'unknown' \
             ELSE 'pass' END AS {p}_verdict",
            early(&|e| format!("'{}'", e.1))
        ),
        format!("{} AS {p}_n", or_else(early(&|_| "0".to_string()), &count)),
        format!(
            "{} AS {p}_reason",
            or_else(early(&|e| e.2.clone()), &reason)
        ),
    ];
    let (v, n, r) = (
        format!("w.{p}_verdict"),
        format!("w.{p}_n"),
        format!("w.{p}_reason"),
    );
    let d = q.d;
    let because = |actor: &str, inc: &str| {
        let inc = d.to_text(inc);
        format!(
            "{actor} || '#' || {inc} || ' ends without a crash row before a later life of ' || \
             {actor} || ': spans it never exported could remove the violation'"
        )
    };
    let out = match lost {
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
    (cols.join(", "), joins, out)
}

/// `CASE{whens} ELSE {otherwise} END`, or `otherwise` without cases.
fn or_else(whens: String, otherwise: &str) -> String {
    if whens.is_empty() {
        otherwise.to_string()
    } else {
        format!("CASE{whens} ELSE {otherwise} END")
    }
}

/// For the lost-span rule, `touched`: per scenario with violations of the invariants
/// `witnessed` (their prefixes and witness tables), for each invariant `p`: how many violations
/// there are (`{p}_total`), how many no witness row of a lossy life touches (in all,
/// `{p}_untouched`, and among the first [`EXAMPLES`], `{p}_kept`), and the life touched by the
/// first touched violation (`{p}_actor`, `{p}_inc`: the life of its first witness row by `seq`
/// in a lossy life). One table for all, so the rows of lossy lives are read once; each
/// violation has its own row among its witness rows, so the violation tables are not read
/// again.
fn touched(q: &mut Query, witnessed: &[(&str, String)]) {
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

/// The statement deciding the invariants: one row per `(run_id, scenario, invariant)`.
pub fn statement(req: &Request) -> Result<String, DialectError> {
    let (q, _) = build(req)?;
    Ok(q.finish(
        "SELECT run_id, scenario, invariant, verdict, CAST(violations AS BIGINT) AS violations, reason\n\
         FROM verdicts\nORDER BY run_id, scenario, pos\n",
    ))
}

/// The statement listing up to `n` witness rows per failing invariant: `run_id`, `scenario`,
/// `invariant`, then the row's `seq`, `actor`, `incarnation`, `kind`, `task_id`, `event_id`,
/// `store_rev`, `broker_seq`, in order of the violation they show, then `seq`.
pub fn witnesses(req: &Request, n: usize) -> Result<String, DialectError> {
    let (mut q, invariants) = build(req)?;
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
        "SELECT w.run_id, w.scenario, w.invariant, v.pos, w.wseq, w.vat, \
         row_number() OVER (PARTITION BY w.run_id, w.scenario, w.invariant ORDER BY w.vat, w.wseq) AS rn \
         FROM witness_rows w JOIN verdicts v ON v.run_id = w.run_id AND v.scenario = w.scenario \
         AND v.invariant = w.invariant WHERE v.verdict = 'fail'",
    );
    Ok(q.finish(&format!(
        "SELECT w.run_id, w.scenario, w.invariant, b.seq, b.actor, b.incarnation, b.kind, \
         b.task_id, b.event_id, b.store_rev, b.broker_seq\n\
         FROM witness_ranked w JOIN base b ON b.run_id = w.run_id AND b.scenario = w.scenario \
         AND b.seq = w.wseq\nWHERE w.rn <= {n}\n\
         ORDER BY w.run_id, w.scenario, w.pos, w.rn\n"
    )))
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
