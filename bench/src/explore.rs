//! The `explore` part: `recorder explore` on each example service, once per build (the
//! reference, and each planted bug as `--env BUG=...`): how many schedules it ran, how long it
//! took, its verdict, and which schedules found the bug. Beside the `system` part's chaos
//! detection, this is the systematic search's: no seed, no scenario written.

use std::path::Path;

use serde_json::{json, Value};

use super::system::{file, Example};
use super::table::Table;

/// Tasks per scenario of a search.
pub const TASKS: u64 = 20;

/// The builds searched on `example`, each with the flags it adds.
pub fn builds(example: &Example) -> Vec<(&'static str, Vec<String>)> {
    let env = |bug: &str| vec!["--env".to_string(), format!("BUG={bug}")];
    let mut builds = vec![("reference", Vec::new())];
    for bug in example.explore_builds {
        let mut flags = env(bug);
        if example.label == "node-postgres" && *bug == "racy-dedup" {
            // The race needs the work between look-up and commit to outlast a pause's delay.
            flags.extend(["--env".to_string(), "WORK_MS=600".to_string()]);
        }
        builds.push((bug, flags));
    }
    builds
}

/// The arguments of `recorder explore` for one build, writing `trace` and `json`.
pub fn args(
    root: &Path,
    example: &Example,
    flags: &[String],
    trace: &Path,
    json: &Path,
) -> Vec<String> {
    let mut all: Vec<String> = vec![
        "explore".into(),
        "--quiet".into(),
        "--system".into(),
        file(root, example).display().to_string(),
        "--tasks".into(),
        TASKS.to_string(),
        "--out".into(),
        trace.display().to_string(),
        "--json".into(),
        json.display().to_string(),
    ];
    all.extend(flags.iter().cloned());
    all
}

/// One row of the table from a search's `--json` and its wall time.
pub fn row(example: &Example, build: &str, search: &Value, wall_s: f64) -> Vec<Value> {
    let schedules = search["schedules"].as_array().cloned().unwrap_or_default();
    let invalid: Vec<String> = schedules
        .iter()
        .filter(|s| s["verdict"] == "invalid")
        .map(|s| {
            let failed: Vec<&str> = s["failed"]
                .as_array()
                .map(|f| f.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "`{}` ({})",
                s["fault"].as_str().unwrap_or("?"),
                failed.join(", ")
            )
        })
        .collect();
    let calm = search["calm"].as_str().unwrap_or("?");
    let found = match (calm, invalid.len()) {
        ("invalid", _) => format!("the calm run ({})", join(&search["calm_failed"])),
        (_, 0) => "-".to_string(),
        (_, n) if n > 3 => format!("{}, and {} more", invalid[..3].join("; "), n - 3),
        _ => invalid.join("; "),
    };
    vec![
        Value::from(example.label),
        Value::from(format!("`{build}`")),
        Value::from(schedules.len()),
        Value::from((wall_s * 10.0).round() / 10.0),
        Value::from(search["verdict"].as_str().unwrap_or("?")),
        Value::from(invalid.len()),
        Value::from(found),
    ]
}

fn join(list: &Value) -> String {
    list.as_array()
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The table of every search.
pub fn table(rows: Vec<Vec<Value>>) -> Value {
    let mut table = Table::new([
        "example",
        "build",
        "schedules",
        "time s",
        "verdict",
        "invalid schedules",
        "found by",
    ]);
    for row in rows {
        table.push(row);
    }
    json!({ "searches": table, "runs": [] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_says_what_the_search_found_and_how_long_it_took() {
        let example = crate::system::example("otel-python").unwrap();
        let search = json!({
            "calm": "valid",
            "calm_failed": [],
            "verdict": "invalid",
            "schedules": [
                {"fault": "kill worker after acked", "verdict": "valid", "failed": []},
                {"fault": "kill worker after effect_committed", "verdict": "invalid",
                 "failed": ["single-effect", "observed-agrees"]},
                {"fault": "pause redis after acked for 2s", "verdict": "not reached", "failed": []},
            ],
        });
        let row = row(&example, "no-dedup", &search, 123.44);
        assert_eq!(row[2], 3);
        assert_eq!(row[3], 123.4);
        assert_eq!(row[4], "invalid");
        assert_eq!(row[5], 1);
        assert_eq!(
            row[6],
            "`kill worker after effect_committed` (single-effect, observed-agrees)"
        );
        let calm = json!({"calm": "invalid", "calm_failed": ["mark-after-puback"], "verdict": "invalid", "schedules": []});
        assert_eq!(row_found(&calm), "the calm run (mark-after-puback)");
        let builds = builds(&crate::system::example("node-postgres").unwrap());
        assert_eq!(builds[0].0, "reference");
        assert!(builds
            .iter()
            .any(|(b, f)| *b == "racy-dedup" && f.contains(&"WORK_MS=600".to_string())));
    }

    fn row_found(search: &Value) -> Value {
        let example = crate::system::example("otel-python").unwrap();
        row(&example, "mark-first", search, 1.0)[6].clone()
    }
}
