//! The end of a search (`recorder explore`): its trace judged by the analyzer's own check (so
//! `analyzer check` of the same file gives the same verdict), and the coverage table: a row per
//! role and kind (or service and kind), a column per fault kind, each cell what its schedules
//! found; then every schedule on a line, the verdict, and the same as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use outbox_analyzer::check::{Report, RunVerdict, Verdict};
use outbox_trace::detail::RoleShape;
use serde::Serialize;

use super::explore::Tried;
use crate::fault::spec::{Nemesis, What, When};
use crate::system::scenario::COULD_NOT_RUN;

/// What one schedule found.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The scenario in the trace.
    pub scenario: String,
    /// The fault.
    pub fault: String,
    /// How many times it fired.
    pub fired: u64,
    /// `valid`, `invalid`, `unknown`, `not reached` (its fault never fired), or `could not run`
    /// (it did not start, twice: `why` says why).
    pub verdict: &'static str,
    /// The invariants it failed.
    pub failed: Vec<&'static str>,
    /// Why its fault never fired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The whole search, as `--json` writes it.
#[derive(Debug, Serialize)]
pub struct Search<'a> {
    /// The calm run's verdict.
    pub calm: &'static str,
    /// The invariants the calm run failed.
    pub calm_failed: Vec<&'static str>,
    /// What each role reported in the calm run.
    pub shape: &'a BTreeMap<String, RoleShape>,
    /// Every schedule.
    pub schedules: Vec<Found>,
    /// The verdict over the whole trace, as `analyzer check` gives it.
    pub verdict: &'static str,
}

/// The verdict and failed invariants of each scenario of `report`, by name.
fn verdicts(report: &Report) -> BTreeMap<String, (RunVerdict, Vec<&'static str>)> {
    report
        .scenarios
        .iter()
        .map(|s| {
            let h = &report.loaded.histories[s.history];
            let failed = s
                .outcomes
                .iter()
                .filter(|o| o.verdict == Verdict::Fail)
                .map(|o| o.invariant.id())
                .collect();
            (
                report.loaded.names.name(h.scenario).to_string(),
                (s.verdict, failed),
            )
        })
        .collect()
}

/// The search's findings from the judged trace.
pub fn findings<'a>(
    report: &Report,
    calm: &str,
    shape: &'a BTreeMap<String, RoleShape>,
    tried: &[Tried],
) -> Search<'a> {
    let verdicts = verdicts(report);
    let judged = |name: &str| {
        verdicts
            .get(name)
            .cloned()
            .unwrap_or((RunVerdict::Unknown, Vec::new()))
    };
    let (calm, calm_failed) = judged(calm);
    let schedules = tried
        .iter()
        .map(|t| {
            let (verdict, failed) = judged(&t.scenario);
            if let Some(why) = &t.could_not_run {
                return Found {
                    scenario: t.scenario.clone(),
                    fault: t.spec.clone(),
                    fired: 0,
                    verdict: COULD_NOT_RUN,
                    failed: Vec::new(),
                    why: Some(why.clone()),
                };
            }
            Found {
                scenario: t.scenario.clone(),
                fault: t.spec.clone(),
                fired: t.fault.fired,
                verdict: if t.fault.fired == 0 && verdict != RunVerdict::Invalid {
                    "not reached"
                } else {
                    verdict.as_str()
                },
                failed,
                why: t.fault.why.clone(),
            }
        })
        .collect();
    Search {
        calm: calm.as_str(),
        calm_failed,
        shape,
        schedules,
        verdict: report.verdict.as_str(),
    }
}

/// The row and column of a schedule in the coverage table.
fn cell_of(spec: &str, services: &[String]) -> Option<(String, &'static str)> {
    let fault = Nemesis::parse(spec)
        .ok()?
        .resolve(|n| services.iter().any(|s| s == n))
        .ok()?;
    let When::After { kind, .. } = fault.when else {
        return None;
    };
    Some(match &fault.what {
        What::Kill { target } => (format!("{target} {kind}"), "kill"),
        What::Pause { target, .. } => (format!("{target} {kind}"), "pause"),
        What::Restart { service } => (format!("{service} after {kind}"), "restart"),
        What::PauseService { service, .. } => (format!("{service} after {kind}"), "pause"),
        What::Wire { target, .. } => (format!("{target} {kind}"), "wire"),
    })
}

