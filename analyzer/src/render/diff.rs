//! Where two runs part ways, as text: the first divergence, then one line per aligned task.

use crate::views::diff::Diff;

/// The diff as text.
pub fn diff_text(d: &Diff, a: &str, b: &str) -> String {
    use std::fmt::Write;
    let mut out = format!("scenario {}: first run {a}, second run {b}\n", d.scenario);
    if !d.by_id {
        out.push_str("task ids differ: tasks aligned by acceptance order\n");
    }
    match &d.first {
        Some(first) => {
            let _ = writeln!(out, "first divergence: {}", first.describe());
        }
        None => out.push_str("no divergence: every aligned task took the same steps\n"),
    }
    for (x, y, div) in &d.tasks {
        let name = if x == y {
            x.clone()
        } else {
            format!("{x} / {y}")
        };
        match div {
            Some(div) => {
                let _ = writeln!(out, "  {}", div.describe());
            }
            None => {
                let _ = writeln!(out, "  {name}: same steps");
            }
        }
    }
    out
}
