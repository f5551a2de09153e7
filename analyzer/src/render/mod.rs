//! Pictures and text from layouts. [`layout`] places a chain as data, each step drawn as [`steps`]
//! says for its kind; [`chain_figure`] turns it into primitives; [`svg`] and [`png`] draw
//! primitives; [`mermaid`] and [`text`] write the same layout as words.

pub mod boundaries;
pub mod compare;
pub mod diff;
pub mod figure;
pub mod font;
pub mod layout;
pub mod mermaid;
pub mod png;
pub mod steps;
pub mod svg;
pub mod text;
pub mod timeline;

use figure::{Align, Figure, Prim, Rgb, BLUE, GREEN, GREY, HIGHLIGHT, INK, ORANGE, PALE, RED};
use layout::{ChainLayout, Shape, Tone};

/// Why a picture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The compiled-in font was rejected.
    #[error("the built-in font could not be loaded")]
    Font,
    /// plotters failed.
    #[error("drawing failed: {0}")]
    Draw(String),
}

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Scalable vector graphics.
    Svg,
    /// A bitmap.
    Png,
    /// A Mermaid `sequenceDiagram` (renders in Markdown on Git forges).
    Mermaid,
    /// Plain text.
    Text,
}

/// The colour of a step of tone `t`.
pub fn tone_color(t: Tone) -> Rgb {
    match t {
        Tone::Plain => INK,
        Tone::Effect => GREEN,
        Tone::Absorbed => BLUE,
        Tone::Retry => ORANGE,
        Tone::Loss => RED,
    }
}

/// The chain layout as primitives.
pub fn chain_figure(l: &ChainLayout) -> Figure {
    let mut f = Figure::new(l.width, l.height);
    f.text((20, 20), &l.title, 16, INK, Align::Left);
    if let Some(n) = &l.note {
        f.text((20, 42), n, 11, RED, Align::Left);
    }
    for s in l.steps.iter().filter(|s| s.marked) {
        f.push(Prim::Rect {
            min: (4, s.y - layout::ROW / 2),
            max: (l.width - 4, s.y + layout::ROW / 2),
            stroke: None,
            fill: Some(HIGHLIGHT),
            dashed: false,
        });
    }
    for g in &l.gaps {
        f.push(Prim::Rect {
            min: (4, g.y0 + 3),
            max: (l.width - 4, g.y1 - 3),
            stroke: None,
            fill: Some(PALE),
            dashed: false,
        });
        f.text(
            (layout::LEFT - 30, (g.y0 + g.y1) / 2),
            &g.label,
            11,
            ORANGE,
            Align::Left,
        );
    }
    for lane in &l.lanes {
        f.text((lane.x, 66), &lane.title, 13, INK, Align::Center);
        for seg in &lane.segments {
            f.line((lane.x, seg.y0), (lane.x, seg.y1), GREY, 2, false);
            if seg.incarnation > 0 || lane.segments.len() > 1 {
                let tag = format!("#{}", seg.incarnation);
                f.text((lane.x + 4, seg.y0 + 8), &tag, 10, GREY, Align::Left);
            }
        }
    }
    for s in &l.steps {
        let color = tone_color(s.tone);
        let stamp = format!("{:>5}  {} s", s.seq, layout::seconds(s.ms));
        f.text((8, s.y), &stamp, 10, GREY, Align::Left);
        match &s.shape {
            Shape::Arrow { from, to } => {
                let (x0, x1) = (l.lanes[*from].x, l.lanes[*to].x);
                f.arrow(x0, x1, s.y + 6, color, s.tone == Tone::Loss);
                f.text(
                    ((x0 + x1) / 2, s.y - 5),
                    &s.fitted,
                    12,
                    color,
                    Align::Center,
                );
            }
            Shape::Note { lane } => {
                let x = l.lanes[*lane].x;
                f.push(Prim::Rect {
                    min: (x - 5, s.y - 5),
                    max: (x + 5, s.y + 5),
                    stroke: Some(color),
                    fill: Some((255, 255, 255)),
                    dashed: false,
                });
                f.text((x + 10, s.y), &s.fitted, 12, color, Align::Left);
            }
            Shape::Crash { lane } => {
                let x = l.lanes[*lane].x;
                f.line((x - 8, s.y - 8), (x + 8, s.y + 8), RED, 3, false);
                f.line((x - 8, s.y + 8), (x + 8, s.y - 8), RED, 3, false);
                f.text((x + 12, s.y), &s.fitted, 12, RED, Align::Left);
            }
            Shape::Restart { lane } => {
                let x = l.lanes[*lane].x;
                f.line((x - 10, s.y), (x + 10, s.y), ORANGE, 3, false);
                f.text((x + 12, s.y), &s.fitted, 12, ORANGE, Align::Left);
            }
        }
    }
    if l.hidden > 0 {
        let y = l.height - 20;
        let more = format!("{} more events not shown", l.hidden);
        f.text((l.width / 2, y), &more, 12, RED, Align::Center);
    }
    f
}
