//! What the HTML report shows, as data: per scenario its verdicts and figures, every kept violation
//! (numbered as `analyzer chain --violation N` numbers them) with its explanation and witness, the
//! chains drawn in advance (violations' witnesses and the most eventful tasks, capped), and the
//! scenarios' rows in a compact columnar form from which the page draws any other task's, event's
//! or aggregate's chain and the run's timeline. [`crate::report::html`] turns it into one file.
//!
//! Everything is built in one pass over each scenario's rows plus the chains drawn; no task is
//! looked up by scanning the trace. The rows are encoded so that a typical row costs about eight
//! bytes: `seq`, `ts` and every id or number column are written as differences from the previous
//! value in the same column, small differences in one character ([`Ints`]), optional columns only
//! for the rows that carry them, and kind plus present columns as one of a few row shapes.

use outbox_trace::{Figures, Kind};
use serde::Serialize;

use crate::check::{Verdict, EXAMPLES};
use crate::explain;
use crate::model::intern::{FastMap, Id, IdTable};
use crate::render::{self, layout, RenderError};
use crate::views::chain::{self, Chain, NumberedViolation};
use crate::views::coverage::{self, Matrix};
use crate::views::scene::{Scene, Scenes};

/// The most eventful tasks drawn in advance per scenario.
pub const EVENTFUL: usize = 8;
/// At most this many rows are embedded in all; scenarios beyond it keep only their drawn chains.
pub const MAX_ROWS: usize = 3_000_000;
/// At most this many scenarios are embedded (summaries, chains, rows), the first in check order;
/// the page says how many more the check judged.
pub const MAX_SCENARIOS: usize = 2_000;

/// The second half of a row shape ([`Rows::shapes`]): which optional columns a row carries, one
/// bit per column, so a row's shape fits in a byte; the page's script (`html/data.js`) reads the
/// same bits (`HAS`).
#[allow(missing_docs)] // Each constant is its column's bit; the column's name is the doc.
pub mod has {
    pub const TASK: u8 = 1;
    pub const EVENT: u8 = 1 << 1;
    pub const AGGREGATE: u8 = 1 << 2;
    pub const ATTEMPT: u8 = 1 << 3;
    pub const BROKER_SEQ: u8 = 1 << 4;
    pub const STORE_REV: u8 = 1 << 5;
    pub const AMOUNT: u8 = 1 << 6;
    pub const COUNTER: u8 = 1 << 7;
}

/// Everything the HTML report shows, as data; [`crate::report::html`] embeds it as JSON.
#[derive(Debug, Serialize)]
pub struct Page {
    /// The trace files the page was made from, for its heading.
    pub traces: Vec<String>,
    /// Kind names by code (the code is the position in the contract's list).
    pub kinds: Vec<&'static str>,
    /// One summary per scenario, in `analyzer check` order.
    pub scenarios: Vec<ScenarioView>,
    /// Every kept violation, numbered from 1.
    pub violations: Vec<ViolationView>,
    /// Chains drawn in advance (SVG).
    pub drawn: Vec<Drawn>,
    /// The ids (task, event, aggregate) and actor names the embedded rows use.
    pub names: Vec<String>,
    /// What the scenarios tried, fault by fault (empty when none recorded it).
    pub coverage: Matrix,
    /// What was capped, for the page to say.
    pub caps: Caps,
    /// The embedded rows per scenario (`None` beyond [`MAX_ROWS`]); written apart from the rest.
    #[serde(skip)]
    pub rows: Vec<Option<Rows>>,
}

/// What the page leaves out.
#[derive(Debug, Serialize)]
pub struct Caps {
    /// Most eventful tasks drawn in advance per scenario.
    pub eventful: usize,
    /// Steps a chain shows at most.
    pub steps: usize,
    /// Violations kept per invariant and scenario.
    pub examples: usize,
    /// Violations counted but not kept.
    pub violations_not_kept: usize,
    /// Rows embedded / rows in the trace.
    pub rows_embedded: usize,
    /// Rows in the trace, to say how many were left out.
    pub rows_total: usize,
    /// [`MAX_ROWS`], for the page to name the cap it hit.
    pub max_rows: usize,
    /// Scenarios embedded / scenarios checked, and [`MAX_SCENARIOS`].
    pub scenarios_embedded: usize,
    /// Scenarios checked.
    pub scenarios_total: usize,
    /// [`MAX_SCENARIOS`], for the page to name the cap it hit.
    pub max_scenarios: usize,
}

