//! What the HTML report's script draws with, taken from the renderers: the chain layout's
//! measures and lane order ([`crate::render::layout`]), how each kind of step is drawn
//! ([`crate::render::steps`]), the colours of the figures, and the timeline's colour per kind.
//! [`crate::report::html`] embeds it as JSON beside the page's data, so the chains the script
//! draws and those drawn in advance agree without the script repeating any of it.

use outbox_trace::Kind;
use serde::Serialize;

use crate::render::figure::{Rgb, BLUE, GREEN, GREY, HIGHLIGHT, INK, ORANGE, PALE, RED};
use crate::render::layout::{self, Tone};
use crate::render::steps::{self, Look, Shown};
use crate::render::{timeline, tone_color};
use crate::views;

/// Everything the script draws with.
#[derive(Debug, Serialize)]
pub struct Drawing {
    /// The chain layout's measures.
    pub layout: Measures,
    /// The lanes' order by role; any other role after them.
    pub lane_order: [&'static str; 5],
    /// How a step of each kind is drawn, by kind code (the position in the contract's list).
    pub steps: Vec<Look>,
    /// What a label puts before each value it shows.
    pub shown: Vec<(Shown, &'static str)>,
    /// The figures' colours by name.
    pub colors: Colors,
    /// Each tone's colour, by the tone's name.
    pub tones: Tones,
    /// The timeline's colour of each kind, by kind code.
    pub kind_colors: Vec<String>,
    /// The timeline's colour of faults.
    pub fault: String,
    /// The timeline's time buckets.
    pub buckets: usize,
}

/// The chain layout's measures ([`crate::render::layout`]'s constants).
#[derive(Debug, Serialize)]
pub struct Measures {
    /// Steps laid out at most.
    pub max_steps: usize,
    /// Pixels between lanes, at least.
    pub lane_gap: i32,
    /// Width of the left column.
    pub left: i32,
    /// Room right of the last lane.
    pub right: i32,
    /// Height of a step.
    pub row: i32,
    /// Height of a time-gap band.
    pub gap_row: i32,
    /// Where the first step sits.
    pub top: i32,
    /// The shortest pause drawn as a band, in ns.
    pub gap_ns: i64,
    /// Pixels per character of a label.
    pub char_w: i32,
}

/// The figures' colours, as the SVGs write them.
#[derive(Debug, Serialize)]
pub struct Colors {
    /// Text and axes.
    pub ink: String,
    /// Secondary text and lanes.
    pub grey: String,
    /// Bands.
    pub pale: String,
    /// Effects.
    pub green: String,
    /// Absorbed duplicates.
    pub blue: String,
    /// Retries and pauses.
    pub orange: String,
    /// Losses and crashes.
    pub red: String,
    /// A witness row's background.
    pub highlight: String,
}

/// Each tone's colour.
#[derive(Debug, Serialize)]
pub struct Tones {
    /// [`Tone::Plain`].
    pub plain: String,
    /// [`Tone::Effect`].
    pub effect: String,
    /// [`Tone::Absorbed`].
    pub absorbed: String,
    /// [`Tone::Retry`].
    pub retry: String,
    /// [`Tone::Loss`].
    pub loss: String,
}

/// A colour as SVG writes it: `#RRGGBB`.
fn hex((r, g, b): Rgb) -> String {
    format!("#{r:02X}{g:02X}{b:02X}")
}

impl Drawing {
    /// The renderers' measures, lane order, step looks and colours.
    pub fn new() -> Self {
        let tone = |t: Tone| hex(tone_color(t));
        Drawing {
            layout: Measures {
                max_steps: layout::MAX_STEPS,
                lane_gap: layout::LANE_GAP,
                left: layout::LEFT,
                right: layout::RIGHT,
                row: layout::ROW,
                gap_row: layout::GAP_ROW,
                top: layout::TOP,
                gap_ns: layout::GAP_NS,
                char_w: layout::CHAR_W,
            },
            lane_order: layout::LANE_ORDER,
            steps: Kind::ALL.iter().map(|k| steps::look(*k)).collect(),
            shown: Shown::ALL.iter().map(|s| (*s, s.prefix())).collect(),
            colors: Colors {
                ink: hex(INK),
                grey: hex(GREY),
                pale: hex(PALE),
                green: hex(GREEN),
                blue: hex(BLUE),
                orange: hex(ORANGE),
                red: hex(RED),
                highlight: hex(HIGHLIGHT),
            },
            tones: Tones {
                plain: tone(Tone::Plain),
                effect: tone(Tone::Effect),
                absorbed: tone(Tone::Absorbed),
                retry: tone(Tone::Retry),
                loss: tone(Tone::Loss),
            },
            kind_colors: Kind::ALL
                .iter()
                .map(|k| hex(timeline::kind_color(*k)))
                .collect(),
            fault: hex(timeline::FAULT),
            buckets: views::timeline::BUCKETS,
        }
    }
}

impl Default for Drawing {
    fn default() -> Self {
        Self::new()
    }
}
