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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::check;

    fn example(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../traces/examples")
            .join(name)
    }

    /// The same verdict and failing ids as `analyzer check --json` gives for these traces.
    #[test]
    fn the_verdict_and_the_failing_invariants_are_the_analyzers() {
        let broken = check(&example("ack-before-commit.parquet")).unwrap();
        assert_eq!(broken.verdict, "invalid");
        let mut failed = broken.failed;
        failed.sort();
        failed.dedup();
        assert_eq!(failed, ["ack-after-commit", "no-lost-task"]);

        let reference = check(&example("reference.parquet")).unwrap();
        assert_eq!(reference.verdict, "valid");
        assert!(reference.failed.is_empty(), "{:?}", reference.failed);

        let missing = check(&example("no-such.parquet")).err().unwrap();
        assert!(
            format!("{missing:#}").contains("no-such.parquet"),
            "{missing:#}"
        );
    }
}
