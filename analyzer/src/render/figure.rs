//! A picture as a list of primitives (lines, boxes, text), in pixels. Layouts turn into figures;
//! [`draw`] puts a figure on any plotters backend, so SVG and PNG come from the same data.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// An RGB colour.
pub type Rgb = (u8, u8, u8);

/// Black-ish text and lines.
pub const INK: Rgb = (30, 30, 30);
/// Lane lines, bands.
pub const GREY: Rgb = (150, 150, 150);
/// Light background bands.
pub const PALE: Rgb = (238, 238, 238);
/// Effects.
pub const GREEN: Rgb = (20, 130, 50);
/// Absorbed duplicates.
pub const BLUE: Rgb = (30, 90, 200);
/// Retries, redeliveries.
pub const ORANGE: Rgb = (205, 110, 0);
/// Losses, failures, crashes.
pub const RED: Rgb = (200, 30, 30);
/// Marked rows.
pub const HIGHLIGHT: Rgb = (255, 236, 160);

/// Horizontal text anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// The point is the text's left end.
    Left,
    /// The point is the text's middle.
    Center,
    /// The point is the text's right end.
    Right,
}

/// One drawing primitive.
#[derive(Debug, Clone, PartialEq)]
pub enum Prim {
    /// A straight line.
    Line {
        /// Start.
        from: (i32, i32),
        /// End.
        to: (i32, i32),
        /// Colour.
        color: Rgb,
        /// Stroke width.
        width: u32,
        /// Drawn as dashes.
        dashed: bool,
    },
    /// A rectangle, outlined and/or filled.
    Rect {
        /// Top left.
        min: (i32, i32),
        /// Bottom right.
        max: (i32, i32),
        /// Outline colour.
        stroke: Option<Rgb>,
        /// Fill colour.
        fill: Option<Rgb>,
        /// Dashed outline.
        dashed: bool,
    },
    /// A line through several points (a data series), drawn as one element.
    Polyline {
        /// The points, in order.
        points: Vec<(i32, i32)>,
        /// Colour.
        color: Rgb,
        /// Stroke width.
        width: u32,
    },
    /// A filled triangle (arrow heads).
    Triangle {
        /// Corners.
        points: [(i32, i32); 3],
        /// Colour.
        color: Rgb,
    },
    /// Text, vertically centred on the point.
    Text {
        /// Anchor point.
        at: (i32, i32),
        /// What to write, one line.
        text: String,
        /// Font size in pixels.
        size: u32,
        /// Colour.
        color: Rgb,
        /// Horizontal anchor.
        align: Align,
    },
}

/// A picture.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figure {
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// Primitives, drawn in order.
    pub prims: Vec<Prim>,
}

impl Figure {
    /// An empty figure of the given size.
    pub fn new(width: i32, height: i32) -> Self {
        Figure {
            width,
            height,
            prims: Vec::new(),
        }
    }

    /// Adds a primitive.
    pub fn push(&mut self, p: Prim) {
        self.prims.push(p);
    }

    /// Adds text.
    pub fn text(&mut self, at: (i32, i32), text: &str, size: u32, color: Rgb, align: Align) {
        self.push(Prim::Text {
            at,
            text: text.to_string(),
            size,
            color,
            align,
        });
    }

    /// Adds a line.
    pub fn line(&mut self, from: (i32, i32), to: (i32, i32), color: Rgb, width: u32, dashed: bool) {
        self.push(Prim::Line {
            from,
            to,
            color,
            width,
            dashed,
        });
    }

    /// Adds a horizontal arrow from `x0` to `x1` at `y`, with a head at `x1`.
    pub fn arrow(&mut self, x0: i32, x1: i32, y: i32, color: Rgb, dashed: bool) {
        self.line((x0, y), (x1, y), color, 2, dashed);
        let d = if x1 >= x0 { -9 } else { 9 };
        self.push(Prim::Triangle {
            points: [(x1, y), (x1 + d, y - 5), (x1 + d, y + 5)],
            color,
        });
    }

