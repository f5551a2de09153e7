//! The chain diagram as data: lanes (one per participant, each actor life a segment), one step per
//! row at its own height, time gaps (the AckWait before a redelivery) as bands, and a cap. Nothing
//! here draws; every renderer reads the same layout, so text, Mermaid, SVG and PNG agree.

use std::collections::BTreeSet;

use outbox_trace::Kind;

pub use super::steps::Tone;
use super::steps::{self, Form, Party, Shown};
use crate::model::row::Row;
use crate::views::chain::Chain;
use crate::views::scene::{role, RowRef, Scene};

/// At most this many steps are laid out; the rest are counted as "N more events not shown".
pub const MAX_STEPS: usize = 40;
/// Pixels between lanes.
pub const LANE_GAP: i32 = 200;
/// Width of the left column (seq and time).
pub const LEFT: i32 = 140;
/// Room right of the last lane for its labels.
pub const RIGHT: i32 = 280;
/// Height of one step.
pub const ROW: i32 = 30;
/// Height of a time-gap band.
pub const GAP_ROW: i32 = 36;
/// Where the first step sits.
pub const TOP: i32 = 96;
/// A pause between two steps at least this long is drawn as a band.
pub const GAP_NS: i64 = 500_000_000;
/// Pixels per character of the 12 px label font (an upper bound for DejaVu Sans).
pub const CHAR_W: i32 = 7;

/// What a step is drawn as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A message from one lane to another.
    Arrow {
        /// Lane index it leaves.
        from: usize,
        /// Lane index it reaches.
        to: usize,
    },
    /// Something one participant did on its own.
    Note {
        /// Lane index.
        lane: usize,
    },
    /// The actor died here; its segment ends.
    Crash {
        /// Lane index.
        lane: usize,
    },
    /// The actor came back; a new segment begins.
    Restart {
        /// Lane index.
        lane: usize,
    },
}

/// Milliseconds as seconds with three decimals, the sign before the whole: `-724.779`, `0.005`.
pub fn seconds(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let abs = ms.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

/// One row of the chain, placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The row's `seq`.
    pub seq: u64,
    /// Milliseconds since the run started.
    pub ms: i64,
    /// Vertical position of the arrow or mark.
    pub y: i32,
    /// Arrow, note, crash or restart.
    pub shape: Shape,
    /// The label, whole (text and Mermaid).
    pub label: String,
    /// The label cut to the room the picture has for it.
    pub fitted: String,
    /// How it looks.
    pub tone: Tone,
    /// Part of a violation's witness.
    pub marked: bool,
}

/// A pause between two steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// Top of the band.
    pub y0: i32,
    /// Bottom of the band.
    pub y1: i32,
    /// What the pause was.
    pub label: String,
}

/// One life of an actor on its lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Which life of the actor the band covers (a crash ends it).
    pub incarnation: u32,
    /// Where it begins.
    pub y0: i32,
    /// Where it ends.
    pub y1: i32,
    /// Whether a crash ends it.
    pub crashed: bool,
}

/// One participant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// The actor name (or `broker`).
    pub key: String,
    /// The heading.
    pub title: String,
    /// Horizontal position.
    pub x: i32,
    /// The lives shown, top to bottom.
    pub segments: Vec<Segment>,
}

/// The whole chain diagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLayout {
    /// Heading.
    pub title: String,
    /// A sentence under the heading (a violation's explanation).
    pub note: Option<String>,
    /// Canvas width.
    pub width: i32,
    /// Canvas height.
    pub height: i32,
    /// Participants, left to right.
    pub lanes: Vec<Lane>,
    /// The steps, top to bottom.
    pub steps: Vec<Step>,
    /// Pauses.
    pub gaps: Vec<Gap>,
    /// Rows left out by the cap.
    pub hidden: usize,
}

/// The lanes' order by role: API and store first, then relays, the broker, workers, receivers;
/// any other role after them.
pub const LANE_ORDER: [&str; 5] = ["api", "relay", "broker", "worker", "receiver"];

