//! The text report: per scenario one line per invariant, a counts line, then up to
//! [`crate::check::EXAMPLES`] violations per invariant with their witness chains. Every line that
//! holds a value from the trace is shown escaped ([`shown`]): no value reaches a terminal as an
//! escape sequence, and none starts a line of its own.

use std::io::{self, Write};

use crate::check::{Finding, Outcome, Verdict, Violation};
use crate::check::{Report, RunVerdict, ScenarioReport};
use crate::explain;
use crate::model::history::History;
use crate::model::intern::Interner;
use outbox_trace::output::escape::terminal_line as shown;
use outbox_trace::Figures;

/// Witness rows shown per violation before "N more row(s)".
const WITNESS_ROWS: usize = 12;

/// Writes the text report.
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let loaded = &report.loaded;
    for file in &loaded.files {
        let path = file.path.display().to_string();
        writeln!(out, "file {} ({} rows)", shown(&path), file.rows)?;
        for note in &file.notes {
            writeln!(out, "  note: {}", shown(&explain::file_note(note)))?;
        }
    }
    for s in &report.scenarios {
        writeln!(out)?;
        scenario(report, s, out)?;
    }
    writeln!(out)?;
    let judged = || report.scenarios.iter().filter(|s| s.retried_as.is_none());
    let count = |v| judged().filter(|s| s.verdict == v).count();
    let retried = report.scenarios.len() - judged().count();
    writeln!(
        out,
        "verdict: {} ({} scenario(s): {} valid, {} invalid, {} unknown{})",
        report.verdict.as_str(),
        report.scenarios.len(),
        count(RunVerdict::Valid),
        count(RunVerdict::Invalid),
        count(RunVerdict::Unknown),
        match retried {
            0 => String::new(),
            n => format!(", {n} could not run and were tried again"),
        }
    )?;
    let outcomes: Vec<&Outcome> = report.scenarios.iter().flat_map(|s| &s.outcomes).collect();
    let add = explain::words::what_to_add(&outcomes);
    if !add.is_empty() {
        writeln!(out)?;
        writeln!(out, "what to add (see {}):", explain::words::SPANS_TABLE)?;
        for line in add {
            writeln!(out, "  {}", shown(&line))?;
        }
    }
    Ok(())
}

fn scenario(report: &Report, s: &ScenarioReport, out: &mut dyn Write) -> io::Result<()> {
    let names = &report.loaded.names;
    let h = &report.loaded.histories[s.history];
    let path = report.loaded.files[h.file].path.display().to_string();
    writeln!(
        out,
        "run {} scenario {} backend {} ({}): {}",
        shown(names.name(h.run_id)),
        shown(names.name(h.scenario)),
        shown(names.name(h.backend)),
        shown(&path),
        s.verdict.as_str()
    )?;
    for note in explain::scenario_notes(h, names) {
        writeln!(out, "  note: {}", shown(&note))?;
    }
    if let Some(again) = &s.retried_as {
        let note =
            format!("could not run; tried again as {again}, which stands for it in the verdict");
        writeln!(out, "  note: {}", shown(&note))?;
    }
    for o in &s.outcomes {
        writeln!(out, "  {}", shown(&verdict_line(o)))?;
    }
    for line in explain::fault_lines(&s.coverage) {
        writeln!(out, "  {}", shown(&line))?;
    }
    writeln!(out, "  counts: {}", counts_line(&s.figures))?;
    for o in s.outcomes.iter().filter(|o| o.verdict == Verdict::Fail) {
        violations(o, h, names, out)?;
    }
    Ok(())
}

fn verdict_line(o: &Outcome) -> String {
    let word = match o.verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::Unknown => "unknown",
        Verdict::Skipped => "skipped",
    };
    let mut line = format!("{} {word}", o.invariant.id());
    if o.verdict == Verdict::Fail {
        let n = o.violations.len() + o.more;
        line.push_str(&format!(": {n} violation(s)"));
        if let Some(r) = &o.reason {
            line.push_str(&format!(" (also: {})", explain::reason(r)));
        }
    } else if let Some(r) = &o.reason {
        line.push_str(&format!(": {}", explain::reason(r)));
    }
    line
}

fn counts_line(c: &Figures) -> String {
    let counter = c
        .counter
        .map_or_else(|| "counter unknown".to_string(), |v| format!("counter {v}"));
    format!(
        "{} tasks, {} publish attempts, {} stream copies, {} deliveries, {} redeliveries, {} suppressions, {} effects, {} ACKs, {} crashes, {counter}",
        c.tasks,
        c.publish_attempts,
        c.stream_copies,
        c.deliveries,
        c.redeliveries,
        c.suppressions,
        c.effects,
        c.acks,
        c.crashes
    )
}

fn violations(o: &Outcome, h: &History, names: &Interner, out: &mut dyn Write) -> io::Result<()> {
    let id = o.invariant.id();
    for v in &o.violations {
        let (line, chain) = violation_text(o, v, h, names);
        writeln!(out)?;
        writeln!(out, "  {line}")?;
        for l in chain.lines() {
            writeln!(out, "    {l}")?;
        }
    }
    if o.more > 0 {
        writeln!(out, "  {id}: {} more violation(s)", o.more)?;
    }
    Ok(())
}

/// One violation in words: its line (`FAIL <invariant>: event_id ...`) and its witness chain
/// (the explanation, then the witness rows, one a line), as `check` prints them and a JUnit
/// failure carries them: the trace's values shown escaped, so each line stays one line.
pub fn violation_text(
    o: &Outcome,
    v: &Violation,
    h: &History,
    names: &Interner,
) -> (String, String) {
    let id = o.invariant.id();
    let mut who = Vec::new();
    if let Some(e) = v.event {
        who.push(format!("event_id {}", shown(names.name(e))));
    }
    if let Some(t) = v.task {
        who.push(format!("task_id {}", shown(names.name(t))));
    }
    if let Finding::CounterStep { key: Some(k), .. } = &v.finding {
        who.push(format!("counter_key {}", shown(names.name(*k))));
    }
    if who.is_empty() {
        // A violation about totals rather than one event or task: name what it compares.
        match &v.finding {
            Finding::ObservedMismatch { total, .. } => who.push(total.key()),
            Finding::CounterFinal { key, .. } => who.push(match key {
                Some(k) => format!("counter_key {}", shown(names.name(*k))),
                None => "the observed counter".into(),
            }),
            _ => {}
        }
    }
    let line = if who.is_empty() {
        format!("FAIL {id}")
    } else {
        format!("FAIL {id}: {}", who.join(", "))
    };
    let mut chain = shown(&explain::violation(v, h, names)).into_owned();
    for &at in v.witness.iter().take(WITNESS_ROWS) {
        let w = explain::witness_row(h.row(at), h, names);
        let fields: Vec<String> = w.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let row = format!(
            "seq {:>6}  {}#{}  {}  {}",
            w.seq,
            w.actor,
            w.incarnation,
            w.kind,
            fields.join(" ")
        );
        chain.push_str("\n  ");
        chain.push_str(&shown(&row));
    }
    if v.witness.len() > WITNESS_ROWS {
        chain.push_str(&format!(
            "\n  ... {} more row(s)",
            v.witness.len() - WITNESS_ROWS
        ));
    }
    (line, chain)
}