/// One scenario's summary.
#[derive(Debug, Serialize)]
pub struct ScenarioView {
    /// The scenario name (with `run_id` and `backend`, the summary's heading).
    pub scenario: String,
    /// The run it belongs to, when a trace holds several.
    pub run_id: String,
    /// The backend that ran it.
    pub backend: String,
    /// Its protocol variant, when recorded.
    pub protocol: Option<String>,
    /// The combined verdict (`valid`, `invalid`, `unknown`), the summary's colour.
    pub verdict: &'static str,
    /// `run_end.detail.recovered`: whether liveness was decided.
    pub recovered: Option<bool>,
    /// The figures, as `analyzer check` reports them.
    pub figures: Figures,
    /// Each invariant's verdict, in the contract's order.
    pub invariants: Vec<InvariantView>,
    /// Rows in the scenario.
    pub rows: usize,
    /// `run_start.detail.ack_wait_ms`, for the chains' pause bands.
    pub ack_wait_ms: Option<i64>,
    /// The lane of external calls: the first actor whose role is `receiver`.
    pub receiver: String,
}

/// One invariant's verdict in one scenario.
#[derive(Debug, Serialize)]
pub struct InvariantView {
    /// The contract's id.
    pub id: &'static str,
    /// Safety or liveness.
    pub class: &'static str,
    /// pass, fail or unknown.
    pub verdict: &'static str,
    /// Violations found (kept and counted).
    pub violations: usize,
    /// Why unknown, or a remark.
    pub reason: Option<String>,
}

/// One kept violation, numbered as `analyzer chain --violation N` numbers it.
#[derive(Debug, Serialize)]
pub struct ViolationView {
    /// 1-based, as `analyzer chain --violation N`.
    pub number: usize,
    /// Index into [`Page::scenarios`].
    pub scene: usize,
    /// The id of the invariant it breaks.
    pub invariant: &'static str,
    /// The event it concerns, if any (the page links its chain).
    pub event: Option<String>,
    /// The task it concerns, if any.
    pub task: Option<String>,
    /// What broke, in the words of `analyzer check`.
    pub text: String,
    /// The witness rows, one line each.
    pub witness: Vec<String>,
    /// Index into [`Page::drawn`] of its chain.
    pub drawn: usize,
}

/// A chain drawn in advance.
#[derive(Debug, Serialize)]
pub struct Drawn {
    /// Index into [`Page::scenarios`].
    pub scene: usize,
    /// `violation` or `task`.
    pub what: &'static str,
    /// The task id, or the violation's event (or task) id.
    pub id: String,
    /// The chain's whole title.
    pub title: String,
    /// The picture, as `analyzer chain -o X.svg` draws it.
    pub svg: String,
}

/// One scenario's rows in `seq` order, column by column. Each column is a string of integers in
/// [`Ints`]' encoding; differences are taken from the previous value of the same column; optional
/// columns hold one value per row that carries them (see [`has`]).
#[derive(Debug, Default, Serialize)]
pub struct Rows {
    /// `(actor name, incarnation)` of each actor life.
    pub lives: Vec<(u32, u32)>,
    /// `(kind code, has bits)` of each row shape: few distinct pairs occur.
    pub shapes: Vec<(u8, u8)>,
    /// Each row's life (index into `lives`).
    pub life: Ints,
    /// Each row's shape (index into `shapes`).
    pub shape: Ints,
    /// `seq`, differences.
    pub seq: Ints,
    /// `ts_ns`, differences.
    pub ts: Ints,
    /// Name index of `task_id`, differences.
    pub task: Ints,
    /// Name index of `event_id`, differences.
    pub event: Ints,
    /// Name index of `aggregate_id`, differences.
    pub aggregate: Ints,
    /// `attempt`, differences.
    pub attempt: Ints,
    /// `broker_seq`, differences; a value below zero, `v`, stands for the Redis Stream entry id
    /// `entry_ids[-1 - v]` (entry ids are packed above 2^63, past what a page's numbers hold).
    pub broker_seq: Ints,
    /// The Redis Stream entry ids among the broker positions, as `<ms>-<n>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entry_ids: Vec<String>,
    /// `(row, partition)` of the rows that carry a `partition` (a broker that orders per
    /// partition); none for most traces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<(u32, i32)>,
    /// `store_rev`, differences.
    pub store_rev: Ints,
    /// `amount`, differences.
    pub amount: Ints,
    /// `counter`, differences.
    pub counter: Ints,
    /// `(row, text)`: the crash point of `crash` rows, the fault of `fault` rows.
    pub notes: Vec<(u32, String)>,
}

