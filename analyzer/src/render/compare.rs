//! The comparison of runs drawn: Markdown-compatible text tables, one per shared scenario, and
//! grouped bars of the figures and latencies.

use crate::check::Verdict;
use crate::render::figure::{Align, Figure, Prim, Rgb, GREY, INK};
use crate::views::compare::{Comparison, Measure};

fn cell(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The comparison as text tables (Markdown-compatible), one per shared scenario.
pub fn compare_text(c: &Comparison) -> String {
    use comfy_table::{presets::ASCII_MARKDOWN, Table};
    use std::fmt::Write;
    let mut out = String::new();
    let two = c.runs.len() == 2;
    for s in &c.shared {
        let _ = writeln!(out, "scenario {}", s.scenario);
        let mut t = Table::new();
        t.load_preset(ASCII_MARKDOWN);
        let mut head = vec!["measure".to_string()];
        for col in &s.columns {
            let p = col.protocol.as_deref().unwrap_or("?");
            head.push(format!("{} ({}, {p})", col.run, col.backend));
        }
        if two {
            head.push("difference".into());
        }
        t.set_header(head);
        for (i, (inv, _)) in s.columns[0].measures.verdicts.iter().enumerate() {
            let mut row = vec![inv.id().to_string()];
            let vs: Vec<Verdict> = s.columns.iter().map(|c| c.measures.verdicts[i].1).collect();
            row.extend(vs.iter().map(|v| match v {
                Verdict::Fail => "FAIL".to_string(),
                _ => v.as_str().to_string(),
            }));
            if two {
                row.push(if vs[0] == vs[1] {
                    String::new()
                } else {
                    format!("{} -> {}", vs[0].as_str(), vs[1].as_str())
                });
            }
            t.add_row(row);
        }
        for (i, m) in Measure::ALL.iter().enumerate() {
            let mut row = vec![m.label().to_string()];
            let vals: Vec<Option<i64>> =
                s.columns.iter().map(|c| c.measures.numbers[i].1).collect();
            for (col, v) in s.columns.iter().zip(&vals) {
                let mark = if col.measures.failing.contains(m) {
                    " !"
                } else {
                    ""
                };
                row.push(format!("{}{mark}", cell(*v)));
            }
            if two {
                row.push(match (vals[0], vals[1]) {
                    (Some(a), Some(b)) if a != b => format!("{:+}", b - a),
                    _ => String::new(),
                });
            }
            t.add_row(row);
        }
        let _ = writeln!(out, "{t}\n");
    }
    let _ = writeln!(out, "`!` marks a figure tied to a failing invariant.");
    for (name, have) in &c.not_shared {
        let _ = writeln!(
            out,
            "not shared: scenario {name} only in {}",
            have.join(", ")
        );
    }
    out
}

const PALETTE: &[Rgb] = &[
    (40, 90, 190),
    (210, 110, 20),
    (30, 140, 60),
    (160, 40, 160),
    (120, 120, 120),
];

/// Grouped bars: counts summed over the shared scenarios (left) and latencies (right), one bar
/// per run in each group.
pub fn compare_figure(c: &Comparison) -> Figure {
    let counts = Measure::COUNTS;
    let lats = Measure::LATENCIES;
    let bars = Bars::for_runs(c.runs.len());
    let width = bars.panel_width(counts.len()) + bars.panel_width(lats.len()) + 60;
    let mut f = Figure::new(width, BOTTOM + 90 + bars.runs as i32 * 18);
    let title = format!("compare · {} shared scenario(s)", c.shared.len());
    f.text((20, 20), &title, 16, INK, Align::Left);
    let total = |run: usize, m: Measure| -> i64 {
        c.shared
            .iter()
            .filter_map(|s| s.columns[run].measures.number(m))
            .sum()
    };
    let worst = |run: usize, m: Measure| -> i64 {
        c.shared
            .iter()
            .filter_map(|s| s.columns[run].measures.number(m))
            .max()
            .unwrap_or(0)
    };
    let heading = "counts, summed over shared scenarios";
    bars.panel(&mut f, 40, counts, &total, heading);
    let heading = "latency accepted -> committed, ms";
    bars.panel(
        &mut f,
        40 + bars.panel_width(counts.len()),
        lats,
        &worst,
        heading,
    );
    run_legend(&mut f, &c.runs);
    f
}

/// The top of the bars' area.
const TOP: i32 = 70;
/// The baseline the bars stand on.
const BOTTOM: i32 = 330;
/// A bar's width.
const BAR: i32 = 24;

/// The bars' geometry: one bar per run in each group, one group per measure.
struct Bars {
    /// The runs compared.
    runs: usize,
    /// A group's width: its bars and a gap, at least 90.
    group: i32,
}

impl Bars {
    fn for_runs(runs: usize) -> Self {
        Bars {
            runs,
            group: ((runs as i32) * BAR + 24).max(90),
        }
    }

    /// The width of a panel of `n` groups, its margin included.
    fn panel_width(&self, n: usize) -> i32 {
        n as i32 * self.group + 60
    }

    /// A panel at `x0` under `heading`: a group per measure of `names`, a bar per run of its
    /// `value`, all scaled to the panel's largest value.
    fn panel(
        &self,
        f: &mut Figure,
        x0: i32,
        names: &[Measure],
        value: &dyn Fn(usize, Measure) -> i64,
        heading: &str,
    ) {
        let runs = self.runs;
        let max = names
            .iter()
            .flat_map(|&n| (0..runs).map(move |r| value(r, n)))
            .max()
            .unwrap_or(0)
            .max(1);
        f.text((x0, 46), heading, 12, INK, Align::Left);
        f.line(
            (x0, BOTTOM),
            (x0 + names.len() as i32 * self.group, BOTTOM),
            GREY,
            1,
            false,
        );
        for (g, &name) in names.iter().enumerate() {
            let gx = x0 + g as i32 * self.group + 12;
            for r in 0..runs {
                bar(f, gx + r as i32 * BAR, value(r, name), max, r);
            }
            f.text(
                (
                    gx + (runs as i32 * BAR) / 2,
                    BOTTOM + 14 + (g as i32 % 2) * 14,
                ),
                name.label(),
                10,
                INK,
                Align::Center,
            );
        }
    }
}

/// Run `run`'s bar at `x` for value `v` of a panel whose largest is `max`, its value above it.
fn bar(f: &mut Figure, x: i32, v: i64, max: i64, run: usize) {
    let h = ((BOTTOM - TOP) as i64 * v / max) as i32;
    f.push(Prim::Rect {
        min: (x, BOTTOM - h),
        max: (x + BAR - 2, BOTTOM),
        stroke: None,
        fill: Some(PALETTE[run % PALETTE.len()]),
        dashed: false,
    });
    f.text(
        (x + BAR / 2, BOTTOM - h - 8),
        &v.to_string(),
        9,
        INK,
        Align::Center,
    );
}

/// Each run's colour and name, under the panels.
fn run_legend(f: &mut Figure, runs: &[String]) {
    for (r, run) in runs.iter().enumerate() {
        let y = BOTTOM + 50 + r as i32 * 18;
        f.push(Prim::Rect {
            min: (40, y - 6),
            max: (52, y + 6),
            stroke: None,
            fill: Some(PALETTE[r % PALETTE.len()]),
            dashed: false,
        });
        f.text((60, y), run, 12, INK, Align::Left);
    }
}
