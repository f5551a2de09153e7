//! The statement under construction ([`Query`]) and what one invariant's file adds to it
//! ([`Part`]): the common table expressions in order, and the per-scenario `facts` (one `GROUP BY`)
//! and `notes` (from the few `run_start`, `observed` and `run_end` rows) every invariant shares.

use outbox_trace::{detail_key, Field, Kind};

use super::dialect::Dialect;

/// How many violations the native checker keeps as examples (see `crate::check::EXAMPLES`):
/// the lost-span rule looks at those only.
pub(super) const EXAMPLES: usize = crate::check::EXAMPLES;

/// The statement being built: its common table expressions, in order, and the columns of the
/// per-scenario tables `facts` and `notes`.
pub(crate) struct Query {
    /// The dialect.
    pub d: Dialect,
    /// Whether `base` has `counter_key` (`analyzer sql --counter-key`).
    pub counter_key: bool,
    /// Whether `base` has `partition` (`analyzer sql --partition`).
    pub partition: bool,
    pub(super) ctes: Vec<(String, String)>,
    /// What the statement reads: the table `trace` or a path.
    pub(super) source: String,
    /// `facts` columns: aggregate expressions over `base`, grouped by scenario.
    pub(super) facts: Vec<String>,
    /// `notes` columns: the kind, which of its rows, and the expression.
    pub(super) notes: Vec<(Kind, Pick, String)>,
}

impl Query {
    /// The columns of `base` that name a copy in the broker: `broker_seq`, within its
    /// `partition` where `base` has it (equal offsets in two partitions are two copies).
    pub(crate) fn copy(&self) -> String {
        if self.partition {
            format!("{}, broker_seq", self.d.quote("partition"))
        } else {
            "broker_seq".to_string()
        }
    }
}

/// Which rows of a kind a note reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The scenario's first row of the kind.
    First,
    /// Its last row.
    Last,
    /// The sum over all its rows.
    Sum,
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
    /// For the lost-rows rule (`crate::check::lost_rows`): how many violations a row missing
    /// from the trace explains, and the start of the reason naming the first of them.
    pub lost: Option<(String, String)>,
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
            lost: None,
        }
    }
}

/// Placeholders in `ctes` filled by [`Query::finish`], once every column is known.
pub(super) const LATE: [&str; 4] = ["facts", "det", "notes", "scen"];

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
        let pick = if last { Pick::Last } else { Pick::First };
        self.pick(kind, pick, expr)
    }

    /// A column of `scen` holding `expr` over the scenario's rows of `kind` picked by `pick`
    /// (null without one).
    pub fn pick(&mut self, kind: Kind, pick: Pick, expr: &str) -> String {
        let key = (kind, pick, expr.to_string());
        let i = match self.notes.iter().position(|n| *n == key) {
            Some(i) => i,
            None => {
                self.notes.push(key);
                self.notes.len() - 1
            }
        };
        format!("s.n{i}")
    }

    /// An expression over `s` (a row of `scen`): whether the scenario has a row of any of
    /// `kinds`.
    pub fn any(&mut self, kinds: &[Kind]) -> String {
        let names: Vec<String> = kinds.iter().map(|k| format!("'{}'", k.as_str())).collect();
        let n = self.count_where(&format!("kind IN ({})", names.join(", ")));
        format!("{n} > 0")
    }

    /// An expression over `s` (a row of `scen`): whether the scenario shows work (see
    /// `crate::check::Ends::works`): accepted tasks, a delivery, or the last `observed` row's
    /// `tasks`, `tasks_done` or `results` (else `processed`) above zero.
    pub fn works(&mut self) -> String {
        let d = self.d;
        let rows = self.any(&[Kind::TaskAccepted, Kind::Delivered, Kind::Redelivered]);
        let mut field = |key| self.note(Kind::Observed, true, &d.json_int("detail", key));
        let tasks = field(detail_key!(Observed.tasks));
        let done = field(detail_key!(Observed.tasks_done));
        let results = field(detail_key!(Observed.results));
        let processed = field(detail_key!(Observed.processed));
        format!(
            "({rows} OR coalesce({tasks}, 0) > 0 OR coalesce({done}, 0) > 0 \
             OR coalesce({results}, {processed}, 0) > 0)"
        )
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
    pub(super) fn finish(&self, select: &str) -> String {
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
            .map(|(i, (k, pick, _))| {
                let k = k.as_str();
                match pick {
                    Pick::First => {
                        format!(", max(CASE WHEN kind = '{k}' AND rf = 1 THEN n{i} END) AS n{i}")
                    }
                    Pick::Last => {
                        format!(", max(CASE WHEN kind = '{k}' AND rl = 1 THEN n{i} END) AS n{i}")
                    }
                    Pick::Sum => format!(", sum(CASE WHEN kind = '{k}' THEN n{i} END) AS n{i}"),
                }
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
pub(super) fn positions(name: &str, n: usize) -> String {
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
