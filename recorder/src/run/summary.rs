//! What the recorder prints at the end of a run, and the lab's JSON (`--report`).
//!
//! Both show [`Figures`], counted by the journal as events pass with the one definition every
//! output of the project uses (see `outbox_trace::figures`).

use outbox_trace::detail::Observed;
use outbox_trace::lab::{LabJson, LabScenario};

use crate::journal::writer::ScenarioCounts;

/// What the summary and the lab's JSON say of the run as a whole.
pub struct Heading<'a> {
    /// The trace's `backend` column.
    pub backend: &'a str,
    /// The protocol variant, for the recorder's own protocol.
    pub protocol: Option<&'a str>,
    /// The trace file.
    pub out: &'a std::path::Path,
}

/// The lab's JSON (`--report`), in the one shape `analyzer report` writes too: for every
/// scenario the stream count, publish attempts, deliveries, redeliveries, suppressions, counter
/// and results, and the rest of its figures.
pub fn lab_json(run_id: &str, heading: &Heading, tallies: &[(String, ScenarioCounts)]) -> LabJson {
    LabJson {
        traces: vec![heading.out.display().to_string()],
        scenarios: tallies
            .iter()
            .map(|(scenario, t)| LabScenario {
                scenario: scenario.clone(),
                run_id: run_id.to_string(),
                backend: heading.backend.to_string(),
                protocol: heading.protocol.map(str::to_string),
                figures: t.figures.figures(),
                recovered: t.recovered,
                duration_ms: Some(t.duration_ms()),
                ..LabScenario::default()
            })
            .collect(),
    }
}

/// Prints one line per scenario.
pub fn print_summary(
    run_id: &str,
    heading: &Heading,
    tallies: &[(String, ScenarioCounts)],
    events: u64,
) {
    let protocol = heading
        .protocol
        .map(|p| format!("  protocol {p}"))
        .unwrap_or_default();
    println!(
        "{run_id}  backend {}{protocol}  {events} events -> {}",
        heading.backend,
        heading.out.display()
    );
    println!(
        "{:<22} {:>7} {:>7} {:>7} {:>9} {:>8} {:>7} {:>7} {:>9}",
        "scenario",
        "counter",
        "results",
        "stream",
        "publishes",
        "redeliv",
        "suppr",
        "effects",
        "recovered"
    );
    let show = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    for (scenario, t) in tallies {
        let f = t.figures.figures();
        println!(
            "{:<22} {:>7} {:>7} {:>7} {:>9} {:>8} {:>7} {:>7} {:>9}",
            scenario,
            show(f.counter),
            show(f.results),
            show(f.stream_messages),
            f.publish_attempts,
            f.redeliveries,
            f.suppressions,
            f.effects,
            match t.recovered {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    }
}

/// Writes the dual-write lab's files from the scenarios' `observed` ground truth: `dualwrite.out`,
/// `order_check.out`, `atleastonce.out` and the four-line `report.txt`. Returns the paths written.
pub fn write_lab_lines(
    dir: &std::path::Path,
    tallies: &[(String, ScenarioCounts)],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let observed: Vec<(&str, &Observed)> = tallies
        .iter()
        .filter_map(|(s, t)| Some((s.as_str(), t.figures.observed()?)))
        .collect();
    let mut paths = Vec::new();
    for file in outbox_trace::lab::lab_files(&observed) {
        let path = dir.join(file.name);
        std::fs::write(&path, file.lines.join("\n") + "\n")?;
        paths.push(path);
    }
    Ok(paths)
}
