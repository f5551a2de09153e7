//! The whole statement: every asked invariant's [`Part`] joined into one row of verdicts per
//! scenario, with the verdict rule of [`crate::check::Outcome::judge`] and the lost-span rule of
//! `crate::check::lost_spans` applied ([`statement`]), or the witness rows of the violations
//! ([`witnesses`]).

use outbox_trace::Kind;

use super::dialect::DialectError;
use super::query::{positions, Part, Query, LATE};
use super::{
    ack_after_commit, aggregate_order, counter_exact, coverage, evidence, external_single_effect,
    intent_atomic, lost_rows, lost_spans, mark_after_puback, no_lost_task, observed_agrees,
    single_effect, sources_agree, Dialect,
};
use crate::check::{Invariant, LostSpans};

/// `part`, from the `files` column of the invariant table.
macro_rules! parts {
    ($($variant:ident $files:ident)+) => {
        /// An invariant's [`Part`] (its own file), its tables named with its prefix.
        fn part(inv: Invariant, q: &mut Query) -> Part {
            let p = inv.sql_prefix();
            match inv {
                $(Invariant::$variant => $files::part(q, p),)+
            }
        }
    };
}

crate::check::invariant::invariants!(files parts);

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
    /// Whether to read `counter_key` and check each counter on its own.
    pub counter_key: bool,
    /// Whether to read `partition` and take a copy's position within its partition.
    pub partition: bool,
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
        counter_key: req.counter_key,
        partition: req.partition,
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
    let key = if req.counter_key { ", counter_key" } else { "" };
    let partition = partition_column(req);
    q.cte(
        "base",
        format!(
            "SELECT {COLUMNS}{key}{partition} FROM {source} WHERE kind IN ({})",
            kinds.join(", ")
        ),
    );
    for late in LATE {
        q.cte(late, String::new());
    }
    lost_spans::lives(&mut q, &source);
    let (tried, mut joins) = coverage::columns(&mut q);
    let mut cols = vec![lost_rows::columns(&mut q), tried];
    let mut finals = Vec::new();
    let mut witnessed = Vec::new();
    let both_sources = sources_agree::reads_wire(&mut q);
    for &inv in &invariants {
        let p = inv.sql_prefix();
        let mut parts = part(inv, &mut q);
        if inv != Invariant::SourcesAgree {
            // Where spans and wire both speak, the statement cannot tell their rows apart.
            let why = sources_agree::BOTH_SOURCES.to_string();
            parts
                .early
                .insert(0, (both_sources.clone(), "unknown", why));
        }
        if !inv.judges().is_empty() {
            // Zero rows are no evidence where work happened (`crate::check::evidence`): first.
            let works = q.works();
            parts.early.insert(0, q.lacks(Some(&works), inv.judges()));
        }
        let (c, j, f) = verdict(&mut q, inv, p, &parts);
        cols.push(c);
        cols.push(q.evidence_columns(inv));
        joins.push_str(&j);
        finals.push(f);
        if parts.count.is_none() && inv.lost_spans() == LostSpans::Touched {
            witnessed.push((p, parts.witness));
        }
    }
    if !witnessed.is_empty() {
        lost_spans::touched(&mut q, &witnessed);
        joins.push_str(
            " LEFT JOIN touched ON touched.run_id = s.run_id AND touched.scenario = s.scenario",
        );
    }
    joins.push_str(
        " LEFT JOIN lossy_first lf ON lf.run_id = s.run_id AND lf.scenario = s.scenario \
         LEFT JOIN lossy_n ln ON ln.run_id = s.run_id AND ln.scenario = s.scenario",
    );
    q.cte(
        "wide",
        format!(
            "SELECT s.run_id, s.scenario, {} FROM scen s{joins}",
            cols.join(", ")
        ),
    );
    verdicts(&mut q, &invariants, &finals);
    Ok((q, invariants))
}

/// `, partition` (quoted) where the statement reads it, else nothing.
fn partition_column(req: &Request) -> String {
    if req.partition {
        format!(", {}", req.dialect.quote("partition"))
    } else {
        String::new()
    }
}

