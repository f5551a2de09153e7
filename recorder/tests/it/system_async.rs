//! `recorder run --system` on roles that export asynchronously: the Python example with a
//! `BatchSpanProcessor` in every process (`outbox-system-batch.toml`, `export = "async"` roles).
//! The recorder sets the standard batch-processor variables for those roles, so a span reaches it
//! within milliseconds of its end and a kill aimed after a step fires while the process runs; its
//! crash row says the kill was not on a held synchronous export (`announced: false`).

use crate::common::{self, output_text, rows};

use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, RunVerdict};
use outbox_trace::{Kind, Step};

fn batch_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system-batch.toml")
}

#[test]
fn an_aimed_kill_of_a_batch_exporting_worker_fires() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = common::record_system(
        dir.path(),
        &batch_example(),
        &["--scenario", "worker-killed-after-commit"],
    );
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let start = rows(&events, Kind::RunStart);
    let Step::RunStart(start) = common::step(start[0]) else {
        unreachable!()
    };
    let system = start.system.expect("the system file is recorded");
    assert_eq!(system["roles"]["worker"]["export"], "async", "{system}");
    assert_eq!(system["env"]["OTEL_SPAN_PROCESSOR"], "batch", "{system}");
    let crashes: Vec<(String, Option<bool>)> = rows(&events, Kind::Crash)
        .iter()
        .map(|e| match common::step(e) {
            Step::Crash { crash, .. } => (crash.point.into(), crash.announced),
            _ => unreachable!(),
        })
        .collect();
    assert!(
        crashes.contains(&("worker:after-effect_committed".to_string(), Some(false))),
        "{crashes:?}\n{}",
        output_text(&output)
    );
    assert!(!rows(&events, Kind::Restart).is_empty());
    // A life that may have lost spans never makes the reference fail.
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_ne!(
        report.verdict,
        RunVerdict::Invalid,
        "{}",
        output_text(&output)
    );
}
