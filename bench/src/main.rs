//! `outbox-bench`: every figure the README quotes about the recorder, measured on this machine in
//! one run, each next to what bounds it.
//!
//! - `pipeline`: tasks accepted -> effect committed per second, against the raw etcd guarded
//!   transaction rate and JetStream ACKed publish rate measured on the same services just before.
//! - `overhead`: the same load with tracing on and off (`--no-trace`), alternated, medians compared.
//! - `memory`: the recording's peak memory and the trace's bytes per event for a large run.
//! - `chaos`: a campaign of chaos seeds with the reference protocol on etcd + JetStream, SQLite +
//!   Redis and the three-node cluster, each checked by the analyzer's `check` and against the
//!   ground truth ([`campaign`]).
//! - `detection`: each broken protocol variant under each chaos seed on both backends: how often
//!   the analyzer's `check` catches it, with which invariants, and which windows the seeds hit
//!   ([`detection`]).
//! - `system`: the example services (`examples/otel-python`, `examples/node-postgres`) under
//!   `recorder run --system --chaos`, reference and planted bugs, seed by seed, and their
//!   throughput beside the built-in protocol's ([`system`]).
//! - `explore`: `recorder explore` on each example service, reference and planted bugs: the
//!   schedules, the time, and which schedules found each bug ([`explore`]).
//! - `intake`: spans per second from the OTLP receiver's socket into a Parquet trace
//!   ([`intake`]).
//!
//! Recordings are child processes of the `recorder` binary (`recorder run`), as a user would start
//! them, so their time and memory are the recorder's own ([`args::BenchArgs::recorder`] finds
//! it); their traces are checked and read in this process, through the `outbox-analyzer` and
//! `outbox-trace` libraries. Results go to `<out>/results.json` and a Markdown summary to
//! standard output.

mod args;
mod campaign;
mod child;
mod detection;
mod explore;
mod intake;
mod raw;
mod recording;
mod runs;
mod system;
mod table;
mod verdict;

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use outbox_recorder::backend::services::{LocalService, ServiceKind};
use outbox_recorder::cli::exit::Exit;
use outbox_recorder::run::workdir::{self, Purpose};
use outbox_recorder::Failure;
use outbox_trace::{FigureRow, FigureTally, Kind, Step};
use serde_json::{json, Value};

use args::{BenchArgs, BenchPart};
use recording::Bench;
use table::{cell, Table};

fn main() -> ExitCode {
    let args = match BenchArgs::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                Exit::Usage as u8
            } else {
                Exit::Success as u8
            });
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        )
        .init();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("outbox-bench: {e}");
            ExitCode::from(e.exit() as u8)
        }
    }
}

/// Write transactions each task needs without batching: create (task + outbox record), mark,
/// commit (dedup key + result + counter).
const TXNS_PER_TASK: f64 = 3.0;

/// Runs the parts asked for and reports them. The services are started first, so a missing one
/// ends the bench with exit 4 before any part runs.
async fn run(args: &BenchArgs) -> Result<(), Failure> {
    let parts = if args.parts.is_empty() {
        BenchPart::ALL.to_vec()
    } else {
        args.parts.clone()
    };
    let needs_services = parts.iter().any(|p| {
        matches!(
            p,
            BenchPart::Pipeline | BenchPart::Overhead | BenchPart::Memory | BenchPart::System
        )
    });
    // The recorder binary is looked for first, so a missing one ends the bench before any part.
    let recorder = if parts.iter().any(|p| p.records()) {
        Some(args.recorder().map_err(Failure::run)?)
    } else {
        None
    };
    let workdir = workdir::create_with(Purpose::Bench).map_err(|e| Failure::run(e.into()))?;
    let services = if needs_services {
        Some((
            LocalService::start(ServiceKind::Etcd, workdir.path()).await?,
            LocalService::start(ServiceKind::Nats, workdir.path()).await?,
        ))
    } else {
        None
    };
    measure(args, parts, recorder, services.as_ref())
        .await
        .map_err(Failure::run)
}

