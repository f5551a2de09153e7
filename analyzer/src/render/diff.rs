//! Where two runs part ways: as text, the first divergence then one line per aligned task; as a
//! picture, the diverging task's two chains side by side.

use super::figure::{Align, Figure, INK, RED};
use super::layout;
use crate::views::chain::{task_chain, Chain};
use crate::views::diff::Diff;
use crate::views::scene::Scene;

/// The diff as text; every value from the traces shown escaped, so none reaches a terminal as an
/// escape sequence or a line of its own.
pub fn diff_text(d: &Diff, a: &str, b: &str) -> String {
    use outbox_trace::output::escape::terminal_line as shown;
    use std::fmt::Write;
    let mut out = format!(
        "scenario {}: first run {}, second run {}\n",
        shown(&d.scenario),
        shown(a),
        shown(b)
    );
    if !d.by_id {
        out.push_str("task ids differ: tasks aligned by acceptance order\n");
    }
    match &d.first {
        Some(first) => {
            let _ = writeln!(out, "first divergence: {}", shown(&first.describe()));
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
                let _ = writeln!(out, "  {}", shown(&div.describe()));
            }
            None => {
                let _ = writeln!(out, "  {}: same steps", shown(&name));
            }
        }
    }
    out
}

/// The diverging task's two chains side by side, the diverging steps marked.
pub fn side_by_side<'a>(a: &Scene<'a>, b: &Scene<'a>, d: &Diff, na: &str, nb: &str) -> Figure {
    let (ta, tb) = match &d.first {
        Some(f) => (f.task_a.clone(), f.task_b.clone()),
        None => d
            .tasks
            .first()
            .map(|(x, y, _)| (x.clone(), y.clone()))
            .unwrap_or_default(),
    };
    let chain_of = |s: &Scene<'a>, t: &str| -> Option<Chain<'a>> { Some(task_chain(*s, s.id(t)?)) };
    let (Some(mut ca), Some(mut cb)) = (chain_of(a, &ta), chain_of(b, &tb)) else {
        return Figure::new(40, 40);
    };
    if let Some(f) = &d.first {
        ca.marked.extend(f.a.as_ref().map(|s| s.seq));
        cb.marked.extend(f.b.as_ref().map(|s| s.seq));
    }
    ca.title = format!("{na} · {}", ca.title);
    cb.title = format!("{nb} · {}", cb.title);
    let (fa, fb) = (
        super::chain_figure(&layout::layout(&ca)),
        super::chain_figure(&layout::layout(&cb)),
    );
    let mut fig = Figure::new(fa.width + fb.width + 20, fa.height.max(fb.height) + 40);
    let head = d
        .first
        .as_ref()
        .map_or_else(|| "no divergence".to_string(), |f| f.describe());
    fig.text(
        (20, 18),
        &layout::fit(&head, fig.width - 40),
        14,
        if d.first.is_some() { RED } else { INK },
        Align::Left,
    );
    fig.overlay(&fa, 0, 36);
    fig.line(
        (fa.width + 10, 40),
        (fa.width + 10, fig.height - 4),
        (200, 200, 200),
        1,
        false,
    );
    fig.overlay(&fb, fa.width + 20, 36);
    fig
}