/// Integers as text without separators: each is zigzagged (0, -1, 1, -2 ... become 0, 1, 2, 3
/// ...), then written in 5-bit digits, lowest first, from the URL-safe base64 alphabet: the last
/// digit from its first 32 characters, the others from the last 32. Values from -16 to 15 take
/// one character, from -512 to 511 two; no character needs escaping in JSON.
#[derive(Debug, Default, Serialize)]
#[serde(transparent)]
pub struct Ints(String);

/// The digits of [`Ints`].
pub const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Ints {
    /// Appends `v`.
    pub fn push(&mut self, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        while z >= 32 {
            self.0.push(char::from(DIGITS[32 + (z & 31) as usize]));
            z >>= 5;
        }
        self.0.push(char::from(DIGITS[z as usize]));
    }

    /// The values back (what the page does).
    pub fn decode(&self) -> Vec<i64> {
        let mut out = Vec::new();
        let (mut acc, mut shift) = (0u64, 0u32);
        for b in self.0.bytes() {
            let d = DIGITS.iter().position(|&c| c == b).unwrap_or(0) as u64;
            if d >= 32 {
                acc |= (d - 32) << shift;
                shift += 5;
            } else {
                acc |= d << shift;
                out.push(((acc >> 1) as i64) ^ -((acc & 1) as i64));
                (acc, shift) = (0, 0);
            }
        }
        out
    }
}

/// A column written as differences.
#[derive(Default)]
struct Delta(i64);

impl Delta {
    fn push(&mut self, out: &mut Ints, v: i64) {
        out.push(v.wrapping_sub(self.0));
        self.0 = v;
    }
}

/// Dense name indices for the page, in order of first use (so neighbouring rows differ little).
struct Names {
    index: IdTable<u32>,
    names: Vec<String>,
}

impl Names {
    fn of(&mut self, id: Id, scenes: &Scenes) -> u32 {
        let slot = self.index.get_mut(id);
        if *slot == u32::MAX {
            *slot = self.names.len() as u32;
            self.names
                .push(scenes.report.loaded.names.name(id).to_string());
        }
        *slot
    }
}

/// The `k` most eventful tasks of every scene, most eventful first.
pub fn eventful(scenes: &Scenes, k: usize) -> Vec<Vec<Id>> {
    scenes
        .scenes()
        .map(|s| chain::most_eventful_tasks(s, k))
        .collect()
}

/// Draws `chain` as `analyzer chain -o X.svg` does.
fn draw(chain: &Chain) -> Result<(String, String), RenderError> {
    let svg = render::svg::to_svg(&render::chain_figure(&layout::layout(chain)))?;
    Ok((chain.title.clone(), svg))
}

/// The page of `scenes`; `eventful` from `eventful(scenes, EVENTFUL)` (shared with the rest of the
/// report, which draws each scenario's most eventful task too).
pub fn build(
    scenes: &Scenes,
    traces: &[std::path::PathBuf],
    eventful: &[Vec<Id>],
) -> Result<Page, RenderError> {
    build_capped(scenes, traces, eventful, MAX_ROWS)
}