async fn measure(
    args: &BenchArgs,
    parts: Vec<BenchPart>,
    recorder: Option<std::path::PathBuf>,
    services: Option<&(LocalService, LocalService)>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let bench = Bench {
        // Only `intake` runs without the recorder binary, and it records nothing.
        recorder: recorder.unwrap_or_default(),
        out: args.out.clone(),
        log: args.out.join("bench.log"),
    };
    // Parts run now replace theirs; the chaos and detection parts merge their runs with those
    // already there, so a part can be run over several sittings.
    let results_path = args.out.join("results.json");
    let mut results: serde_json::Map<String, Value> = std::fs::read(&results_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    let endpoints = services
        .map(|(e, n)| vec!["--etcd".to_string(), e.url(), "--nats".into(), n.url()])
        .unwrap_or_default();
    for part in parts {
        eprintln!("bench: {}", part.name());
        let value = match part {
            BenchPart::Pipeline => {
                let (etcd, nats) = services.expect("services started");
                bench
                    .pipeline(args, &etcd.url(), &nats.url(), &endpoints)
                    .await?
            }
            BenchPart::Overhead => bench.overhead(args, &endpoints)?,
            BenchPart::Memory => bench.memory(args, &endpoints)?,
            BenchPart::Chaos => bench.chaos(args, results.get(part.name()))?,
            BenchPart::Detection => bench.detection(args, results.get(part.name()))?,
            BenchPart::System => bench.system(args, results.get(part.name()), &endpoints)?,
            BenchPart::Explore => bench.explore(args)?,
            BenchPart::Intake => intake::measure(&args.out).await?,
        };
        println!("{}", markdown(part, &value));
        results.insert(part.name().to_string(), value);
        let path = args.out.join("results.json");
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "bench: results in {}",
        args.out.join("results.json").display()
    );
    Ok(())
}

impl Bench {
    async fn pipeline(
        &self,
        args: &BenchArgs,
        etcd: &str,
        nats: &str,
        endpoints: &[String],
    ) -> anyhow::Result<Value> {
        let etcd_rate = raw::etcd_txn_rate(etcd, 20_000, 64).await?;
        let js_rate = raw::jetstream_publish_rate(nats, 50_000, 256, 1).await?;
        let tasks = args.tasks.to_string();
        let run = self.record(
            "pipeline",
            &["--tasks", &tasks, "--workers", "4"],
            endpoints,
        )?;
        let stats = TraceStats::read(&run.trace)?;
        let throughput = stats.tasks as f64 / stats.accepted_to_committed_s;
        let bound = etcd_rate / TXNS_PER_TASK;
        let used = stats.write_txns as f64 / stats.tasks.max(1) as f64;
        let used_bound = etcd_rate / used.max(f64::MIN_POSITIVE);
        Ok(json!({
            "tasks": stats.tasks,
            "workers": 4,
            "etcd_guarded_txn_per_s": round(etcd_rate),
            "jetstream_acked_publish_per_s": round(js_rate),
            "txns_per_task_unbatched": TXNS_PER_TASK,
            "txns_per_task_used": round2(used),
            "etcd_bound_tasks_per_s": round(bound),
            "etcd_bound_for_txns_used_tasks_per_s": round(used_bound),
            "tasks_per_s": round(throughput),
            "ratio_to_etcd_bound": round2(throughput / bound),
            "ratio_to_etcd_bound_for_txns_used": round2(throughput / used_bound),
            "ratio_to_jetstream": round2(throughput / js_rate),
            "commit_conflicts": stats.conflicts,
        }))
    }

    fn overhead(&self, args: &BenchArgs, endpoints: &[String]) -> anyhow::Result<Value> {
        let tasks = args.tasks.to_string();
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for round in 0..3 {
            for (traced, times) in [(true, &mut on), (false, &mut off)] {
                let mut flags = vec!["--tasks", tasks.as_str(), "--workers", "4"];
                if !traced {
                    flags.push("--no-trace");
                }
                let name = format!("overhead-{}-{round}", if traced { "on" } else { "off" });
                let run = self.record(&name, &flags, endpoints)?;
                times.push(TraceStats::elapsed_ms(&run.trace)?);
            }
        }
        let (on_ms, off_ms) = (median(&mut on), median(&mut off));
        Ok(json!({
            "tasks": args.tasks,
            "runs_each": 3,
            "traced_ms": on,
            "untraced_ms": off,
            "median_traced_ms": on_ms,
            "median_untraced_ms": off_ms,
            "overhead_percent": round2(100.0 * (on_ms as f64 - off_ms as f64) / off_ms.max(1) as f64),
        }))
    }

    fn memory(&self, args: &BenchArgs, endpoints: &[String]) -> anyhow::Result<Value> {
        let tasks = args.big_tasks.to_string();
        let run = self.record("memory", &["--tasks", &tasks, "--workers", "4"], endpoints)?;
        let rows = outbox_trace::TraceFile::open(&run.trace)?.info().rows;
        let bytes = std::fs::metadata(&run.trace)?.len();
        Ok(json!({
            "tasks": args.big_tasks,
            "events": rows,
            "trace_bytes": bytes,
            "bytes_per_event": round2(bytes as f64 / rows.max(1) as f64),
            "peak_rss_mib": round(run.finished.peak_rss_kib as f64 / 1024.0),
            "wall_s": round2(run.finished.wall.as_secs_f64()),
        }))
    }

    /// The chaos campaign, merged with the outcomes `previous` holds.
    fn chaos(&self, args: &BenchArgs, previous: Option<&Value>) -> anyhow::Result<Value> {
        let jobs = campaign::jobs(args.seeds, args.tasks);
        let fresh = runs::run_all(self, "chaos", &jobs, args.jobs)?;
        Ok(campaign::tables(&runs::merge(previous, fresh)))
    }

    /// The example services' runs under `--system --chaos`, merged with those `previous` holds,
    /// and the throughput of each example that has a calm scenario beside the built-in
    /// protocol's (on `endpoints`) with the same tasks and workers.
    fn system(
        &self,
        args: &BenchArgs,
        previous: Option<&Value>,
        endpoints: &[String],
    ) -> anyhow::Result<Value> {
        std::fs::create_dir_all(self.out.join("system"))?;
        let root = args.root()?;
        let examples = self.examples(args);
        let jobs = system::jobs(&root, &examples, args.seeds);
        let fresh = runs::run_all(self, "system", &jobs, args.jobs)?;
        let mut rows = Vec::new();
        for example in &examples {
            let Some(calm) = example.calm else { continue };
            eprintln!("bench: system throughput {}", example.label);
            let tasks = system::THROUGHPUT_TASKS.to_string();
            let file = system::file(&root, example).display().to_string();
            let own = self.record(
                &format!("system/{}-throughput", example.label),
                &["--system", &file, "--scenario", calm, "--tasks", &tasks],
                &[],
            )?;
            let workers = example.workers.to_string();
            let builtin = self.record(
                &format!("system/{}-builtin", example.label),
                &["--tasks", &tasks, "--workers", &workers],
                endpoints,
            )?;
            let (own, builtin) = (
                TraceStats::read(&own.trace)?,
                TraceStats::read(&builtin.trace)?,
            );
            let rate = |s: &TraceStats| round2(s.tasks as f64 / s.accepted_to_committed_s);
            rows.push(system::throughput_row(
                example,
                own.tasks,
                rate(&own),
                rate(&builtin),
            ));
        }
        let throughput = system::throughput_table(previous, rows);
        Ok(system::tables(&runs::merge(previous, fresh), &throughput))
    }

    /// `recorder explore` on each example, once per build.
    fn explore(&self, args: &BenchArgs) -> anyhow::Result<Value> {
        std::fs::create_dir_all(self.out.join("explore"))?;
        let root = args.root()?;
        let mut rows = Vec::new();
        for example in self.examples(args) {
            for (build, flags) in explore::builds(&example) {
                eprintln!("bench: explore {} {build}", example.label);
                let name = format!("explore/{}-{build}", example.label);
                let trace = self.out.join(format!("{name}.parquet"));
                let json = self.out.join(format!("{name}.json"));
                let all = explore::args(&root, &example, &flags, &trace, &json);
                let finished = child::run(&self.recorder, &all, &self.log)?;
                anyhow::ensure!(
                    matches!(finished.code, Some(0 | 1 | 3)),
                    "recorder {} failed ({:?}); see {}",
                    all.join(" "),
                    finished.code,
                    self.log.display()
                );
                let search: Value = serde_json::from_slice(&std::fs::read(&json)?)?;
                rows.push(explore::row(
                    &example,
                    build,
                    &search,
                    finished.wall.as_secs_f64(),
                ));
            }
        }
        Ok(explore::table(rows))
    }

    /// The examples `--example` names (all without it).
    fn examples(&self, args: &BenchArgs) -> Vec<system::Example> {
        if args.examples.is_empty() {
            system::EXAMPLES.to_vec()
        } else {
            args.examples
                .iter()
                .filter_map(|label| system::example(label))
                .collect()
        }
    }

    /// The detection runs, merged with the outcomes `previous` holds.
    fn detection(&self, args: &BenchArgs, previous: Option<&Value>) -> anyhow::Result<Value> {
        std::fs::create_dir_all(self.out.join("detection"))?;
        let jobs = detection::jobs(args.seeds);
        let fresh = runs::run_all(self, "detection", &jobs, args.jobs)?;
        Ok(detection::tables(&runs::merge(previous, fresh)))
    }
}

/// The figures a benchmark reads from a trace.
#[derive(Default)]
struct TraceStats {
    tasks: u64,
    accepted_to_committed_s: f64,
    write_txns: u64,
    conflicts: u64,
}

impl TraceStats {
    fn read(path: &Path) -> anyhow::Result<Self> {
        let trace = outbox_trace::read_trace(path)?;
        let mut s = TraceStats::default();
        let (mut first_accept, mut last_commit) = (i64::MAX, i64::MIN);
        let mut revs = std::collections::HashSet::new();
        let mut tally: FigureTally<&str> = FigureTally::default();
        for e in &trace.events {
            tally.add(FigureRow::of(e));
            match e.kind {
                Kind::TaskAccepted => first_accept = first_accept.min(e.ts_ns),
                Kind::EffectCommitted => last_commit = last_commit.max(e.ts_ns),
                _ => {}
            }
            if matches!(
                e.kind,
                Kind::TaskAccepted | Kind::OutboxMarked | Kind::EffectCommitted
            ) {
                revs.extend(e.store_rev);
            }
        }
        let figures = tally.figures();
        s.tasks = figures.tasks;
        s.conflicts = figures.conflicts;
        s.write_txns = revs.len() as u64;
        s.accepted_to_committed_s = (last_commit - first_accept).max(1) as f64 / 1e9;
        Ok(s)
    }

    /// The scenario's time from its actors' start to quiet, from `run_end`.
    fn elapsed_ms(path: &Path) -> anyhow::Result<u64> {
        let trace = outbox_trace::read_trace(path)?;
        trace
            .events
            .iter()
            .filter(|e| e.kind == Kind::RunEnd)
            .find_map(|e| match Step::try_from(e) {
                Ok(Step::RunEnd(end)) => end.elapsed_ms,
                _ => None,
            })
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{} has no {}.{}",
                    path.display(),
                    Kind::RunEnd,
                    outbox_trace::detail_key!(RunEnd.elapsed_ms)
                )
            })
    }
}

fn markdown(part: BenchPart, value: &Value) -> String {
    let mut out = format!("\n### {}\n\n", part.name());
    match value {
        Value::Array(rows) => {
            let columns: Vec<String> = rows
                .first()
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            let mut t = Table::new(columns.clone());
            for row in rows {
                t.push(columns.iter().map(|k| row[k.as_str()].clone()).collect());
            }
            out += &t.markdown();
        }
        // A part made of tables (chaos, detection): each table, not the raw runs.
        Value::Object(map) if map.contains_key("runs") => {
            for (name, value) in map {
                if let Ok(t) = serde_json::from_value::<Table>(value.clone()) {
                    out += &format!("{name}:\n\n{}\n", t.markdown());
                }
            }
        }
        Value::Object(map) => {
            out += "| figure | value |\n|---|---|\n";
            for (k, v) in map {
                out += &format!("| {k} | {} |\n", cell(v));
            }
        }
        other => out += &other.to_string(),
    }
    out
}

fn median(values: &mut [u64]) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

fn round(x: f64) -> f64 {
    x.round()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