/// Where an actor's lane goes, by its role's place in [`LANE_ORDER`].
fn rank(actor: &str) -> u8 {
    let role = role(actor);
    LANE_ORDER
        .iter()
        .position(|r| *r == role)
        .unwrap_or(LANE_ORDER.len()) as u8
}

fn lane_keys(chain: &Chain) -> Vec<String> {
    let mut keys: BTreeSet<(u8, String)> = ["api", "relay", "broker", "worker"]
        .iter()
        .map(|a| (rank(a), a.to_string()))
        .collect();
    for e in &chain.rows {
        keys.insert((rank(e.actor()), e.actor().to_string()));
        if e.kind() == Kind::ExternalRequest {
            keys.insert((4, receiver_of(chain)));
        }
    }
    keys.into_iter().map(|(_, k)| k).collect()
}

fn receiver_of(chain: &Chain) -> String {
    receiver(&chain.scene).to_string()
}

/// The lane of external calls in `scene`: its first actor whose role is `receiver`.
pub fn receiver<'a>(scene: &Scene<'a>) -> &'a str {
    scene
        .history
        .indices()
        .actors()
        .map(|a| scene.names.name(a))
        .find(|a| role(a) == "receiver")
        .unwrap_or("receiver")
}

/// Lays out `chain`.
pub fn layout(chain: &Chain) -> ChainLayout {
    let keys = lane_keys(chain);
    let mut lanes: Vec<Lane> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| Lane {
            key: k.clone(),
            title: if k == "api" {
                "api + store".into()
            } else {
                k.clone()
            },
            x: LEFT + i as i32 * LANE_GAP,
            segments: Vec::new(),
        })
        .collect();
    let shown = chain.rows.len().min(MAX_STEPS);
    let Placed {
        mut steps,
        mut gaps,
        bottom,
    } = place(chain, &keys, shown);
    // Lanes wide enough apart for every arrow's label, and a canvas wide enough for every
    // mark's: a long broker position or crash point is drawn whole, not cut.
    let gap = lane_gap(&steps);
    for (i, lane) in lanes.iter_mut().enumerate() {
        lane.x = LEFT + i as i32 * gap;
    }
    segments(&mut lanes, chain, &steps, bottom);
    let width = steps
        .iter()
        .filter_map(|s| match s.shape {
            Shape::Note { lane } | Shape::Crash { lane } | Shape::Restart { lane } => {
                Some(lanes[lane].x + 24 + label_px(&s.label))
            }
            Shape::Arrow { .. } => None,
        })
        .fold(LEFT + (lanes.len() as i32 - 1) * gap + RIGHT, i32::max);
    for s in &mut steps {
        s.fitted = fit(&s.label, room(&s.shape, &lanes, width));
    }
    for g in &mut gaps {
        g.label = fit(&g.label, width - LEFT);
    }
    let note = chain.note.as_ref().map(|n| fit(n, width * 2 - 40));
    ChainLayout {
        title: fit(&chain.title, width - 40),
        note,
        width,
        height: bottom + if chain.rows.len() > shown { 40 } else { 16 },
        lanes,
        steps,
        gaps,
        hidden: chain.rows.len() - shown,
    }
}

/// The first rows of a chain placed top to bottom, before the lanes' spacing is known.
struct Placed {
    /// One per row shown, labels not yet fitted.
    steps: Vec<Step>,
    /// The pauses between them.
    gaps: Vec<Gap>,
    /// Below the last step.
    bottom: i32,
}