/// [`build`], embedding at most `max_rows` rows: whole scenarios, in order, while they fit.
pub fn build_capped(
    scenes: &Scenes,
    traces: &[std::path::PathBuf],
    eventful: &[Vec<Id>],
    max_rows: usize,
) -> Result<Page, RenderError> {
    let mut drawn = Vec::new();
    let scenarios_total = scenes.scenes().count();
    let shown = scenarios_total.min(MAX_SCENARIOS);
    let mut numbered = chain::violations(scenes);
    numbered.retain(|v| v.scene < shown);
    let mut first_violation = std::collections::BTreeMap::new();
    for v in &numbered {
        first_violation.entry(v.scene).or_insert(v.number);
    }
    let coverage = coverage::matrix(scenes, &first_violation);
    let mut violations = Vec::with_capacity(numbered.len());
    for v in &numbered {
        let (title, svg) = draw(&chain::violation_chain(scenes, v))?;
        drawn.push(Drawn {
            scene: v.scene,
            what: "violation",
            id: v
                .event
                .clone()
                .or_else(|| v.task.clone())
                .unwrap_or_default(),
            title,
            svg,
        });
        violations.push(violation_view(scenes, v, drawn.len() - 1));
    }
    for (scene, tasks) in scenes.scenes().zip(eventful).take(shown) {
        for &t in tasks {
            let (title, svg) = draw(&chain::task_chain(scene, t))?;
            drawn.push(Drawn {
                scene: scene.index,
                what: "task",
                id: scene.names.name(t).to_string(),
                title,
                svg,
            });
        }
    }
    let mut names = Names {
        index: IdTable::new(scenes.report.loaded.names.len() + 1, u32::MAX),
        names: Vec::new(),
    };
    let rows_total: usize = scenes.scenes().map(|s| s.history.rows.len()).sum();
    let mut budget = max_rows;
    let rows: Vec<Option<Rows>> = scenes
        .scenes()
        .take(shown)
        .map(|s| {
            let n = s.history.rows.len();
            (n <= budget).then(|| {
                budget -= n;
                rows(s, scenes, &mut names)
            })
        })
        .collect();
    let not_kept: usize = scenes
        .scenes()
        .flat_map(|s| s.outcomes.iter())
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.more)
        .sum();
    Ok(Page {
        traces: traces.iter().map(|p| p.display().to_string()).collect(),
        kinds: Kind::ALL.iter().map(|k| k.as_str()).collect(),
        scenarios: scenes.scenes().take(shown).map(scenario_view).collect(),
        violations,
        drawn,
        names: names.names,
        coverage,
        caps: Caps {
            eventful: EVENTFUL,
            steps: layout::MAX_STEPS,
            examples: EXAMPLES,
            violations_not_kept: not_kept,
            rows_embedded: max_rows - budget,
            rows_total,
            max_rows,
            scenarios_embedded: shown,
            scenarios_total,
            max_scenarios: MAX_SCENARIOS,
        },
        rows,
    })
}

fn violation_view(scenes: &Scenes, v: &NumberedViolation, drawn: usize) -> ViolationView {
    let scene = scenes.scene(v.scene);
    let witness = v
        .witness
        .iter()
        .map(|&at| {
            let w = explain::witness_row(&scene.history.rows[at], scene.history, scene.names);
            let fields: Vec<String> = w.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(
                "seq {} {}#{} {} {}",
                w.seq,
                w.actor,
                w.incarnation,
                w.kind.as_str(),
                fields.join(" ")
            )
        })
        .collect();
    ViolationView {
        number: v.number,
        scene: v.scene,
        invariant: v.invariant,
        event: v.event.clone(),
        task: v.task.clone(),
        text: v.text.clone(),
        witness,
        drawn,
    }
}

fn scenario_view(s: Scene) -> ScenarioView {
    let receiver = layout::receiver(&s).to_string();
    ScenarioView {
        scenario: s.scenario.to_string(),
        run_id: s.run_id.to_string(),
        backend: s.backend.to_string(),
        protocol: s.protocol.map(String::from),
        verdict: s.verdict.as_str(),
        recovered: s.recovered(),
        figures: s.figures.clone(),
        invariants: s
            .outcomes
            .iter()
            .map(|o| InvariantView {
                id: o.invariant.id(),
                class: o.invariant.class().as_str(),
                verdict: o.verdict.as_str(),
                violations: o.violations.len() + o.more,
                reason: o.reason.as_ref().map(explain::reason),
            })
            .collect(),
        rows: s.history.rows.len(),
        ack_wait_ms: s.ack_wait_ms(),
        receiver,
    }
}