/// `settled` (one row per scenario: each invariant's verdict, count and reason after the
/// lost-span and lost-rows rules, and the columns the evidence rule reads) and `verdicts`: the
/// evidence rule (`crate::check::evidence::apply`) applied, one row per invariant, with the
/// scenario's verdict (`crate::check::ScenarioReport`: the worst, and `unknown` rather than
/// valid where a named fault never fired).
fn verdicts(q: &mut Query, invariants: &[Invariant], finals: &[Settled]) {
    let cols: Vec<String> = invariants
        .iter()
        .zip(finals)
        .map(|(inv, f)| {
            let p = inv.sql_prefix();
            format!(
                "{} AS {p}_v0, {} AS {p}_n0, {} AS {p}_r0, CASE WHEN {} THEN 1 ELSE 0 END AS {p}_l0, \
                 w.{p}_refused, w.{p}_doubt",
                f.v, f.n, f.r, f.lost
            )
        })
        .collect();
    q.cte(
        "settled",
        format!(
            "SELECT w.run_id, w.scenario, w.unfired, {} FROM wide w",
            cols.join(", ")
        ),
    );
    let last: Vec<(String, String, String)> = invariants
        .iter()
        .map(|inv| {
            let p = inv.sql_prefix();
            let (v, n, r) = (
                format!("w.{p}_v0"),
                format!("w.{p}_n0"),
                format!("w.{p}_r0"),
            );
            evidence::settle(*inv, (&v, &n, &r), &format!("w.{p}_l0 = 1"))
        })
        .collect();
    let case = |pick: &dyn Fn(&(String, String, String)) -> &String| {
        let whens: String = last
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
        "judged",
        format!(
            "SELECT w.run_id, w.scenario, w.unfired, i.pos, CASE i.pos{ids} END AS invariant, \
             {} AS verdict, {} AS violations, {} AS reason FROM settled w CROSS JOIN ({}) i",
            case(&|f| &f.0),
            case(&|f| &f.1),
            case(&|f| &f.2),
            positions("pos", invariants.len())
        ),
    );
    let worst = "max(CASE verdict WHEN 'fail' THEN 2 WHEN 'unknown' THEN 1 ELSE 0 END) \
                 OVER (PARTITION BY run_id, scenario)";
    q.cte(
        "verdicts",
        format!(
            "SELECT run_id, scenario, pos, invariant, verdict, violations, reason, \
             CASE WHEN {worst} = 2 THEN 'invalid' WHEN {worst} = 1 OR unfired > 0 THEN 'unknown' \
             ELSE 'valid' END AS scenario_verdict, unfired AS unfired_named FROM judged"
        ),
    );
}

/// One invariant's verdict: the columns it adds to `wide`, the joins they need, and its final
/// verdict, count and reason over a row of `wide` (alias `w`): the native verdict rule, then
/// the lost-span rule.
fn verdict(q: &mut Query, inv: Invariant, p: &str, part: &Part) -> (String, String, Settled) {
    let t = q.d.text();
    let on = |a: &str| format!(" ON {a}.run_id = s.run_id AND {a}.scenario = s.scenario");
    let mut joins = String::new();
    for x in &part.extra {
        joins.push_str(&format!(" LEFT JOIN {x}{}", on(x)));
    }
    let lost = inv.lost_spans();
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
    let (out, short) = lost_spans::apply(q, inv, part, (v, n, r), &mut cols);
    let (out, gone) = lost_rows::apply(inv, out);
    let settled = Settled {
        v: out.0,
        n: out.1,
        r: out.2,
        lost: format!("({short}) OR ({gone})"),
    };
    (cols.join(", "), joins, settled)
}

/// An invariant's verdict, count and reason over a row of `wide` (alias `w`) once the
/// lost-span and lost-rows rules are applied, and when those rules made it unknown (rows seem
/// lost against the store).
struct Settled {
    v: String,
    n: String,
    r: String,
    lost: String,
}

/// `CASE{whens} ELSE {otherwise} END`, or `otherwise` without cases.
fn or_else(whens: String, otherwise: &str) -> String {
    if whens.is_empty() {
        otherwise.to_string()
    } else {
        format!("CASE{whens} ELSE {otherwise} END")
    }
}

/// The statement deciding the invariants: one row per `(run_id, scenario, invariant)`.
pub fn statement(req: &Request) -> Result<String, DialectError> {
    let (q, _) = build(req)?;
    Ok(q.finish(
        "SELECT run_id, scenario, invariant, verdict, CAST(violations AS BIGINT) AS violations, reason, \
         scenario_verdict, CAST(unfired_named AS BIGINT) AS unfired_named\n\
         FROM verdicts\nORDER BY run_id, scenario, pos\n",
    ))
}

/// The statement listing up to `n` witness rows per failing invariant: `run_id`, `scenario`,
/// `invariant`, then the row's `seq`, `actor`, `incarnation`, `kind`, `task_id`, `event_id`,
/// `store_rev`, `broker_seq` (and `partition` where the statement reads it), in order of the
/// violation they show, then `seq`.
pub fn witnesses(req: &Request, n: usize) -> Result<String, DialectError> {
    let (mut q, invariants) = build(req)?;
    let rows: Vec<String> = invariants
        .iter()
        .map(|inv| {
            let p = inv.sql_prefix();
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
    let partition = match req.partition {
        true => format!(", b.{}", req.dialect.quote("partition")),
        false => String::new(),
    };
    Ok(q.finish(&format!(
        "SELECT w.run_id, w.scenario, w.invariant, b.seq, b.actor, b.incarnation, b.kind, \
         b.task_id, b.event_id, b.store_rev, b.broker_seq{partition}\n\
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
            counter_key: false,
            partition: false,
        };
        assert!(matches!(
            statement(&req),
            Err(DialectError::NoPathInSelect(_))
        ));
    }
}
