//! The `system` part: the example services under `recorder run --system --chaos`, seed by seed,
//! each build (the reference, and each planted bug as `--env BUG=...`) checked by `analyzer
//! check`: how often the reference is valid and each bug caught, with which invariants. Then, for
//! an example with a fault-free scenario, its throughput (tasks per second, first acceptance to
//! last commit) on a calm run, beside the built-in etcd + JetStream protocol's on the same number
//! of tasks and workers.
//!
//! The examples are [`EXAMPLES`]: `examples/otel-python` (Python, SQLite, a Redis Stream) and
//! `examples/node-postgres` (Node.js, PostgreSQL, NATS JetStream).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::runs::{seed_blocks, Job, Outcome};
use super::table::Table;
use crate::args::Seeds;

/// One example service the part runs.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// Its label in the tables (the outcomes' setup).
    pub label: &'static str,
    /// Its system file, from the repository's root.
    pub file: &'static str,
    /// Its builds: `reference` (no `BUG`) and the bugs.
    pub builds: &'static [&'static str],
    /// Flags every run of it gets (a scenario without scripted faults, say).
    pub flags: &'static [&'static str],
    /// `--chaos-window`: the first half of it holds the chaos pauses, so it spans the time the
    /// example's orders move.
    pub chaos_window: &'static str,
    /// The scenario without faults its throughput is measured on, if it has one.
    pub calm: Option<&'static str>,
    /// Worker instances the file runs (the built-in protocol gets as many for the comparison).
    pub workers: u32,
    /// The planted bugs `recorder explore` is asked to find (the `explore` part).
    pub explore_builds: &'static [&'static str],
}

/// The examples, in the tables' order.
pub const EXAMPLES: [Example; 2] = [
    Example {
        label: "otel-python",
        file: "examples/otel-python/outbox-system.toml",
        builds: &["reference", "no-dedup", "dedup-outside-tx"],
        flags: &[],
        chaos_window: "2s",
        calm: None,
        workers: 2,
        explore_builds: &[
            "no-dedup",
            "dedup-outside-tx",
            "dedup-on-entry-id",
            "mark-first",
            "mark-on-timeout",
        ],
    },
    Example {
        label: "node-postgres",
        file: "examples/node-postgres/outbox-system.toml",
        builds: &[
            "reference",
            "mark-before-ack",
            "ack-before-commit",
            "racy-dedup",
        ],
        flags: &["--scenario", "calm"],
        chaos_window: "10s",
        calm: Some("calm"),
        workers: 3,
        explore_builds: &[
            "mark-before-ack",
            "ack-before-commit",
            "racy-dedup",
            "mark-on-timeout",
        ],
    },
];

/// The example labelled `label`.
pub fn example(label: &str) -> Option<Example> {
    EXAMPLES.iter().copied().find(|e| e.label == label)
}

/// The example's system file under the repository `root`.
pub fn file(root: &Path, example: &Example) -> PathBuf {
    root.join(example.file)
}

/// Tasks per chaos run.
const TASKS: u64 = 40;

/// One job per build and seed: `--system FILE --chaos SEED --chaos-window W [--env BUG=...]`.
pub fn jobs(root: &Path, examples: &[Example], seeds: Seeds) -> Vec<Job> {
    let mut jobs = Vec::new();
    for example in examples {
        for build in example.builds {
            for seed in seeds.iter() {
                let mut flags = vec![
                    "--system".to_string(),
                    file(root, example).display().to_string(),
                    "--chaos".into(),
                    seed.to_string(),
                    "--chaos-window".into(),
                    example.chaos_window.into(),
                ];
                flags.extend(example.flags.iter().map(ToString::to_string));
                if *build != "reference" {
                    flags.extend(["--env".to_string(), format!("BUG={build}")]);
                }
                jobs.push(Job {
                    setup: example.label.into(),
                    protocol: (*build).into(),
                    seed,
                    tasks: TASKS,
                    name: format!("system/{}-{build}-{seed}", example.label),
                    flags,
                });
            }
        }
    }
    jobs
}

/// Per example, build and block of 20 seeds: valid (reference) or caught (bugs), and the failing
/// invariants; then the throughputs; then every outcome.
pub fn tables(runs: &[Outcome], throughput: &Value) -> Value {
    let blocks = seed_blocks(runs);
    let mut columns = vec!["example".to_string(), "build".to_string()];
    for (first, last) in &blocks {
        columns.push(format!("seeds {first}-{last}"));
    }
    columns.push("failing invariants (runs)".into());
    let mut table = Table::new(columns);
    let mut labels: Vec<&str> = EXAMPLES.iter().map(|e| e.label).collect();
    for o in runs {
        if !labels.contains(&o.setup.as_str()) {
            labels.push(&o.setup);
        }
    }
    for label in labels {
        let mut builds: Vec<&str> = example(label)
            .map(|e| e.builds.to_vec())
            .unwrap_or_default();
        for o in runs.iter().filter(|o| o.setup == label) {
            if !builds.contains(&o.protocol.as_str()) {
                builds.push(&o.protocol);
            }
        }
        for build in builds {
            let of: Vec<&Outcome> = runs
                .iter()
                .filter(|o| o.setup == label && o.protocol == build)
                .collect();
            if of.is_empty() {
                continue;
            }
            let mut row = vec![Value::from(label), Value::from(format!("`{build}`"))];
            for &(first, last) in &blocks {
                let block: Vec<&&Outcome> = of
                    .iter()
                    .filter(|o| (first..=last).contains(&o.seed))
                    .collect();
                let n = block.len();
                row.push(if build == "reference" {
                    let valid = block.iter().filter(|o| o.verdict == "valid").count();
                    format!("{valid} of {n} valid").into()
                } else {
                    let caught = block.iter().filter(|o| o.verdict == "invalid").count();
                    format!("{caught} of {n} caught").into()
                });
            }
            let mut by: BTreeMap<&str, u32> = BTreeMap::new();
            for o in &of {
                for id in &o.failed {
                    *by.entry(id).or_default() += 1;
                }
            }
            row.push(json!(by));
            table.push(row);
        }
    }
    json!({ "builds": table, "throughput": throughput, "runs": runs })
}

/// Tasks of a throughput run.
pub const THROUGHPUT_TASKS: u64 = 200;

/// The throughput table's columns.
const THROUGHPUT_COLUMNS: [&str; 5] = [
    "example",
    "tasks",
    "workers",
    "tasks/s",
    "built-in etcd + JetStream tasks/s (same tasks, workers)",
];

/// One throughput row: the example's calm run (`tasks` in it, at `rate` tasks per second) and
/// the built-in protocol's rate on as many tasks and workers.
pub fn throughput_row(example: &Example, tasks: u64, rate: f64, builtin_rate: f64) -> Vec<Value> {
    vec![
        Value::from(example.label),
        Value::from(tasks),
        Value::from(example.workers),
        Value::from(rate),
        Value::from(builtin_rate),
    ]
}

/// The throughput table: the fresh rows, and the rows `previous` holds for other examples.
pub fn throughput_table(previous: Option<&Value>, fresh: Vec<Vec<Value>>) -> Value {
    let mut table = Table::new(THROUGHPUT_COLUMNS);
    let stored: Table = previous
        .and_then(|p| p.get("throughput"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    let label = |row: &Vec<Value>| row.first().cloned();
    for example in EXAMPLES {
        let key = Some(Value::from(example.label));
        if let Some(row) = fresh
            .iter()
            .find(|r| label(r) == key)
            .or_else(|| stored.rows.iter().find(|r| label(r) == key))
        {
            table.push(row.clone());
        }
    }
    json!(table)
}
