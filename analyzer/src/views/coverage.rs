//! The coverage matrix: what a trace's scenarios tried (`run_end.detail.faults`), fault by fault,
//! as rows (what the fault was aimed at: a process or service and the step it followed, or the
//! time) against columns (the fault: `kill`, `pause`, `restart`, `drop replies`, ...). Each cell
//! holds the worst its scenarios found (a violation, then unknown, then never fired, then fired)
//! and where to look: the scenario, and its first violation. Results as data; the HTML report
//! shows it as a table and `analyzer report` draws it as SVG ([`svg`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::check::coverage::Tried;
use outbox_trace::Kind;
use serde::Serialize;

use super::scene::Scenes;
use crate::check::{RunVerdict, Verdict};

/// What a cell's scenarios found, from the best to the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// The fault fired and its scenario held every invariant.
    Fired,
    /// The fault never fired: nothing was tested there.
    NeverFired,
    /// The fault fired; its scenario could not be decided.
    Unknown,
    /// Its scenario broke an invariant.
    Violation,
}

impl State {
    /// The cell's word.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Fired => "fired",
            State::NeverFired => "never fired",
            State::Unknown => "unknown",
            State::Violation => "FAIL",
        }
    }
}

/// One cell: the worst of its faults, and where to look.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The worst found.
    pub state: State,
    /// The scenario (its position, as the report lists scenarios) of the worst.
    pub scene: usize,
    /// That scenario's first violation, numbered as `analyzer chain --violation N` numbers them.
    pub violation: Option<usize>,
    /// The faults in the cell, as specs.
    pub faults: Vec<String>,
}

/// One row: what the faults were aimed at, and a cell per column.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `worker · effect_committed`, `redis · at 2s`.
    pub label: String,
    /// One per column.
    pub cells: Vec<Option<Cell>>,
}

/// The whole matrix; empty where no scenario recorded what it tried.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Matrix {
    /// The faults, in a fixed order.
    pub columns: Vec<String>,
    /// The targets and steps, in order.
    pub rows: Vec<Row>,
}

/// The order of the columns, by the fault's words.
const COLUMNS: [&str; 9] = [
    "kill",
    "pause",
    "restart",
    "drop replies",
    "drop requests",
    "cut",
    "partition",
    "lose commit-reply",
    "lose puback",
];

/// Where `fault` goes: its row and its column, from its recorded form; a fault recorded without
/// one (an older trace, another producer) is placed by its text.
pub fn place_of(fault: &Tried) -> Option<(String, String)> {
    match &fault.form {
        Some(form) => Some((
            format!("{} · {}", form.place(), form.when()?),
            form.verb.clone(),
        )),
        None => place(&fault.spec),
    }
}

/// Where `spec` goes: its row and its column. A spec in words this view does not know goes
/// under its first word.
pub fn place(spec: &str) -> Option<(String, String)> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let verb_len = match words.first()? {
        &"drop" | &"lose" => 2,
        _ => 1,
    };
    let column = words.get(..verb_len)?.join(" ");
    let rest = &words[verb_len..];
    let at = rest.iter().position(|w| *w == "after" || *w == "at")?;
    let target = rest[..at].join(" ");
    let when = match rest[at] {
        "after" => rest[at + 1..]
            .iter()
            .find(|w| w.parse::<Kind>().is_ok())?
            .to_string(),
        _ => format!("at {}", rest.get(at + 1)?),
    };
    Some((format!("{target} · {when}"), column))
}

/// The matrix of `scenes`; `first_violation` gives each scenario's first violation number.
pub fn matrix(scenes: &Scenes, first_violation: &BTreeMap<usize, usize>) -> Matrix {
    let mut cells: BTreeMap<(String, String), Cell> = BTreeMap::new();
    for scene in scenes.scenes() {
        let failed = scene.outcomes.iter().any(|o| o.verdict == Verdict::Fail);
        let coverage = &scenes.report.scenarios[scene.index].coverage;
        for fault in &coverage.faults {
            let Some(key) = place_of(fault) else {
                continue;
            };
            let state = if failed {
                State::Violation
            } else if fault.fired == 0 {
                State::NeverFired
            } else if scene.verdict == RunVerdict::Unknown {
                State::Unknown
            } else {
                State::Fired
            };
            let violation = first_violation.get(&scene.index).copied();
            let cell = cells.entry(key).or_insert(Cell {
                state,
                scene: scene.index,
                violation,
                faults: Vec::new(),
            });
            if state > cell.state {
                cell.state = state;
                cell.scene = scene.index;
                cell.violation = violation;
            }
            if !cell.faults.contains(&fault.spec) {
                cell.faults.push(fault.spec.clone());
            }
        }
    }
    let mut columns: Vec<String> = COLUMNS
        .iter()
        .filter(|c| cells.keys().any(|(_, col)| col == *c))
        .map(|c| c.to_string())
        .collect();
    for (_, col) in cells.keys() {
        if !columns.contains(col) {
            columns.push(col.clone());
        }
    }
    let mut rows: BTreeMap<String, Vec<Option<Cell>>> = BTreeMap::new();
    for ((label, col), cell) in cells {
        let at = columns.iter().position(|c| *c == col).expect("a column");
        let row = rows
            .entry(label)
            .or_insert_with(|| vec![None; columns.len()]);
        row[at] = Some(cell);
    }
    Matrix {
        columns,
        rows: rows
            .into_iter()
            .map(|(label, cells)| Row { label, cells })
            .collect(),
    }
}

