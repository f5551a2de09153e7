//! What the recorder prints at the end of a run, and the lab's JSON (`--report`).

use outbox_trace::Kind;
use serde_json::{json, Value};

use crate::journal::Tally;
use crate::run::RunConfig;

/// One scenario's figures: from the events that passed through the journal and from the ground
/// truth read back at the end.
fn figures(scenario: &str, t: &Tally) -> Value {
    let observed = t.observed.clone().unwrap_or(Value::Null);
    json!({
        "scenario": scenario,
        "stream_messages": observed["stream_messages"],
        "publish_attempts": t.count(Kind::PublishAttempt),
        "publish_acks_lost": t.count(Kind::PublishUnacked),
        "deliveries": t.count(Kind::Delivered) + t.count(Kind::Redelivered),
        "redeliveries": t.count(Kind::Redelivered),
        "suppressions": t.count(Kind::DuplicateSuppressed),
        "effects": t.count(Kind::EffectCommitted),
        "commit_conflicts": t.count(Kind::CommitConflict),
        "crashes": t.count(Kind::Crash),
        "counter": observed["counter"],
        "results": observed["results"],
        "dedup_keys": observed["dedup_keys"],
        "outbox_pending": observed["outbox_pending"],
        "recovered": t.recovered,
        "duration_ms": (t.span_ns.1 - t.span_ns.0) / 1_000_000,
    })
}

/// The lab's JSON: for every scenario the stream count, publish attempts, deliveries,
/// redeliveries, suppressions, counter and results.
pub fn lab_json(run_id: &str, config: &RunConfig, tallies: &[(String, Tally)]) -> Value {
    json!({
        "run_id": run_id,
        "backend": config.backend.name(),
        "protocol": config.protocol.name(),
        "trace": config.out.display().to_string(),
        "scenarios": tallies.iter().map(|(s, t)| figures(s, t)).collect::<Vec<_>>(),
    })
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
    for (scenario, t) in tallies {
        let f = figures(scenario, t);
        let show = |v: &Value| match v {
            Value::Null => "-".to_string(),
            other => other.to_string(),
        };
        println!(
            "{:<22} {:>7} {:>7} {:>7} {:>9} {:>8} {:>7} {:>7} {:>9}",
            scenario,
            show(&f["counter"]),
            show(&f["results"]),
            show(&f["stream_messages"]),
            show(&f["publish_attempts"]),
            show(&f["redeliveries"]),
            show(&f["suppressions"]),
            show(&f["effects"]),
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
    let observed: Vec<(&str, outbox_trace::detail::Observed)> = tallies
        .iter()
        .filter_map(|(s, t)| {
            let o = outbox_trace::Detail::parse(
                outbox_trace::Kind::Observed,
                &t.observed.as_ref()?.to_string(),
            );
            Some((s.as_str(), o.observed()?.clone()))
        })
        .collect();
    let observed: Vec<(&str, &outbox_trace::detail::Observed)> =
        observed.iter().map(|(s, o)| (*s, o)).collect();
    let mut paths = Vec::new();
    for file in outbox_trace::lab::lab_files(&observed) {
        let path = dir.join(file.name);
        std::fs::write(&path, file.lines.join("\n") + "\n")?;
        paths.push(path);
    }
    Ok(paths)
}
