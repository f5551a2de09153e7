//! The chain layout as plain text: one line per step, pauses and the cap included.

use std::fmt::Write;

use super::layout::{ChainLayout, Shape};

/// The layout as text lines.
pub fn chain_text(l: &ChainLayout) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", l.title);
    if let Some(n) = &l.note {
        let _ = writeln!(out, "{n}");
    }
    let lane = |i: usize| l.lanes[i].key.as_str();
    let mut gaps = l.gaps.iter().peekable();
    for s in &l.steps {
        while let Some(g) = gaps.next_if(|g| g.y1 <= s.y) {
            let _ = writeln!(out, "  ... {}", g.label);
        }
        let who = match &s.shape {
            Shape::Arrow { from, to } => format!("{} -> {}", lane(*from), lane(*to)),
            Shape::Note { lane: i } | Shape::Crash { lane: i } | Shape::Restart { lane: i } => {
                lane(*i).to_string()
            }
        };
        let mark = if s.marked { "*" } else { " " };
        let _ = writeln!(
            out,
            "{mark} seq {:>5}  {:>4}.{:03} s  {who:<20} {}",
            s.seq,
            s.ms / 1000,
            s.ms % 1000,
            s.label
        );
    }
    if l.hidden > 0 {
        let _ = writeln!(out, "  {} more events not shown", l.hidden);
    }
    out
}