/// Text safe in SVG: the contract's one XML escaping.
fn escape(text: &str) -> String {
    outbox_trace::output::escape::xml(text)
}

/// The matrix as an SVG table: a row per target and step, a column per fault, each cell its word
/// on its colour.
pub fn svg(m: &Matrix) -> String {
    const LABEL_W: usize = 300;
    const CELL_W: usize = 120;
    const H: usize = 24;
    let width = LABEL_W + CELL_W * m.columns.len() + 10;
    let height = H * (m.rows.len() + 1) + 10;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="{width}" height="{height}" fill="white"/>
"#
    );
    for (i, col) in m.columns.iter().enumerate() {
        let x = LABEL_W + i * CELL_W + CELL_W / 2;
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{}" text-anchor="middle" font-weight="bold">{}</text>"#,
            H - 8,
            escape(col)
        );
    }
    for (r, row) in m.rows.iter().enumerate() {
        let y = H * (r + 1);
        let _ = writeln!(
            out,
            r#"<text x="4" y="{}">{}</text>"#,
            y + H - 8,
            escape(&row.label)
        );
        for (c, cell) in row.cells.iter().enumerate() {
            let x = LABEL_W + c * CELL_W;
            let (fill, word) = match cell {
                None => ("#ffffff", "-"),
                Some(cell) => (
                    match cell.state {
                        State::Fired => "#d9f2d9",
                        State::NeverFired => "#eeeeee",
                        State::Unknown => "#fff2c2",
                        State::Violation => "#f8c8c8",
                    },
                    cell.state.as_str(),
                ),
            };
            let _ = writeln!(
                out,
                r##"<rect x="{x}" y="{y}" width="{CELL_W}" height="{H}" fill="{fill}" stroke="#999999"/><text x="{}" y="{}" text-anchor="middle">{word}</text>"##,
                x + CELL_W / 2,
                y + H - 8
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_with_its_form_is_placed_by_the_form_not_the_text() {
        let mut fault = Tried {
            spec: "kill worker after acked".into(),
            origin: crate::check::coverage::Origin::Searched,
            fired: 1,
            why: None,
            form: Some(outbox_trace::detail::FaultForm {
                verb: "drop replies".into(),
                target: Some("relay".into()),
                service: Some("redis".into()),
                after: Some("publish_attempt".into()),
                ..Default::default()
            }),
        };
        assert_eq!(
            place_of(&fault).unwrap(),
            (
                "relay redis · publish_attempt".into(),
                "drop replies".into()
            )
        );
        fault.form.as_mut().unwrap().after = None;
        fault.form.as_mut().unwrap().at_ms = Some(2000);
        assert_eq!(place_of(&fault).unwrap().0, "relay redis · at 2s");
        fault.form = None;
        assert_eq!(
            place_of(&fault).unwrap(),
            ("worker · acked".into(), "kill".into())
        );
    }

    #[test]
    fn a_spec_goes_to_its_target_and_step_under_its_fault() {
        let at = |s: &str| place(s).unwrap();
        assert_eq!(
            at("kill worker after effect_committed 20"),
            ("worker · effect_committed".into(), "kill".into())
        );
        assert_eq!(
            at("pause worker after delivered +100ms for 5s unless alone"),
            ("worker · delivered".into(), "pause".into())
        );
        assert_eq!(
            at("restart redis after relay publish_acked 3"),
            ("redis · publish_acked".into(), "restart".into())
        );
        assert_eq!(
            at("drop replies relay redis after publish_attempt 3 for 6s"),
            (
                "relay redis · publish_attempt".into(),
                "drop replies".into()
            )
        );
        assert_eq!(
            at("lose commit-reply worker postgres after delivered 3"),
            (
                "worker postgres · delivered".into(),
                "lose commit-reply".into()
            )
        );
        assert_eq!(
            at("partition worker-2 redis at 1s for 4s"),
            ("worker-2 redis · at 1s".into(), "partition".into())
        );
        assert_eq!(place("nonsense"), None);
    }

    #[test]
    fn the_svg_has_a_cell_per_row_and_column() {
        let cell = |state| {
            Some(Cell {
                state,
                scene: 0,
                violation: None,
                faults: vec!["kill worker after acked".into()],
            })
        };
        let m = Matrix {
            columns: vec!["kill".into(), "pause".into()],
            rows: vec![
                Row {
                    label: "worker · acked".into(),
                    cells: vec![cell(State::Violation), None],
                },
                Row {
                    label: "api · <task_accepted>".into(),
                    cells: vec![cell(State::Fired), cell(State::NeverFired)],
                },
            ],
        };
        let svg = svg(&m);
        assert_eq!(svg.matches("<rect x=").count(), 4);
        assert!(svg.contains(">FAIL<") && svg.contains(">never fired<"));
        assert!(svg.contains("&lt;task_accepted&gt;"), "escaped");
    }
}
