//! The contract's rules for evidence the producer knows it lacks, in SQL (see
//! `crate::check::evidence` and [`crate::check::Ends`]): what the last `run_end` row says was
//! refused (`detail.refused`, by kind, with `"(none)"` for spans that named no kind: refused
//! spans of every kind) or mapped to no kind (`detail.unmapped`), what `run_start.detail.records`
//! declares, and the reasons built from them.
//!
//! Every figure is a column of `scen` read from the few `run_start` and `run_end` rows
//! (`Query::note`); the reasons are `crate::explain::reason`'s words, cut at the values
//! ([`words`]). [`settle`] applies the rule's last step to a verdict: a pass that refused spans
//! could break, a failure they could remove, an unknown that rows lost against the store explain.

use outbox_trace::{detail_key, Kind};

use super::dialect::WS;
use super::query::{lit, Query};
use crate::check::{Invariant, LostRows, LostSpans, Reason};

/// The key `run_end.detail.refused` holds spans that named no kind under (refused spans of
/// every kind).
const NO_KIND: &str = "(none)";

/// Stands for a number in a reason's words.
const NUMBER: u64 = 918_273_645;

/// Stands for a text in a reason's words.
const TEXT: &str = "\u{1}text\u{1}";

/// A reason's words as an SQL text expression: `crate::explain::reason(reason)` with each
/// `(placeholder, expr)` of `holes` put in place of the placeholder's text.
pub(super) fn words(reason: &Reason, holes: &[(&str, String)]) -> String {
    let mut parts = vec![crate::explain::reason(reason)];
    let mut out = Vec::new();
    for (mark, expr) in holes {
        let last = parts.pop().unwrap_or_default();
        match last.split_once(mark) {
            Some((before, after)) => {
                parts.push(before.to_string());
                out.push((parts.join(""), Some(expr.clone())));
                parts = vec![after.to_string()];
            }
            None => parts.push(last),
        }
    }
    out.push((parts.join(""), None));
    let pieces: Vec<String> = out
        .into_iter()
        .flat_map(|(text, expr)| {
            let lit = format!("'{}'", text.replace('\'', "''"));
            std::iter::once(lit).chain(expr)
        })
        .collect();
    format!("({})", pieces.join(" || "))
}

/// The regular expression matching the JSON key `key` (no quote or backslash in it).
fn key_pattern(key: &str) -> String {
    let escaped: String = key
        .chars()
        .map(|c| match c {
            '(' | ')' | '.' | '*' | '+' | '?' | '[' | ']' | '|' | '^' | '$' => format!("[{c}]"),
            c => c.to_string(),
        })
        .collect();
    format!("\"{escaped}\"{WS}:{WS}")
}

impl Query {
    /// The text of the object under `run_end.detail.refused` (objects one level deep inside).
    fn refused_body(&self) -> String {
        let key = key_pattern(detail_key!(RunEnd.refused).as_str());
        self.d.regex_group(
            "detail",
            &format!("{key}[{{]((?:[^{{}}]|[{{][^{{}}]*[}}])*)[}}]"),
        )
    }

    /// The entry of `run_end.detail.refused` under `key`: its spans (null unless above zero),
    /// its missing columns as `a, b` and its reasons as `a; b`, as columns of `scen`.
    fn refused_entry(&mut self, key: &str) -> (String, String, String) {
        let d = self.d;
        let entry = d.regex_group(
            &self.refused_body(),
            &format!("{}[{{]([^{{}}]*)[}}]", key_pattern(key)),
        );
        let spans = format!(
            "TRY_CAST({} AS BIGINT)",
            d.regex_group(
                &entry,
                &format!(
                    "{}([0-9]+)",
                    key_pattern(detail_key!(Refused.spans).as_str())
                )
            )
        );
        let spans = self.note(
            Kind::RunEnd,
            true,
            &format!("CASE WHEN {spans} > 0 THEN {spans} END"),
        );
        let list = self.list_text(&entry, detail_key!(Refused.missing).as_str(), ", ");
        let reasons = self.list_text(&entry, detail_key!(Refused.reasons).as_str(), "; ");
        let missing = self.note(Kind::RunEnd, true, &list);
        (spans, missing, self.note(Kind::RunEnd, true, &reasons))
    }

