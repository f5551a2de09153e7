//! What `analyzer check --json` says of a benchmark's trace, read through the fields the JSON output
//! documents.

use std::path::Path;

use anyhow::Context as _;

/// What `analyzer check` said of a trace.
pub struct Verdict {
    /// The trace's verdict (`valid`, `invalid`, `unknown`).
    pub verdict: String,
    /// The ids of the invariants that failed.
    pub failed: Vec<String>,
}

/// Runs `analyzer check --json` on `trace` and reads its verdict.
pub fn check(analyzer: &Path, trace: &Path, log: &Path) -> anyhow::Result<Verdict> {
    let output = std::process::Command::new(analyzer)
        .args(["check", "--json"])
        .arg(trace)
        .output()
        .with_context(|| format!("running {}", analyzer.display()))?;
    let report: CheckJson = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "analyzer check {} gave no JSON ({}); see {}",
            trace.display(),
            String::from_utf8_lossy(&output.stderr).trim(),
            log.display()
        )
    })?;
    let failed = report
        .scenarios
        .into_iter()
        .flat_map(|s| s.invariants)
        .filter(|i| i.verdict == "fail")
        .map(|i| i.id)
        .collect();
    Ok(Verdict {
        verdict: report.verdict,
        failed,
    })
}

/// What the bench reads of `analyzer check --json` (the contract's "JSON output").
#[derive(serde::Deserialize)]
struct CheckJson {
    verdict: String,
    scenarios: Vec<CheckScenario>,
}

#[derive(serde::Deserialize)]
struct CheckScenario {
    invariants: Vec<CheckInvariant>,
}

#[derive(serde::Deserialize)]
struct CheckInvariant {
    id: String,
    verdict: String,
}
