//! What the recorder prints at the end of a run, and the lab's JSON (`--report`).
//!
//! Both show [`Figures`], counted by the journal as events pass with the one definition every
//! output of the project uses (see `outbox_trace::figures`).

use outbox_trace::detail::Observed;
use outbox_trace::Figures;
use serde::Serialize;

use crate::journal::Tally;
use crate::run::RunConfig;

/// One scenario in the lab's JSON: its figures, whether it recovered, and how long it took.
#[derive(Debug, Serialize)]
struct ScenarioFigures<'a> {
    scenario: &'a str,
    #[serde(flatten)]
    figures: Figures,
    recovered: Option<bool>,
    duration_ms: i64,
}

impl<'a> ScenarioFigures<'a> {
    fn of(scenario: &'a str, t: &Tally) -> Self {
        ScenarioFigures {
            scenario,
            figures: t.figures.figures(),
            recovered: t.recovered,
            duration_ms: t.duration_ms(),
        }
    }
}

/// The lab's JSON (`--report`).
#[derive(Debug, Serialize)]
pub struct LabJson<'a> {
    run_id: &'a str,
    backend: &'static str,
    protocol: &'static str,
    trace: String,
    scenarios: Vec<ScenarioFigures<'a>>,
}

/// The lab's JSON: for every scenario the stream count, publish attempts, deliveries,
/// redeliveries, suppressions, counter and results, and the rest of its figures.
pub fn lab_json<'a>(
    run_id: &'a str,
    config: &RunConfig,
    tallies: &'a [(String, Tally)],
) -> LabJson<'a> {
    LabJson {
        run_id,
        backend: config.backend.name(),
        protocol: config.protocol.name(),
        trace: config.out.display().to_string(),
        scenarios: tallies
            .iter()
            .map(|(s, t)| ScenarioFigures::of(s, t))
            .collect(),
    }
}

/// Prints one line per scenario.
pub fn print_summary(run_id: &str, config: &RunConfig, tallies: &[(String, Tally)], events: u64) {
    println!(
        "{run_id}  backend {}  protocol {}  {events} events -> {}",
        config.backend.name(),
        config.protocol.name(),
        config.out.display()
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
    tallies: &[(String, Tally)],
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