    /// The strings of the list under `key` of the JSON object text `obj`, joined by `sep` (empty
    /// when the list is).
    fn list_text(&self, obj: &str, key: &str, sep: &str) -> String {
        let d = self.d;
        let body = d.regex_group(obj, &format!("{}\\[([^\\[\\]]*)\\]", key_pattern(key)));
        let joined = d.replace_all(&body, &format!("\"{WS},{WS}\""), sep);
        format!("coalesce(replace({joined}, '\"', ''), '')")
    }

    /// The refused spans of `kind` (its own entry, else the `"(none)"` one), as an expression
    /// over `s` (null when none), and the reason naming them.
    pub fn refused(&mut self, kind: Kind) -> (String, String) {
        let (own, own_missing, own_reasons) = self.refused_entry(kind.as_str());
        let (none, none_missing, none_reasons) = self.refused_entry(NO_KIND);
        let t = self.d.text();
        // The columns they lacked, else (none lacked, reasons given) the reasons.
        let reason = |kind: Option<Kind>, spans: &str, missing: &str, reasons: &str| {
            let said = |missing: Vec<String>, reasons: Vec<String>, list: &str| {
                let r = Reason::Refused {
                    kind,
                    spans: NUMBER,
                    missing,
                    reasons,
                };
                let spans = format!("CAST({spans} AS {t})");
                words(
                    &r,
                    &[(&NUMBER.to_string(), spans), (TEXT, list.to_string())],
                )
            };
            format!(
                "(CASE WHEN {missing} = '' AND {reasons} <> '' THEN {} ELSE {} END)",
                said(Vec::new(), vec![TEXT.to_string()], reasons),
                said(vec![TEXT.to_string()], Vec::new(), missing)
            )
        };
        (
            format!("coalesce({own}, {none})"),
            format!(
                "(CASE WHEN {own} IS NOT NULL THEN {} WHEN {none} IS NOT NULL THEN {} END)",
                reason(Some(kind), &own, &own_missing, &own_reasons),
                reason(None, &none, &none_missing, &none_reasons)
            ),
        )
    }

    /// The spans that mapped to no kind (null unless above zero) and their names as ` (a, b)`
    /// (empty without names), as expressions over `s`.
    fn unmapped(&mut self) -> (String, String) {
        let d = self.d;
        let key = key_pattern(detail_key!(RunEnd.unmapped).as_str());
        let obj = d.regex_group("detail", &format!("{key}[{{]([^{{}}]*)[}}]"));
        let spans = format!(
            "TRY_CAST({} AS BIGINT)",
            d.regex_group(
                &obj,
                &format!(
                    "{}([0-9]+)",
                    key_pattern(detail_key!(Unmapped.spans).as_str())
                )
            )
        );
        let spans = self.note(
            Kind::RunEnd,
            true,
            &format!("CASE WHEN {spans} > 0 THEN {spans} END"),
        );
        let names = self.list_text(&obj, detail_key!(Unmapped.names).as_str(), ", ");
        let names = self.note(Kind::RunEnd, true, &names);
        (
            spans,
            format!("(CASE WHEN {names} = '' THEN '' ELSE ' (' || {names} || ')' END)"),
        )
    }

    /// An expression over `s`: whether the producer declared that it reports `kind`
    /// (`crate::check::Ends::declared`): the first `run_start` lists it in `detail.records`, no
    /// span of it was refused, and it has rows or no span mapped to no kind.
    pub fn declared(&mut self, kind: Kind) -> String {
        let d = self.d;
        let has = d.json_list_has("detail", detail_key!(RunStart.records), kind.as_str());
        let listed = self.note(
            Kind::RunStart,
            false,
            &format!("CASE WHEN {has} THEN 1 ELSE 0 END"),
        );
        let (refused, _) = self.refused(kind);
        let (unmapped, _) = self.unmapped();
        let rows = self.any(&[kind]);
        format!(
            "(coalesce({listed}, 0) = 1 AND {refused} IS NULL AND ({rows} OR {unmapped} IS NULL))"
        )
    }