/// A broker position as a page number: itself, or for a Redis Stream entry id, `-1 - i` where
/// `i` is the id's index in `ids`.
fn position(b: u64, index: &mut FastMap<u64, i64>, ids: &mut Vec<String>) -> i64 {
    let p = outbox_trace::BrokerPosition(b);
    if p.as_redis_entry().is_none() {
        return b as i64;
    }
    *index.entry(b).or_insert_with(|| {
        ids.push(p.to_string());
        -(ids.len() as i64)
    })
}

/// One scenario's rows, encoded in one pass.
fn rows(s: Scene, scenes: &Scenes, names: &mut Names) -> Rows {
    let mut out = Rows::default();
    let mut lives: FastMap<(Id, u32), u32> = FastMap::default();
    let mut shapes: FastMap<(u8, u8), u32> = FastMap::default();
    let (mut seq, mut ts) = (Delta::default(), Delta::default());
    let (mut task, mut event, mut aggregate) = Default::default();
    let (mut attempt, mut broker, mut rev, mut amount, mut counter) = Default::default();
    let mut entry_ids: FastMap<u64, i64> = FastMap::default();
    for r in s.rows() {
        let row = r.row;
        let next = out.lives.len() as u32;
        let life = *lives.entry((row.actor, row.incarnation)).or_insert(next);
        if life == next {
            let actor = names.of(row.actor, scenes);
            out.lives.push((actor, row.incarnation));
        }
        out.life.push(i64::from(life));
        seq.push(&mut out.seq, row.seq as i64);
        ts.push(&mut out.ts, row.ts_ns);
        let mut bits = 0u8;
        let mut id = |v: Option<Id>, bit: u8, d: &mut Delta, col: &mut Ints| {
            if let Some(v) = v {
                bits |= bit;
                let i = names.of(v, scenes);
                d.push(col, i64::from(i));
            }
        };
        id(row.task, has::TASK, &mut task, &mut out.task);
        id(row.event, has::EVENT, &mut event, &mut out.event);
        id(
            row.aggregate,
            has::AGGREGATE,
            &mut aggregate,
            &mut out.aggregate,
        );
        let mut num = |v: Option<i64>, bit: u8, d: &mut Delta, col: &mut Ints| {
            if let Some(v) = v {
                bits |= bit;
                d.push(col, v);
            }
        };
        num(
            row.attempt().map(i64::from),
            has::ATTEMPT,
            &mut attempt,
            &mut out.attempt,
        );
        num(
            row.broker_seq()
                .map(|b| position(b, &mut entry_ids, &mut out.entry_ids)),
            has::BROKER_SEQ,
            &mut broker,
            &mut out.broker_seq,
        );
        num(
            row.store_rev(),
            has::STORE_REV,
            &mut rev,
            &mut out.store_rev,
        );
        num(row.amount(), has::AMOUNT, &mut amount, &mut out.amount);
        num(row.counter(), has::COUNTER, &mut counter, &mut out.counter);
        // A kind's discriminant is its position in `Kind::ALL`.
        let key = (row.kind as u8, bits);
        let next = out.shapes.len() as u32;
        let shape = *shapes.entry(key).or_insert(next);
        if shape == next {
            out.shapes.push(key);
        }
        out.shape.push(i64::from(shape));
        if let Some(p) = row.partition() {
            out.partitions.push((r.at as u32, p));
        }
        match row.kind {
            Kind::Crash => out.notes.push((r.at as u32, r.crash_point().to_string())),
            Kind::Fault => out.notes.push((r.at as u32, r.fault_name().to_string())),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_round_trip_and_stay_short() {
        let values = [
            0,
            1,
            -1,
            15,
            -16,
            16,
            511,
            -512,
            512,
            1 << 40,
            i64::MAX,
            i64::MIN,
        ];
        let mut ints = Ints::default();
        for v in values {
            ints.push(v);
        }
        assert_eq!(ints.decode(), values);
        let short = |v| {
            let mut i = Ints::default();
            i.push(v);
            i.0.len()
        };
        assert_eq!(
            (short(15), short(-16), short(16), short(-512)),
            (1, 1, 2, 2)
        );
        assert!(!serde_json::to_string(&ints).unwrap().contains('\\'));
    }
}
