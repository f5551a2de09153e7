//! Words for what a scenario tried ([`Coverage`]): a line for each named fault that never fired
//! (it leaves the scenario `unknown`), and one summary line of the rest.

use crate::check::coverage::Coverage;

/// How many unreached faults the summary names before it only counts.
const NAMED: usize = 3;

/// The lines for `coverage`, none where the producer recorded no faults.
pub fn fault_lines(coverage: &Coverage) -> Vec<String> {
    if coverage.faults.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = coverage
        .unfired_named()
        .map(|f| {
            format!(
                "fault {}: never fired: {}",
                f.spec,
                f.why.as_deref().unwrap_or("the producer gave no reason")
            )
        })
        .collect();
    let mut summary = format!(
        "faults: {} tried, {} fired",
        coverage.faults.len(),
        coverage.fired()
    );
    let unreached: Vec<String> = coverage
        .unreached()
        .map(|f| format!("{} ({})", f.spec, f.origin.as_str()))
        .collect();
    if !unreached.is_empty() {
        summary.push_str("; not reached, not judged: ");
        summary.push_str(&unreached[..unreached.len().min(NAMED)].join(", "));
        if unreached.len() > NAMED {
            summary.push_str(&format!(" and {} more", unreached.len() - NAMED));
        }
    }
    lines.push(summary);
    lines
}