    /// Why rows of `kinds` may be missing, by the producer's own counts
    /// (`crate::check::Ends::doubt`), as an expression over `s` (null when nothing says so): the
    /// first of them with refused spans, else, where spans mapped to no kind, the kinds when one
    /// has no rows.
    pub fn doubt(&mut self, kinds: &'static [Kind]) -> String {
        let t = self.d.text();
        let mut whens = String::new();
        for &k in kinds {
            let (spans, reason) = self.refused(k);
            whens.push_str(&format!(" WHEN {spans} IS NOT NULL THEN {reason}"));
        }
        let (spans, names) = self.unmapped();
        let empty: Vec<String> = kinds
            .iter()
            .map(|&k| {
                let any = self.any(&[k]);
                format!("NOT ({any})")
            })
            .collect();
        let r = Reason::Unmapped {
            kinds,
            spans: NUMBER,
            names: vec![TEXT.to_string()],
        };
        let reason = words(
            &r,
            &[
                (&NUMBER.to_string(), format!("CAST({spans} AS {t})")),
                (&format!(" ({TEXT})"), names),
            ],
        );
        format!(
            "(CASE{whens} WHEN {spans} IS NOT NULL AND ({}) THEN {reason} END)",
            empty.join(" OR ")
        )
    }

    /// The early verdict `unknown` of `crate::check::Ends::lacks`, when `when` (an expression
    /// over `s`, or none) holds and the scenario has no row of any of `kinds` and declares none
    /// of them: the producer's reason ([`Query::doubt`]), else `the trace records no <kinds>
    /// rows`.
    pub fn lacks(
        &mut self,
        when: Option<&str>,
        kinds: &'static [Kind],
    ) -> (String, &'static str, String) {
        let silent: Vec<String> = kinds
            .iter()
            .map(|&k| {
                let none = self.any(&[k]);
                let declared = self.declared(k);
                format!("NOT ({none}) AND NOT {declared}")
            })
            .collect();
        let mut cond = silent.join(" AND ");
        if let Some(w) = when {
            cond = format!("({w}) AND {cond}");
        }
        let doubt = self.doubt(kinds);
        let reason = format!(
            "coalesce({doubt}, {})",
            super::query::lit(&Reason::NoRows(kinds))
        );
        (cond, "unknown", reason)
    }

    /// The columns of `wide` the last step of the rule reads for `inv` (over `s`): the reason
    /// naming the first kind its rule reads with refused spans (`{p}_refused`), and the
    /// producer's reason for rows of them missing (`{p}_doubt`).
    pub(super) fn evidence_columns(&mut self, inv: Invariant) -> String {
        let p = inv.sql_prefix();
        let reads = inv.rule().kinds();
        let t = self.d.text();
        let whens: String = reads
            .iter()
            .map(|&k| {
                let (spans, reason) = self.refused(k);
                format!(" WHEN {spans} IS NOT NULL THEN {reason}")
            })
            .collect();
        let doubt = self.doubt(reads);
        format!("CAST(CASE{whens} END AS {t}) AS {p}_refused, CAST({doubt} AS {t}) AS {p}_doubt")
    }
}

/// The last step of the rule (`crate::check::evidence::apply`) on `inv`'s verdict, count and
/// reason `(v, n, r)` over a row `w` holding [`Query::evidence_columns`]; `lost` says the
/// verdict is unknown because rows seem lost against the store.
pub(super) fn settle(
    inv: Invariant,
    (v, n, r): (&str, &str, &str),
    lost: &str,
) -> (String, String, String) {
    let p = inv.sql_prefix();
    let refused = format!("w.{p}_refused");
    let doubt = format!("w.{p}_doubt");
    // Missing rows only hide duplicates: those failures stay.
    let removable = !(inv.lost_spans() == LostSpans::Never && inv.lost_rows() == LostRows::Never);
    let fail = if removable {
        format!(" OR {v} = 'fail'")
    } else {
        String::new()
    };
    // A pass that compared nothing (one source) no row could change.
    let one_source = lit(&Reason::OneSource);
    let by_refused = format!(
        "({v} = 'pass'{fail}) AND {refused} IS NOT NULL AND coalesce({r}, '') <> {one_source}"
    );
    let by_doubt = format!("{lost} AND {doubt} IS NOT NULL");
    (
        format!("CASE WHEN {by_refused} OR {by_doubt} THEN 'unknown' ELSE {v} END"),
        format!("CASE WHEN {by_refused} OR {by_doubt} THEN 0 ELSE {n} END"),
        format!("CASE WHEN {by_refused} THEN {refused} WHEN {by_doubt} THEN {doubt} ELSE {r} END"),
    )
}