    /// Appends `other`, shifted right by `dx` and down by `dy`.
    pub fn overlay(&mut self, other: &Figure, dx: i32, dy: i32) {
        let m = |(x, y): (i32, i32)| (x + dx, y + dy);
        for p in &other.prims {
            self.prims.push(match p.clone() {
                Prim::Line {
                    from,
                    to,
                    color,
                    width,
                    dashed,
                } => Prim::Line {
                    from: m(from),
                    to: m(to),
                    color,
                    width,
                    dashed,
                },
                Prim::Rect {
                    min,
                    max,
                    stroke,
                    fill,
                    dashed,
                } => Prim::Rect {
                    min: m(min),
                    max: m(max),
                    stroke,
                    fill,
                    dashed,
                },
                Prim::Polyline {
                    points,
                    color,
                    width,
                } => Prim::Polyline {
                    points: points.into_iter().map(m).collect(),
                    color,
                    width,
                },
                Prim::Triangle { points, color } => Prim::Triangle {
                    points: points.map(m),
                    color,
                },
                Prim::Text {
                    at,
                    text,
                    size,
                    color,
                    align,
                } => Prim::Text {
                    at: m(at),
                    text,
                    size,
                    color,
                    align,
                },
            });
        }
    }
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Length of a dash and of the space after it.
const DASH: i32 = 6;

fn dashes(from: (i32, i32), to: (i32, i32)) -> Vec<((i32, i32), (i32, i32))> {
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let len = (dx * dx + dy * dy).sqrt();
    let n = (len / f64::from(DASH * 2)).ceil().max(1.0) as i32;
    (0..n)
        .map(|i| {
            let a = f64::from(i * DASH * 2) / len;
            let b = (f64::from(i * DASH * 2 + DASH) / len).min(1.0);
            let at = |t: f64| {
                (
                    from.0 + (dx * t).round() as i32,
                    from.1 + (dy * t).round() as i32,
                )
            };
            (at(a), at(b))
        })
        .collect()
}

/// Draws `fig` on a plotters drawing area.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    fig: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.fill(&WHITE)?;
    for p in &fig.prims {
        match p {
            Prim::Line {
                from,
                to,
                color,
                width,
                dashed,
            } => {
                let style = rgb(*color).stroke_width(*width);
                if *dashed {
                    for (a, b) in dashes(*from, *to) {
                        area.draw(&PathElement::new(vec![a, b], style))?;
                    }
                } else {
                    area.draw(&PathElement::new(vec![*from, *to], style))?;
                }
            }
            Prim::Rect {
                min,
                max,
                stroke,
                fill,
                dashed,
            } => {
                if let Some(f) = fill {
                    area.draw(&Rectangle::new([*min, *max], rgb(*f).filled()))?;
                }
                if let Some(s) = stroke {
                    let corners = [*min, (max.0, min.1), *max, (min.0, max.1), *min];
                    for w in corners.windows(2) {
                        let segs = if *dashed {
                            dashes(w[0], w[1])
                        } else {
                            vec![(w[0], w[1])]
                        };
                        for (a, b) in segs {
                            area.draw(&PathElement::new(vec![a, b], rgb(*s).stroke_width(2)))?;
                        }
                    }
                }
            }
            Prim::Polyline {
                points,
                color,
                width,
            } => {
                let style = rgb(*color).stroke_width(*width);
                area.draw(&PathElement::new(points.clone(), style))?;
            }
            Prim::Triangle { points, color } => {
                area.draw(&Polygon::new(points.to_vec(), rgb(*color).filled()))?;
            }
            Prim::Text {
                at,
                text,
                size,
                color,
                align,
            } => {
                let h = match align {
                    Align::Left => HPos::Left,
                    Align::Center => HPos::Center,
                    Align::Right => HPos::Right,
                };
                let style = ("sans-serif", *size)
                    .into_font()
                    .color(&rgb(*color))
                    .pos(Pos::new(h, VPos::Center));
                // The SVG backend escapes XML's special characters but not the characters XML
                // cannot hold at all.
                let text = outbox_trace::output::escape::xml_chars(text);
                area.draw_text(&text, &style, *at)?;
            }
        }
    }
    Ok(())
}
