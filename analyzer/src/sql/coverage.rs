//! What a scenario tried, in SQL (see `crate::check::coverage`): the entries of the last
//! `run_end` row's `detail.faults` that never fired (`fired: 0`) and that the first `run_start`
//! row names in `detail.faults`. Each leaves the scenario `unknown` rather than valid; the
//! invariants' verdicts are untouched.
//!
//! Both lists are read as text: the entries of `run_end.detail.faults` are split at the commas
//! between objects, and an entry's `spec` is named when the `run_start` list holds it as a
//! string (both as the producer escaped them).

use outbox_trace::{detail_key, Kind};

use super::dialect::WS;
use super::query::Query;

/// Splits the entries of a fault list (no regular-expression character in it).
const BETWEEN: &str = "<#>";

/// The column of `wide` counting the scenario's named faults that never fired (`unfired`), and
/// the join it needs.
pub(super) fn columns(q: &mut Query) -> (String, String) {
    let d = q.d;
    let list = |key: &str| format!("\"{key}\"{WS}:{WS}\\[([^\\[\\]]*)\\]");
    let tried = q.note(
        Kind::RunEnd,
        true,
        &d.regex_group("detail", &list(detail_key!(RunEnd.faults).as_str())),
    );
    let named = q.note(
        Kind::RunStart,
        false,
        &d.regex_group("detail", &list(detail_key!(RunStart.faults).as_str())),
    );
    let marked = d.replace_all(
        &tried,
        &format!("[}}]{WS},{WS}[{{]"),
        &format!("}}{BETWEEN}{{"),
    );
    let entries = q.cte(
        "cov_entries",
        format!(
            "SELECT run_id, scenario, named, {} AS entry FROM (SELECT s.run_id, s.scenario, \
             {named} AS named, {marked} AS tried FROM scen s WHERE {tried} IS NOT NULL \
             AND {named} IS NOT NULL) x",
            d.split_rows("tried", BETWEEN)
        ),
    );
    let fired = format!(
        "TRY_CAST({} AS BIGINT)",
        d.regex_group(
            "entry",
            &format!("\"{}\"{WS}:{WS}([0-9]+)", detail_key!(FaultTried.fired))
        )
    );
    let spec = d.regex_group(
        "entry",
        &format!(
            "\"{}\"{WS}:{WS}\"((?:[^\"\\\\]|\\\\.)*)\"",
            detail_key!(FaultTried.spec)
        ),
    );
    let unfired = q.cte(
        "cov_unfired",
        format!(
            "SELECT run_id, scenario, count(*) AS n FROM {entries} \
             WHERE {fired} = 0 AND {spec} IS NOT NULL AND instr(named, '\"' || {spec} || '\"') > 0 \
             GROUP BY run_id, scenario"
        ),
    );
    (
        format!("coalesce({unfired}.n, 0) AS unfired"),
        format!(
            " LEFT JOIN {unfired} ON {unfired}.run_id = s.run_id AND {unfired}.scenario = s.scenario"
        ),
    )
}
