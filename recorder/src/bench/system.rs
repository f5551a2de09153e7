//! The `system` part: the Python example service (`examples/otel-python`) under `--chaos`, seed by
//! seed: the reference, and each of its planted bugs (`BUG=no-dedup`, `BUG=dedup-outside-tx`),
//! each recording checked by `analyzer check`: how often the reference is valid and each bug
//! caught, with which invariants.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::runs::{seed_blocks, Job, Outcome};
use super::table::Table;
use crate::cli::args::Seeds;

/// The example's builds: the reference (no `BUG`) and its bugs.
const BUILDS: [&str; 3] = ["reference", "no-dedup", "dedup-outside-tx"];
/// The setup's label in the tables.
const SETUP: &str = "otel-python";

/// One job per build and seed: `--system FILE --chaos SEED --chaos-window 2s [--env BUG=...]`.
pub fn jobs(system: &Path, seeds: Seeds) -> Vec<Job> {
    let mut jobs = Vec::new();
    for build in BUILDS {
        for seed in seeds.iter() {
            let mut flags = vec![
                "--system".to_string(),
                system.display().to_string(),
                "--chaos".into(),
                seed.to_string(),
                "--chaos-window".into(),
                "2s".into(),
            ];
            if build != "reference" {
                flags.extend(["--env".to_string(), format!("BUG={build}")]);
            }
            jobs.push(Job {
                setup: SETUP.into(),
                protocol: build.into(),
                seed,
                tasks: 40,
                name: format!("system/{build}-{seed}"),
                flags,
            });
        }
    }
    jobs
}

/// Per build and block of 20 seeds: valid (reference) or caught (bugs), and the failing
/// invariants; then every outcome.
pub fn tables(runs: &[Outcome]) -> Value {
    let blocks = seed_blocks(runs);
    let mut columns = vec!["build".to_string()];
    for (first, last) in &blocks {
        columns.push(format!("seeds {first}-{last}"));
    }
    columns.push("failing invariants (runs)".into());
    let mut table = Table::new(columns);
    for build in BUILDS {
        let of: Vec<&Outcome> = runs.iter().filter(|o| o.protocol == build).collect();
        if of.is_empty() {
            continue;
        }
        let mut row = vec![Value::from(format!("`{build}`"))];
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
    json!({ "builds": table, "runs": runs })
}