/// The coverage table, the schedules and the verdict, for a terminal; `services` tells a
/// service's pause from a process's.
pub fn table(search: &Search<'_>, services: &[String]) -> String {
    // Cells keep the worst of their schedules: FAIL over unknown over not reached over ok.
    let rank = |v: &str| match v {
        "invalid" => 4,
        COULD_NOT_RUN => 3,
        "unknown" => 2,
        "not reached" => 1,
        _ => 0,
    };
    let columns = ["kill", "pause", "restart", "wire"];
    let mut cells: BTreeMap<String, BTreeMap<&str, &Found>> = BTreeMap::new();
    for f in &search.schedules {
        let Some((row, column)) = cell_of(&f.fault, services) else {
            continue;
        };
        let slot = cells.entry(row).or_default().entry(column).or_insert(f);
        if rank(f.verdict) > rank(slot.verdict) {
            *slot = f;
        }
    }
    let used: Vec<&str> = columns
        .into_iter()
        .filter(|c| cells.values().any(|r| r.contains_key(c)))
        .collect();
    let word = |f: &Found| match f.verdict {
        "invalid" => format!("FAIL {}", f.failed.join(",")),
        "not reached" => "unreached".to_string(),
        "valid" => "ok".to_string(),
        other => other.to_string(),
    };
    let text: BTreeMap<&String, Vec<String>> = cells
        .iter()
        .map(|(row, by)| {
            let texts = used
                .iter()
                .map(|c| by.get(c).map_or_else(|| "-".to_string(), |f| word(f)))
                .collect();
            (row, texts)
        })
        .collect();
    let widths: Vec<usize> = used
        .iter()
        .enumerate()
        .map(|(i, c)| {
            text.values()
                .map(|t| t[i].len())
                .chain([c.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let width = cells.keys().map(String::len).max().unwrap_or(4).max(4);
    let _ = write!(out, "{:width$}", "");
    for (c, w) in used.iter().zip(&widths) {
        let _ = write!(out, "  {c:<w$}");
    }
    out.push('\n');
    for (row, texts) in &text {
        let _ = write!(out, "{row:width$}");
        for (t, w) in texts.iter().zip(&widths) {
            let _ = write!(out, "  {t:<w$}");
        }
        out.push('\n');
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "calm: {}{}",
        search.calm,
        failed_list(&search.calm_failed)
    );
    for f in &search.schedules {
        let _ = write!(out, "{}: fired {}, {}", f.fault, f.fired, f.verdict);
        out.push_str(&failed_list(&f.failed));
        if let (0, Some(why)) = (f.fired, &f.why) {
            // `fired 0, could not run (why)`: its fault never had the chance.
            let _ = write!(out, " ({why})");
        }
        out.push('\n');
    }
    let count = |v: &str| search.schedules.iter().filter(|f| f.verdict == v).count();
    let _ = writeln!(
        out,
        "\nverdict: {} ({} schedule(s): {} valid, {} invalid, {} unknown, {} not reached, {} could not run; calm {})",
        search.verdict,
        search.schedules.len(),
        count("valid"),
        count("invalid"),
        count("unknown"),
        count("not reached"),
        count(COULD_NOT_RUN),
        search.calm
    );
    out
}

/// The JUnit document `xml` with a suite per schedule that could not run, its one case an
/// `<error>` saying why (a CI shows it neither green nor skipped).
pub fn junit_with_errors(xml: &str, search: &Search<'_>) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let errors: Vec<&Found> = search
        .schedules
        .iter()
        .filter(|f| f.verdict == COULD_NOT_RUN)
        .collect();
    if errors.is_empty() {
        return xml.to_string();
    }
    let mut suites = String::new();
    for f in &errors {
        let why = f.why.as_deref().unwrap_or("no reason known");
        let _ = write!(
            suites,
            "  <testsuite name=\"explore/{s}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    \
             <testcase classname=\"{s}\" name=\"{COULD_NOT_RUN}\">\n      <error message=\"{COULD_NOT_RUN}: {w}\"/>\n    \
             </testcase>\n  </testsuite>\n",
            s = escape(&f.scenario),
            w = escape(why)
        );
    }
    let head = format!("errors=\"{}\">", errors.len());
    let xml = xml.replacen("errors=\"0\">", &head, 1);
    match xml.rfind("</testsuites>") {
        Some(at) => format!("{}{suites}{}", &xml[..at], &xml[at..]),
        None => xml,
    }
}

fn failed_list(failed: &[&str]) -> String {
    if failed.is_empty() {
        String::new()
    } else {
        format!(": FAIL {}", failed.join(", "))
    }
}

/// The shape as `explore --shape` prints it: per role, its kinds with counts and gaps, the
/// widest gaps first, and how late its exports arrived.
pub fn shape_text(shape: &BTreeMap<String, RoleShape>) -> String {
    let mut out = String::new();
    for (role, s) in shape {
        let lag = s.export_lag_ms.map_or_else(
            || "export lag unknown".to_string(),
            |ms| {
                let mode = if ms <= 50 {
                    "synchronous"
                } else {
                    "asynchronous"
                };
                format!(
                    "exports arrive {ms} ms after a span ends (median; max {} ms): {mode}",
                    s.export_lag_max_ms.unwrap_or(ms)
                )
            },
        );
        let _ = writeln!(out, "{role}: {lag}");
        let mut kinds: Vec<_> = s.kinds.iter().collect();
        kinds.sort_by_key(|(_, k)| std::cmp::Reverse(k.gap_median_ms.unwrap_or(0)));
        for (kind, k) in kinds {
            let gap = match (k.gap_median_ms, k.gap_p90_ms) {
                (Some(m), Some(p)) => format!("next step {m} ms after (median), {p} ms (p90)"),
                _ => "no next step seen".to_string(),
            };
            let _ = writeln!(out, "  {kind:<22} {:>6}  {gap}", k.count);
        }
    }
    out
}
