//! What the analyzer's `check` says of a benchmark's trace: the same check as `analyzer check`,
//! run in this process through the `outbox-analyzer` library, read as data (the combined verdict
//! and the ids of the invariants that failed).

use std::path::Path;

use anyhow::Context as _;
use outbox_analyzer::check::{check_paths, Verdict as InvariantVerdict};

/// What `analyzer check` said of a trace.
pub struct Verdict {
    /// The trace's verdict (`valid`, `invalid`, `unknown`).
    pub verdict: String,
    /// The ids of the invariants that failed.
    pub failed: Vec<String>,
}

/// Checks `trace` as `analyzer check` does and reads its verdict.
pub fn check(trace: &Path) -> anyhow::Result<Verdict> {
    let report = check_paths(&[trace.to_path_buf()])
        .with_context(|| format!("analyzer check {}", trace.display()))?;
    let failed = report
        .scenarios
        .iter()
        .flat_map(|s| &s.outcomes)
        .filter(|o| o.verdict == InvariantVerdict::Fail)
        .map(|o| o.invariant.id().to_string())
        .collect();
    Ok(Verdict {
        verdict: report.verdict.as_str().to_string(),
        failed,
    })
}
