//! Times the phases of `analyzer check` on one file: loading, each invariant alone, then every
//! invariant and the figures in the one pass `check` makes.
//! `cargo run --release -p outbox-analyzer --example phases -- trace.parquet [--load-only]`
//!
//! `--decode-only` times the contract reader alone; with `DICT=low` (run, scenario, backend,
//! actor, kind) or `DICT=all` (also task, event, aggregate) it reads those string columns as
//! dictionaries; `SKIP=ts_ns,detail` skips those columns.

use std::path::PathBuf;
use std::time::Instant;

use outbox_analyzer::check::Invariant;

use outbox_analyzer::model::load::Loaded;

fn main() -> anyhow::Result<()> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "synth.parquet".into()),
    );
    let start = Instant::now();
    if std::env::args().any(|a| a == "--decode-only") {
        let dictionary: Vec<&'static str> = match std::env::var("DICT").as_deref() {
            Ok("low") => vec!["run_id", "scenario", "backend", "actor", "kind"],
            Ok("all") => vec![
                "run_id",
                "scenario",
                "backend",
                "actor",
                "kind",
                "task_id",
                "event_id",
                "aggregate_id",
            ],
            _ => vec![],
        };
        let skip: Vec<&'static str> = std::env::var("SKIP")
            .unwrap_or_default()
            .split(',')
            .filter_map(|name| {
                let columns = outbox_trace::schema::COLUMNS.iter();
                columns.map(|c| c.name).find(|&c| c == name)
            })
            .collect();
        let options = outbox_trace::ReadOptions {
            dictionary,
            skip,
            ..Default::default()
        };
        let file = outbox_trace::TraceFile::open_with(&path, &options)?;
        let mut rows = 0;
        for batch in file.batches() {
            rows += batch?.num_rows();
        }
        println!(
            "decode          {:>8.3} s  ({rows} rows)",
            start.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let mut loaded = Loaded::default();
    loaded.load(&path)?;
    let rows: usize = loaded.histories.iter().map(|h| h.rows.len()).sum();
    println!(
        "load            {:>8.3} s  ({rows} rows kept)",
        start.elapsed().as_secs_f64()
    );
    if std::env::args().any(|a| a == "--load-only") {
        return Ok(());
    }
    for inv in Invariant::ALL {
        let t = Instant::now();
        for h in &loaded.histories {
            std::hint::black_box(inv.check(h, &loaded.names));
        }
        println!("{:<24}{:>8.3} s", inv.id(), t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    for h in &loaded.histories {
        std::hint::black_box(outbox_analyzer::check::check_all(h, &loaded.names));
    }
    println!("all, one pass   {:>8.3} s", t.elapsed().as_secs_f64());
    println!("total           {:>8.3} s", start.elapsed().as_secs_f64());
    Ok(())
}
