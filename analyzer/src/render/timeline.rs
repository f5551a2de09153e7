//! The timeline as a figure: one line per kind over the run's time buckets, a legend with each
//! kind's total, scenario starts as grey rules, crashes (red) and faults (purple) as vertical
//! rules. The first [`MAX_LABELS`] markers get a number and a line of explanation under the plot;
//! the rest are counted. Marker rules are merged per pixel column, so the figure's size is bounded
//! by its width, whatever the number of events or markers.

use std::collections::BTreeSet;

use outbox_trace::Kind;

use super::figure::{Align, Figure, Prim, Rgb, GREY, INK, PALE, RED};
use super::layout::fit;
use crate::views::timeline::{Mark, Timeline};

/// Markers labelled at most; the rest are counted.
pub const MAX_LABELS: usize = 12;

const WIDTH: i32 = 1200;
const LEFT: i32 = 70;
const RIGHT: i32 = 900;
const TOP: i32 = 80;
const BOTTOM: i32 = 440;
const LEGEND: i32 = 925;
const LIST: i32 = 500;
const LINE: i32 = 16;
/// The colour of faults.
pub const FAULT: Rgb = (130, 50, 190);

/// One colour per kind, by the kind's position in the contract.
const PALETTE: &[Rgb] = &[
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (57, 59, 121),
    (99, 121, 57),
    (140, 109, 49),
    (132, 60, 57),
    (123, 65, 115),
    (82, 84, 163),
    (181, 207, 107),
    (231, 186, 82),
    (214, 97, 107),
    (206, 109, 189),
    (107, 110, 207),
];

/// The colour of `kind`'s line.
pub fn kind_color(kind: outbox_trace::Kind) -> Rgb {
    let i = outbox_trace::Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

/// The smallest 1, 2 or 5 times a power of ten that is at least `x`.
fn nice(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|v| *v >= x * 0.999_999)
        .unwrap_or(10.0 * p)
}

/// Seconds with as many decimals as `step` needs.
fn seconds(ns: f64, step: f64) -> String {
    let s = ns / 1e9;
    let decimals = if step >= 1e9 {
        0
    } else if step >= 1e8 {
        1
    } else if step >= 1e7 {
        2
    } else {
        3
    };
    format!("{s:.decimals$}")
}

/// A duration for people.
fn duration(ns: i64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} µs", ns as f64 / 1e3)
    }
}

/// The timeline as primitives.
pub fn timeline_figure(t: &Timeline) -> Figure {
    let labelled = t.markers.len().min(MAX_LABELS);
    let hidden = t.markers.len() - labelled;
    let rows = labelled as i32 + i32::from(hidden > 0);
    let mut f = Figure::new(WIDTH, LIST + rows * LINE + 20);
    let plot = Plot::of(t);
    heading(&mut f, t);
    value_axis(&mut f, &plot);
    time_axis(&mut f, t, &plot);
    scenario_rules(&mut f, t, &plot);
    marker_rules(&mut f, t, &plot);
    kind_lines(&mut f, t, &plot);
    marker_tags(&mut f, t, &plot);
    legend(&mut f, t);
    marker_list(&mut f, t, hidden);
    f
}

/// Where a time and a count land in the plot area.
struct Plot {
    /// The run's first time.
    start_ns: i64,
    /// The run's duration (at least 1 ns).
    span: f64,
    /// The value axis' tick step: a nice number, about a fifth of the peak.
    value_step: f64,
    /// The value at the top of the plot: the peak rounded up to a tick.
    ymax: f64,
}

impl Plot {
    /// The scales of `t`: its time span across, its peak count (rounded up to a tick) up.
    fn of(t: &Timeline) -> Self {
        let peak = f64::from(t.peak().max(1));
        let value_step = nice(peak / 5.0);
        Plot {
            start_ns: t.start_ns,
            span: (t.end_ns - t.start_ns).max(1) as f64,
            value_step,
            ymax: (peak / value_step).ceil() * value_step,
        }
    }

    /// The column of time `ns`.
    fn x(&self, ns: i64) -> i32 {
        LEFT + (((ns - self.start_ns) as f64 / self.span) * f64::from(RIGHT - LEFT)) as i32
    }

    /// The row of count `v`.
    fn y(&self, v: f64) -> i32 {
        BOTTOM - ((v / self.ymax) * f64::from(BOTTOM - TOP)) as i32
    }
}

/// The colour of a marker's rule, tag and line.
fn mark_color(m: Mark) -> Rgb {
    if m == Mark::Crash {
        RED
    } else {
        FAULT
    }
}

/// The title and the line under it: events, duration, bucket, crashes and faults.
fn heading(f: &mut Figure, t: &Timeline) {
    f.text((20, 20), &t.title, 16, INK, Align::Left);
    let sub = format!(
        "{} events over {} · events per {} bucket · crashes: {}, faults: {}",
        t.events,
        duration(t.end_ns - t.start_ns),
        duration(t.bucket_ns),
        t.count(Mark::Crash),
        t.count(Mark::Fault),
    );
    f.text((20, 44), &sub, 12, GREY, Align::Left);
}

/// The value axis: nice ticks up to the peak, each with a pale grid line.
fn value_axis(f: &mut Figure, plot: &Plot) {
    let mut v = 0.0;
    while v <= plot.ymax * 1.000_001 {
        let y = plot.y(v);
        f.line((LEFT, y), (RIGHT, y), PALE, 1, false);
        f.text((LEFT - 6, y), &format!("{v}"), 11, INK, Align::Right);
        v += plot.value_step;
    }
}

