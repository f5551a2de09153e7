//! The `detection` part: every broken protocol variant that a load run can show, under each chaos
//! seed, on both backends; how often `analyzer check` catches it, with which invariants, and how
//! often each window of the swarm draw was armed and actually hit.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_recorder::backend::connection::BackendKind;
use outbox_recorder::driver::chaos::drawn;
use outbox_recorder::fault::chaos::{ChaosPlan, SWARM_WINDOWS};
use outbox_recorder::fault::spec::{Nemesis, What};
use outbox_recorder::protocol::variant::Protocol;
use serde_json::{json, Value};

use super::runs::{seed_blocks, Job, Outcome};
use super::table::Table;
use crate::args::Seeds;

/// The detection setup: `--tasks 300 --rate 100 --workers 4 --chaos-window 4s`.
const TASKS: u64 = 300;
const WORKERS: usize = 4;
const WINDOW: Duration = Duration::from_secs(4);

/// Both backends.
const BACKENDS: [BackendKind; 2] = [BackendKind::EtcdJetstream, BackendKind::SqliteRedis];

/// The variants a load run can show: all but `no-idempotency-key`, whose external call happens only
/// in the `external-effect` scenario (which catches it every time).
fn variants() -> impl Iterator<Item = Protocol> {
    <Protocol as clap::ValueEnum>::value_variants()
        .iter()
        .copied()
        .filter(|p| *p != Protocol::NoIdempotencyKey)
}

/// One job per backend, variant and seed.
pub fn jobs(seeds: Seeds) -> Vec<Job> {
    let mut jobs = Vec::new();
    for backend in BACKENDS {
        for protocol in variants() {
            for seed in seeds.iter() {
                let flags = [
                    "--backend",
                    backend.name(),
                    "--tasks",
                    &TASKS.to_string(),
                    "--rate",
                    "100",
                    "--workers",
                    &WORKERS.to_string(),
                    "--chaos",
                    &seed.to_string(),
                    "--chaos-window",
                    "4s",
                    "--protocol",
                    protocol.name(),
                ];
                jobs.push(Job {
                    setup: backend.name().to_string(),
                    protocol: protocol.name().to_string(),
                    seed,
                    tasks: TASKS,
                    name: format!("detection/{}-{}-{seed}", backend.name(), protocol.name()),
                    flags: flags.iter().map(|s| s.to_string()).collect(),
                });
            }
        }
    }
    jobs
}

/// The part's results: the table per variant, the coverage table and every outcome.
pub fn tables(runs: &[Outcome]) -> Value {
    json!({
        "variants": variants_table(runs),
        "coverage": coverage(runs),
        "runs": runs,
    })
}

/// Per variant, backend and block of 20 seeds: in how many runs `check` caught it (for the
/// reference: found it valid); and which invariants failed in how many runs.
fn variants_table(runs: &[Outcome]) -> Table {
    let blocks = seed_blocks(runs);
    let mut columns = vec!["--protocol".to_string()];
    for backend in BACKENDS {
        for (first, last) in &blocks {
            columns.push(format!("{} seeds {first}-{last}", backend.name()));
        }
    }
    columns.push("failing invariants (runs)".into());
    let mut table = Table::new(columns);
    for protocol in variants() {
        let of: Vec<&Outcome> = runs
            .iter()
            .filter(|o| o.protocol == protocol.name())
            .collect();
        if of.is_empty() {
            continue;
        }
        let mut row = vec![Value::from(format!("`{}`", protocol.name()))];
        for backend in BACKENDS {
            for &(first, last) in &blocks {
                let block: Vec<&&Outcome> = of
                    .iter()
                    .filter(|o| o.setup == backend.name() && (first..=last).contains(&o.seed))
                    .collect();
                let n = block.len();
                row.push(if protocol == Protocol::Reference {
                    let valid = block.iter().filter(|o| o.verdict == "valid").count();
                    format!("{valid} of {n} valid").into()
                } else {
                    let caught = block.iter().filter(|o| o.verdict == "invalid").count();
                    format!("{caught} of {n}").into()
                });
            }
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
    table
}

/// For each window and service fault, per backend: in how many seeds the draw armed it, and in
/// how many seeds it fired in at least one run.
fn coverage(runs: &[Outcome]) -> Table {
    let mut columns = vec!["window".to_string()];
    for backend in BACKENDS {
        columns.push(format!("{} armed", backend.name()));
        columns.push(format!("{} hit", backend.name()));
    }
    let mut table = Table::new(columns);
    let mut names: Vec<&str> = SWARM_WINDOWS.iter().map(|p| p.name()).collect();
    names.extend([STEP_KILL, "broker-restart", "store-restart"]);
    for name in names {
        let mut row = vec![Value::from(format!("`{name}`"))];
        for backend in BACKENDS {
            let seeds: BTreeSet<u64> = runs
                .iter()
                .filter(|o| o.setup == backend.name())
                .map(|o| o.seed)
                .collect();
            let armed = seeds
                .iter()
                .filter(|&&seed| arms(plan(seed, backend), backend, name))
                .count();
            let hit = seeds
                .iter()
                .filter(|&&seed| {
                    runs.iter()
                        .any(|o| o.setup == backend.name() && o.seed == seed && fired(o, name))
                })
                .count();
            row.push(format!("{armed} of {}", seeds.len()).into());
            row.push(format!("{hit} of {}", seeds.len()).into());
        }
        table.push(row);
    }
    table
}

/// The plan a detection run of `seed` on `backend` draws (the recorder runs its own services).
fn plan(seed: u64, backend: BackendKind) -> ChaosPlan {
    ChaosPlan::new(seed, WINDOW, backend.chaos_reach(WORKERS, true, 1))
}

/// The coverage row of the kills the draw arms after the actors' steps.
const STEP_KILL: &str = "kill after a step";

/// Whether outcome `o` saw the window or fault `name` fire (a step's kill: any `ROLE:after-KIND`).
fn fired(o: &Outcome, name: &str) -> bool {
    match name {
        STEP_KILL => o.fired.iter().any(|point| point.contains(":after-")),
        _ => o.fired.contains(name),
    }
}

/// Whether `plan` arms the window or fault `name`: a window up front; a kill or a restart once
/// every role of the lab has reported each of its kinds.
fn arms(plan: ChaosPlan, backend: BackendKind, name: &str) -> bool {
    let armed = |f: &Nemesis| match &f.what {
        What::Kill { .. } => name == STEP_KILL,
        What::Restart { service } if service.starts_with("etcd") => name == "store-restart",
        What::Restart { .. } => name == "broker-restart",
        _ => false,
    };
    plan.windows.iter().any(|w| w.point.name() == name)
        || drawn(&plan, backend, WORKERS, TASKS as usize)
            .iter()
            .any(armed)
}
