//! The boundaries diagram: the representative task's steps left to right, a solid box around each
//! transaction (the steps that share one `store_rev`), dashed boxes for the steps outside every
//! transaction, and under them how many transactions held which kinds; and the same as text and
//! as a Mermaid flowchart.

use crate::views::boundaries::{groups, meaning, Boundaries};

use super::figure::{Align, Figure, Prim, GREEN, GREY, INK, ORANGE, RED};

const BOX_W: i32 = 215;
const GAP: i32 = 40;
const LINE: i32 = 34;
const TOP: i32 = 80;

/// The boundaries as primitives.
pub fn boundaries_figure(b: &Boundaries) -> Figure {
    let groups = groups(&b.steps);
    let tallest = groups.iter().map(|g| g.len() as i32).max().unwrap_or(1);
    let box_h = tallest * LINE + 36;
    let width = (groups.len() as i32 * (BOX_W + GAP) + GAP).max(760);
    let table_top = TOP + box_h + 40;
    let height = table_top + (b.shapes.len() as i32 + 3) * 20 + 10;
    let mut f = Figure::new(width, height);
    let protocol = b.protocol.as_deref().unwrap_or("?");
    let task = b.task.as_deref().unwrap_or("-");
    let title = format!(
        "atomic boundaries · {} · protocol {protocol} · task {task}",
        b.scenario
    );
    f.text((20, 22), &title, 16, INK, Align::Left);
    let (verdict, color) = if b.create_is_atomic() {
        ("task and outbox record in ONE transaction", GREEN)
    } else {
        ("task and outbox record NOT in one transaction", RED)
    };
    f.text((20, 48), verdict, 13, color, Align::Left);
    for (i, g) in groups.iter().enumerate() {
        let x0 = GAP + i as i32 * (BOX_W + GAP);
        let inside = g[0].rev.is_some();
        let stroke = if inside { GREEN } else { ORANGE };
        f.push(Prim::Rect {
            min: (x0, TOP),
            max: (x0 + BOX_W, TOP + box_h),
            stroke: Some(stroke),
            fill: None,
            dashed: !inside,
        });
        let head = match g[0].rev {
            Some(rev) => format!("transaction rev {rev}"),
            None => "outside any transaction".to_string(),
        };
        f.text((x0 + BOX_W / 2, TOP + 14), &head, 12, stroke, Align::Center);
        for (j, s) in g.iter().enumerate() {
            let y = TOP + 36 + j as i32 * LINE;
            f.text((x0 + 8, y), s.kind.as_str(), 12, INK, Align::Left);
            f.text((x0 + 8, y + 14), meaning(s.kind), 10, GREY, Align::Left);
        }
        if i + 1 < groups.len() {
            let y = TOP + box_h / 2;
            f.arrow(x0 + BOX_W + 2, x0 + BOX_W + GAP - 2, y, GREY, false);
        }
    }
    f.text(
        (20, table_top),
        "transactions by what they held (equal store_rev):",
        12,
        INK,
        Align::Left,
    );
    for (i, s) in b.shapes.iter().enumerate() {
        let line = format!("{:<9} {} x  {}", s.role.as_str(), s.count, s.kinds_text());
        f.text(
            (30, table_top + 20 * (i as i32 + 1)),
            &line,
            12,
            INK,
            Align::Left,
        );
    }
    let extra = table_top + 20 * (b.shapes.len() as i32 + 1);
    if b.tasks_without_intent > 0 {
        let line = format!(
            "{} accepted task(s) never got an intent",
            b.tasks_without_intent
        );
        f.text((30, extra), &line, 12, RED, Align::Left);
    }
    let conflicts = format!("commit conflicts (revision races retried): {}", b.conflicts);
    f.text((30, extra + 20), &conflicts, 12, INK, Align::Left);
    f
}

/// The boundaries as text.
pub fn boundaries_text(b: &Boundaries) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    use outbox_trace::output::escape::terminal_line as shown;
    let protocol = shown(b.protocol.as_deref().unwrap_or("?"));
    let _ = writeln!(out, "{} (protocol {protocol})", shown(&b.scenario));
    if let Some(t) = &b.task {
        let _ = writeln!(out, "task {}:", shown(t));
    }
    for group in groups(&b.steps) {
        match group[0].rev {
            Some(rev) => {
                let _ = writeln!(out, "  [transaction store_rev {rev}]");
                for s in group {
                    let _ = writeln!(
                        out,
                        "      {:<18} {} (seq {})",
                        s.kind,
                        meaning(s.kind),
                        s.seq
                    );
                }
            }
            None => {
                for s in group {
                    let _ = writeln!(
                        out,
                        "  outside: {:<9} {} (seq {})",
                        s.kind,
                        meaning(s.kind),
                        s.seq
                    );
                }
            }
        }
    }
    let _ = writeln!(out, "transactions by what they held:");
    for s in &b.shapes {
        let _ = writeln!(
            out,
            "  {:<8} {} x {}",
            s.role.as_str(),
            s.count,
            s.kinds_text()
        );
    }
    if b.tasks_without_intent > 0 {
        let _ = writeln!(
            out,
            "  {} accepted task(s) never got an intent",
            b.tasks_without_intent
        );
    }
    let verdict = if b.create_is_atomic() {
        "task and outbox record committed together"
    } else {
        "task and outbox record NOT committed together"
    };
    let _ = writeln!(out, "create: {verdict}; commit conflicts: {}", b.conflicts);
    out
}

/// The boundaries as a Mermaid flowchart: one subgraph per transaction, dashed nodes outside.
pub fn boundaries_mermaid(b: &Boundaries) -> String {
    use std::fmt::Write;
    let mut out = String::from("flowchart LR\n");
    let mut prev: Option<String> = None;
    for (g, group) in groups(&b.steps).into_iter().enumerate() {
        let first = format!("s{g}_0");
        match group[0].rev {
            Some(rev) => {
                let _ = writeln!(out, "    subgraph t{g}[\"transaction store_rev {rev}\"]");
                for (i, s) in group.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "        s{g}_{i}[\"{}<br/>{}\"]",
                        s.kind,
                        meaning(s.kind)
                    );
                }
                let _ = writeln!(out, "    end");
            }
            None => {
                let _ = writeln!(
                    out,
                    "    {first}([\"{}<br/>{} - outside any transaction\"])",
                    group[0].kind,
                    meaning(group[0].kind)
                );
                let _ = writeln!(out, "    style {first} stroke-dasharray: 5 5");
            }
        }
        if let Some(p) = prev {
            let _ = writeln!(out, "    {p} --> {first}");
        }
        prev = Some(format!("s{g}_{}", group.len() - 1));
    }
    out
}