/// The time axis: nice ticks in seconds since the run started, its caption, and both axes' lines.
fn time_axis(f: &mut Figure, t: &Timeline, plot: &Plot) {
    let tstep = nice(plot.span / 8.0);
    let mut tick = (t.start_ns as f64 / tstep).ceil() * tstep;
    while tick <= t.end_ns as f64 {
        let x = plot.x(tick as i64);
        f.line((x, BOTTOM), (x, BOTTOM + 5), INK, 1, false);
        f.text(
            (x, BOTTOM + 16),
            &seconds(tick, tstep),
            11,
            INK,
            Align::Center,
        );
        tick += tstep;
    }
    let axis = "seconds since the run started";
    f.text(
        ((LEFT + RIGHT) / 2, BOTTOM + 36),
        axis,
        12,
        INK,
        Align::Center,
    );
    f.line((LEFT, BOTTOM), (RIGHT, BOTTOM), INK, 1, false);
    f.line((LEFT, TOP), (LEFT, BOTTOM), INK, 1, false);
}

/// Scenario starts as grey rules, named in the band above the plot (none for one scenario).
fn scenario_rules(f: &mut Figure, t: &Timeline, plot: &Plot) {
    if t.scenarios.len() <= 1 {
        return;
    }
    for (i, s) in t.scenarios.iter().enumerate() {
        let x = plot.x(s.start_ns);
        let next = t.scenarios.get(i + 1).map_or(RIGHT, |n| plot.x(n.start_ns));
        f.line((x, TOP - 14), (x, BOTTOM), GREY, 1, false);
        f.text(
            (x + 3, TOP - 8),
            &fit(&s.name, next - x - 4),
            10,
            GREY,
            Align::Left,
        );
    }
}

/// Crash and fault rules, one per pixel column and mark.
fn marker_rules(f: &mut Figure, t: &Timeline, plot: &Plot) {
    let columns: BTreeSet<(i32, bool)> = t
        .markers
        .iter()
        .map(|m| (plot.x(m.ts_ns), m.mark == Mark::Crash))
        .collect();
    for (x, crash) in columns {
        let c = if crash { RED } else { FAULT };
        f.line((x, TOP), (x, BOTTOM), c, 1, false);
    }
}

/// One line per kind through the bucket centres.
fn kind_lines(f: &mut Figure, t: &Timeline, plot: &Plot) {
    let n = t.buckets().max(1) as f64;
    for s in &t.series {
        let points = s
            .counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let x = LEFT + (((i as f64 + 0.5) / n) * f64::from(RIGHT - LEFT)) as i32;
                (x, plot.y(f64::from(*c)))
            })
            .collect();
        f.push(Prim::Polyline {
            points,
            color: kind_color(s.kind),
            width: 2,
        });
    }
}

/// Numbered tags on the first markers, staggered so neighbours stay legible.
fn marker_tags(f: &mut Figure, t: &Timeline, plot: &Plot) {
    for (i, m) in t.markers.iter().take(MAX_LABELS).enumerate() {
        let x = plot.x(m.ts_ns);
        let y = TOP + 8 + (i as i32 % 3) * 13;
        f.text(
            (x + 3, y),
            &(i + 1).to_string(),
            11,
            mark_color(m.mark),
            Align::Left,
        );
    }
}

/// The legend: kinds with totals, then the rules (scenario starts only when drawn).
fn legend(f: &mut Figure, t: &Timeline) {
    let mut y = TOP;
    for s in &t.series {
        let c = kind_color(s.kind);
        f.line((LEGEND, y), (LEGEND + 22, y), c, 3, false);
        let name = format!("{}  {}", s.kind.as_str(), s.total);
        f.text((LEGEND + 28, y), &name, 11, INK, Align::Left);
        y += LINE;
    }
    y += 6;
    let rules = [
        (RED, format!("{}  {}", Kind::Crash, t.count(Mark::Crash))),
        (FAULT, format!("{}  {}", Kind::Fault, t.count(Mark::Fault))),
        (GREY, "scenario start".to_string()),
    ];
    for (c, name) in rules.iter().take(if t.scenarios.len() > 1 { 3 } else { 2 }) {
        f.line((LEGEND + 11, y - 6), (LEGEND + 11, y + 6), *c, 2, false);
        f.text((LEGEND + 28, y), name, 11, INK, Align::Left);
        y += LINE;
    }
}

/// The labelled markers explained under the plot, one line each, and the `hidden` rest counted.
fn marker_list(f: &mut Figure, t: &Timeline, hidden: usize) {
    let mut y = LIST;
    for (i, m) in t.markers.iter().take(MAX_LABELS).enumerate() {
        let what = if m.mark == Mark::Crash {
            Kind::Crash.as_str()
        } else {
            Kind::Fault.as_str()
        };
        let line = format!(
            "{:>2}  {} s  {what}  {}  ({})",
            i + 1,
            seconds(m.ts_ns as f64, 1e6),
            m.label,
            m.scenario
        );
        f.text(
            (LEFT, y),
            &fit(&line, WIDTH - LEFT - 20),
            12,
            mark_color(m.mark),
            Align::Left,
        );
        y += LINE;
    }
    if hidden > 0 {
        let rest = &t.markers[MAX_LABELS..];
        let crashes = rest.iter().filter(|m| m.mark == Mark::Crash).count();
        let more = format!(
            "{crashes} more crashes, {} more faults (not labelled)",
            rest.len() - crashes
        );
        f.text((LEFT, y), &more, 12, RED, Align::Left);
    }
}
