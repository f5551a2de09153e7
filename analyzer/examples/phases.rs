//! Times the phases of `analyzer check` on one file: loading, each invariant, the counts.
//! `cargo run --release -p outbox-analyzer --example phases -- trace.parquet [--load-only]`

use std::path::PathBuf;
use std::time::Instant;

use outbox_analyzer::check::Invariant;
use outbox_analyzer::counts::Counts;
use outbox_analyzer::load::Loaded;

fn main() -> anyhow::Result<()> {
    let path = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "synth.parquet".into()),
    );
    let start = Instant::now();
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
            std::hint::black_box(inv.check(h));
        }
        println!("{:<24}{:>8.3} s", inv.id(), t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    for h in &loaded.histories {
        std::hint::black_box(Counts::of(h));
    }
    println!("counts          {:>8.3} s", t.elapsed().as_secs_f64());
    println!("total           {:>8.3} s", start.elapsed().as_secs_f64());
    Ok(())
}