/// The first `shown` rows of `chain` as steps on the lanes of `keys`, one row each, with a band
/// before each long pause.
fn place(chain: &Chain, keys: &[String], shown: usize) -> Placed {
    let lane_of = |actor: &str| keys.iter().position(|k| k == actor).unwrap_or(0);
    let broker = lane_of("broker");
    let api = lane_of("api");
    let receiver = lane_of(&receiver_of(chain));
    let mut steps = Vec::with_capacity(shown);
    let mut gaps = Vec::new();
    let mut y = TOP;
    let mut prev: Option<&RowRef> = None;
    for e in chain.rows.iter().take(shown) {
        if let Some(p) = prev {
            if e.ts_ns() - p.ts_ns() >= GAP_NS {
                gaps.push(Gap {
                    y0: y - ROW / 2,
                    y1: y - ROW / 2 + GAP_ROW,
                    label: gap_label(chain, p, e),
                });
                y += GAP_ROW;
            }
        }
        let parties = Parties {
            own: lane_of(e.actor()),
            broker,
            api,
            receiver,
        };
        let (shape, label, tone) = describe(e, &parties);
        steps.push(Step {
            seq: e.seq(),
            ms: e.ts_ns().div_euclid(1_000_000),
            y,
            shape,
            fitted: String::new(),
            label,
            tone,
            marked: chain.marked.contains(&e.seq()),
        });
        prev = Some(e);
        y += ROW;
    }
    Placed {
        steps,
        gaps,
        bottom: y,
    }
}

/// Pixels `label` takes at most.
fn label_px(label: &str) -> i32 {
    label.chars().count() as i32 * CHAR_W
}

/// The room between lanes: [`LANE_GAP`], or more where an arrow's label needs it (spread over
/// the lanes it spans).
fn lane_gap(steps: &[Step]) -> i32 {
    steps
        .iter()
        .filter_map(|s| match s.shape {
            Shape::Arrow { from, to } => {
                let span = (from as i32 - to as i32).abs().max(1);
                Some((label_px(&s.label) + 12 + span - 1) / span)
            }
            _ => None,
        })
        .fold(LANE_GAP, i32::max)
}

/// Pixels a step's label may take: the span of an arrow, or the room right of a mark.
fn room(shape: &Shape, lanes: &[Lane], width: i32) -> i32 {
    match shape {
        Shape::Arrow { from, to } => (lanes[*from].x - lanes[*to].x).abs() - 12,
        Shape::Note { lane } | Shape::Crash { lane } | Shape::Restart { lane } => {
            width - lanes[*lane].x - 24
        }
    }
}

