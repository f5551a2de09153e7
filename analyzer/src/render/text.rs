//! The chain layout as plain text: one line per step, pauses and the cap included.

use std::fmt::Write;

use outbox_trace::output::escape::terminal_line as shown;

use super::layout::{seconds, ChainLayout, Shape};

/// The layout as text lines; every value from the trace shown escaped ([`shown`]), so none
/// reaches a terminal as an escape sequence or a line of its own.
pub fn chain_text(l: &ChainLayout) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", shown(&l.title));
    if let Some(n) = &l.note {
        let _ = writeln!(out, "{}", shown(n));
    }
    let lane = |i: usize| shown(l.lanes[i].key.as_str());
    let mut gaps = l.gaps.iter().peekable();
    for s in &l.steps {
        while let Some(g) = gaps.next_if(|g| g.y1 <= s.y) {
            let _ = writeln!(out, "  ... {}", shown(&g.label));
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
            "{mark} seq {:>5}  {:>8} s  {who:<20} {}",
            s.seq,
            seconds(s.ms),
            shown(&s.label)
        );
    }
    if l.hidden > 0 {
        let _ = writeln!(out, "  {} more events not shown", l.hidden);
    }
    out
}
