//! The chain layout as a Mermaid `sequenceDiagram`: participants for lanes, arrows for messages,
//! notes for what one participant did alone, crashes and pauses. Renders in Markdown on Git forges.

use std::fmt::Write;

use super::layout::{ChainLayout, Shape, Tone};

/// Mermaid reads `#...;` as an entity code and `;` as a line end: `#` is written as its entity
/// `#35;`, other `;` become `,`; control characters and line ends are shown escaped, so a value
/// stays on its line.
fn clean(s: &str) -> String {
    outbox_trace::output::escape::terminal_line(s)
        .replace(';', ",")
        .replace('#', "#35;")
}

/// A participant id: letters, digits and `_` only.
fn id(key: &str) -> String {
    key.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The layout as Mermaid text.
pub fn chain_mermaid(l: &ChainLayout) -> String {
    let mut out = String::from("sequenceDiagram\n");
    let _ = writeln!(out, "    title {}", clean(&l.title));
    for lane in &l.lanes {
        let _ = writeln!(
            out,
            "    participant {} as {}",
            id(&lane.key),
            clean(&lane.title)
        );
    }
    let ids: Vec<String> = l.lanes.iter().map(|x| id(&x.key)).collect();
    let (first, last) = (ids[0].clone(), ids[ids.len() - 1].clone());
    if let Some(n) = &l.note {
        let _ = writeln!(out, "    Note over {first},{last}: {}", clean(n));
    }
    let mut gaps = l.gaps.iter().peekable();
    for s in &l.steps {
        while let Some(g) = gaps.next_if(|g| g.y1 <= s.y) {
            let _ = writeln!(out, "    Note over {first},{last}: {}", clean(&g.label));
        }
        let label = if s.marked {
            format!("[violation] {}", clean(&s.label))
        } else {
            clean(&s.label)
        };
        let line = match &s.shape {
            Shape::Arrow { from, to } => {
                let arrow = if s.tone == Tone::Loss { "--x" } else { "->>" };
                format!("{}{arrow}{}: {label}", ids[*from], ids[*to])
            }
            Shape::Note { lane } => format!("Note right of {}: {label}", ids[*lane]),
            Shape::Crash { lane } => format!("Note over {}: CRASH {label}", ids[*lane]),
            Shape::Restart { lane } => format!("Note over {}: {label}", ids[*lane]),
        };
        let _ = writeln!(out, "    {line}");
    }
    if l.hidden > 0 {
        let _ = writeln!(
            out,
            "    Note over {first},{last}: {} more events not shown",
            l.hidden
        );
    }
    out
}