/// Cuts `text` to `px` pixels, ending with an ellipsis when cut.
pub fn fit(text: &str, px: i32) -> String {
    let max = (px / CHAR_W).max(4) as usize;
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

fn gap_label(chain: &Chain, prev: &RowRef, next: &RowRef) -> String {
    let secs = |ns: i64| format!("{:.2} s", ns as f64 / 1e9);
    let quiet = secs(next.ts_ns() - prev.ts_ns());
    if next.kind() != Kind::Redelivered {
        return format!("{quiet} pass");
    }
    let wait = chain
        .scene
        .ack_wait_ms()
        .map_or_else(String::new, |ms| format!("AckWait {ms} ms: "));
    let delivery = chain
        .rows
        .iter()
        .rev()
        .find(|r| r.seq() < next.seq() && same_copy(r, next));
    match delivery {
        Some(d) => format!(
            "{wait}no ACK, redelivered {} after the delivery ({quiet} quiet)",
            secs(next.ts_ns() - d.ts_ns())
        ),
        None => format!("{wait}no ACK, redelivered after {quiet} quiet"),
    }
}

/// Whether `r` is a delivery of the same copy (event and broker position, within its partition)
/// as `next`.
fn same_copy(r: &RowRef, next: &RowRef) -> bool {
    r.row.is_delivery() && r.row.event == next.row.event && r.row.position() == next.row.position()
}

/// The lanes a step can be drawn on ([`Party`]).
struct Parties {
    own: usize,
    broker: usize,
    api: usize,
    receiver: usize,
}

impl Parties {
    fn lane(&self, party: Party) -> usize {
        match party {
            Party::Own => self.own,
            Party::Broker => self.broker,
            Party::Api => self.api,
            Party::Receiver => self.receiver,
        }
    }
}

/// The step of `e`, drawn as its kind's [`steps::look`] says.
fn describe(e: &RowRef, parties: &Parties) -> (Shape, String, Tone) {
    let look = steps::look(e.kind());
    let shape = match look.form {
        Form::Note(p) => Shape::Note {
            lane: parties.lane(p),
        },
        Form::Arrow(from, to) => Shape::Arrow {
            from: parties.lane(from),
            to: parties.lane(to),
        },
        Form::Crash => Shape::Crash { lane: parties.own },
        Form::Restart => Shape::Restart { lane: parties.own },
    };
    let label = match e.kind() {
        Kind::Crash => format!(
            "{} #{}: {}",
            Kind::Crash,
            e.incarnation(),
            short_point(e.crash_point())
        ),
        Kind::Restart => format!("{}: {}#{}", Kind::Restart, e.actor(), e.incarnation()),
        Kind::Fault => format!("{}: {}", Kind::Fault, e.fault_name()),
        _ => {
            let mut label = look.words.to_string();
            for &shown in look.shown {
                if let Some(value) = shown_value(e.row, shown) {
                    label.push_str(shown.prefix());
                    label.push_str(&value);
                }
            }
            label
        }
    };
    let retry = e.kind() == Kind::PublishAttempt && e.row.attempt().unwrap_or(1) > 1;
    (shape, label, if retry { Tone::Retry } else { look.tone })
}

/// The value of `row` a label shows, if the row has it.
fn shown_value(row: &Row, shown: Shown) -> Option<String> {
    match shown {
        Shown::Rev => row.store_rev().map(|v| v.to_string()),
        Shown::Position => row.position().map(|p| p.to_string()),
        Shown::Attempt | Shown::Count => row.attempt().map(|a| a.to_string()),
        Shown::Counter => row.counter().map(|c| c.to_string()),
        Shown::Amount => row.amount().map(|a| format!("{a:+}")),
    }
}

/// A crash point without its actor prefix (`worker:after-commit` -> `after-commit`).
fn short_point(point: &str) -> &str {
    point.split_once(':').map_or(point, |(_, p)| p)
}

/// One segment per actor life: from its restart (or the top) to its crash (or the bottom).
fn segments(lanes: &mut [Lane], chain: &Chain, steps: &[Step], bottom: i32) {
    let y_of = |seq: u64| steps.iter().find(|s| s.seq == seq).map(|s| s.y);
    for lane in lanes.iter_mut() {
        let mut lives: Vec<u32> = chain
            .rows
            .iter()
            .filter(|e| e.actor() == lane.key && y_of(e.seq()).is_some())
            .map(|e| e.incarnation())
            .collect();
        lives.sort_unstable();
        lives.dedup();
        if lives.is_empty() {
            lane.segments.push(Segment {
                incarnation: 0,
                y0: TOP - 20,
                y1: bottom,
                crashed: false,
            });
            continue;
        }
        for inc in lives {
            let of_life = |k: Kind| {
                chain
                    .rows
                    .iter()
                    .find(|e| e.actor() == lane.key && e.incarnation() == inc && e.kind() == k)
                    .and_then(|e| y_of(e.seq()))
            };
            let crash = of_life(Kind::Crash);
            lane.segments.push(Segment {
                incarnation: inc,
                y0: of_life(Kind::Restart).unwrap_or(TOP - 20),
                y1: crash.unwrap_or(bottom),
                crashed: crash.is_some(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn seconds_put_the_sign_before_the_whole() {
        assert_eq!(seconds(-724_779), "-724.779");
        assert_eq!(seconds(-5), "-0.005");
        assert_eq!(seconds(-1_000), "-1.000");
        assert_eq!(seconds(0), "0.000");
        assert_eq!(seconds(1_234), "1.234");
        assert_eq!(seconds(i64::MIN), "-9223372036854775.808");
    }
}
