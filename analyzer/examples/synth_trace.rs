//! Writes a large valid `outbox-trace/1` file for timing the analyzer (see
//! [`outbox_analyzer::model::synth`]):
//! `cargo run --release -p outbox-analyzer --example synth_trace -- out.parquet 10000000`.

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(args.next().unwrap_or_else(|| "synth.parquet".into()));
    let rows: u64 = args.next().map_or(Ok(1_000_000), |n| n.parse())?;
    let (seq, n) = outbox_analyzer::model::synth::write(&path, rows)?;
    println!("{}: {seq} rows, {n} tasks", path.display());
    Ok(())
}
