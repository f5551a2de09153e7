//! The `chaos` part: a campaign of chaos seeds at scale (`--tasks`, 4 workers, a 10 s chaos window)
//! on etcd + JetStream, on SQLite + Redis and on the three-node cluster, each recording checked by
//! `analyzer check` and its ground truth read back from the services: every task there, done, with
//! exactly one result and one dedup key.

use serde_json::{json, Value};

use super::runs::{Job, Outcome};
use super::table::Table;
use crate::args::Seeds;

/// The setups: a label and the flags that make it.
const SETUPS: [(&str, &[&str]); 3] = [
    ("etcd-jetstream", &["--backend", "etcd-jetstream"]),
    ("sqlite-redis", &["--backend", "sqlite-redis"]),
    ("etcd-jetstream --cluster 3", &["--cluster", "3"]),
];

/// One job per setup and seed.
pub fn jobs(seeds: Seeds, tasks: usize) -> Vec<Job> {
    let mut jobs = Vec::new();
    for (label, setup) in SETUPS {
        for seed in seeds.iter() {
            let mut flags: Vec<String> = [
                "--tasks",
                &tasks.to_string(),
                "--workers",
                "4",
                "--chaos",
                &seed.to_string(),
                "--chaos-window",
                "10s",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            flags.extend(setup.iter().map(|s| s.to_string()));
            jobs.push(Job {
                setup: label.to_string(),
                protocol: "reference".to_string(),
                seed,
                tasks: tasks as u64,
                name: format!("chaos/{}-{seed}", label.replace([' ', '-'], "_")),
                flags,
            });
        }
    }
    jobs
}

/// The part's results: one row per setup, and every outcome.
pub fn tables(runs: &[Outcome]) -> Value {
    let mut table = Table::new([
        "setup",
        "seeds",
        "tasks per run",
        "valid",
        "exactly once in the store",
        "tasks lost",
        "crashes",
        "service restarts",
        "redeliveries",
        "suppressions",
        "longest run (s)",
    ]);
    for (label, _) in SETUPS {
        let of: Vec<&Outcome> = runs.iter().filter(|o| o.setup == label).collect();
        let (Some(first), Some(last)) = (
            of.iter().map(|o| o.seed).min(),
            of.iter().map(|o| o.seed).max(),
        ) else {
            continue;
        };
        let n = of.len();
        let count = |f: fn(&Outcome) -> bool| of.iter().filter(|o| f(o)).count();
        let sum = |f: fn(&Outcome) -> u64| of.iter().map(|o| f(o)).sum::<u64>();
        table.push(vec![
            label.into(),
            format!("{first}-{last}").into(),
            of[0].tasks_asked.into(),
            format!("{} of {n}", count(|o| o.verdict == "valid")).into(),
            format!("{} of {n}", count(Outcome::exactly_once)).into(),
            sum(Outcome::lost).into(),
            sum(|o| o.figures.crashes).into(),
            sum(|o| o.service_restarts).into(),
            sum(|o| o.figures.redeliveries).into(),
            sum(|o| o.figures.suppressions).into(),
            of.iter().map(|o| o.wall_s).fold(0.0, f64::max).into(),
        ]);
    }
    json!({ "setups": table, "runs": runs })
}
