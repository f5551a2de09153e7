//! Events per kind over time for a whole run, as data: the run's span is cut into a fixed number
//! of equal time buckets, each kind gets one count per bucket, and `crash` and `fault` rows become
//! markers. Scenarios of one run share its clock, so their starts are marked too. The size of the
//! result depends on the bucket count and the number of kinds, not on the number of events;
//! [`crate::render::timeline`] draws it.

use outbox_trace::Kind;

use crate::views::scene::{RowRef, Scene, Scenes};

/// The default number of time buckets.
pub const BUCKETS: usize = 120;

/// Kinds drawn as markers or left out of the series: one-off bookkeeping rows, crashes and
/// faults (markers), restarts (they follow their crash).
const NOT_SERIES: &[Kind] = &[
    Kind::RunStart,
    Kind::RunEnd,
    Kind::Observed,
    Kind::Crash,
    Kind::Restart,
    Kind::Fault,
];

/// Why there is no timeline.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// No scene has the requested scenario.
    #[error("no scenario `{0}` in the trace")]
    NoScenario(String),
    /// No scene has the requested run.
    #[error("no run `{0}` in the trace")]
    NoRun(String),
    /// The selection holds no event.
    #[error("no events to draw")]
    Empty,
}

/// One kind's counts, one per bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The kind counted: one line of the plot.
    pub kind: Kind,
    /// Rows of this kind in the selection.
    pub total: u64,
    /// Rows per bucket.
    pub counts: Vec<u32>,
}

/// What a marker marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// An actor died (`crash` row).
    Crash,
    /// An injected fault (`fault` row).
    Fault,
}

/// A crash or fault moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// When, in nanoseconds since the run started.
    pub ts_ns: i64,
    /// Crash or fault.
    pub mark: Mark,
    /// `actor#incarnation at point` for a crash, `actor: fault` for a fault.
    pub label: String,
    /// The row's scenario.
    pub scenario: String,
}

/// Where a scenario starts on the run's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSpan {
    /// The scenario's name, written at its start rule.
    pub name: String,
    /// Its first row's `ts_ns`.
    pub start_ns: i64,
    /// Its last row's `ts_ns`.
    pub end_ns: i64,
}

/// A run's events per kind over time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// `run_id`, and the scenario when one was chosen.
    pub title: String,
    /// The first row's `ts_ns`.
    pub start_ns: i64,
    /// The last row's `ts_ns`.
    pub end_ns: i64,
    /// The width of one bucket in nanoseconds (at least 1).
    pub bucket_ns: i64,
    /// One series per kind present, in the contract's kind order.
    pub series: Vec<Series>,
    /// Crashes and faults, by time.
    pub markers: Vec<Marker>,
    /// The scenarios, by start time.
    pub scenarios: Vec<ScenarioSpan>,
    /// Rows in the selection.
    pub events: usize,
}

impl Timeline {
    /// The number of buckets.
    pub fn buckets(&self) -> usize {
        self.series.first().map_or(0, |s| s.counts.len())
    }

    /// The largest count of any bucket of any series.
    pub fn peak(&self) -> u32 {
        self.series
            .iter()
            .flat_map(|s| s.counts.iter().copied())
            .max()
            .unwrap_or(0)
    }

    /// How many markers are of `mark`.
    pub fn count(&self, mark: Mark) -> usize {
        self.markers.iter().filter(|m| m.mark == mark).count()
    }
}

/// The scenes to draw: one run (the first, unless `run` names one), all its scenarios or only
/// `scenario`.
pub fn select<'a>(
    scenes: &'a Scenes,
    run: Option<&str>,
    scenario: Option<&str>,
) -> Result<Vec<Scene<'a>>, TimelineError> {
    let run_id = match run {
        Some(r) => r,
        None => match scenes.scenes().next() {
            Some(s) => s.run_id,
            None => return Err(TimelineError::Empty),
        },
    };
    let of_run: Vec<Scene> = scenes.scenes().filter(|s| s.run_id == run_id).collect();
    if of_run.is_empty() {
        return Err(TimelineError::NoRun(run_id.to_string()));
    }
    let chosen: Vec<Scene> = of_run
        .into_iter()
        .filter(|s| scenario.is_none_or(|want| s.scenario == want))
        .collect();
    if chosen.is_empty() {
        return Err(TimelineError::NoScenario(
            scenario.unwrap_or_default().to_string(),
        ));
    }
    Ok(chosen)
}

/// The timeline of the given scenes (of one run), cut into `buckets` equal time buckets.
pub fn timeline(scenes: &[Scene], buckets: usize) -> Result<Timeline, TimelineError> {
    let buckets = buckets.max(1);
    let times = || {
        scenes
            .iter()
            .flat_map(|s| s.history.rows.iter().map(|r| r.ts_ns))
    };
    let (Some(start_ns), Some(end_ns)) = (times().min(), times().max()) else {
        return Err(TimelineError::Empty);
    };
    let span = i128::from(end_ns) - i128::from(start_ns) + 1;
    let bucket_of = |ts: i64| {
        let at = (i128::from(ts) - i128::from(start_ns)) * buckets as i128 / span;
        (at as usize).min(buckets - 1)
    };
    let mut counts = vec![vec![0u32; buckets]; Kind::ALL.len()];
    let mut totals = vec![0u64; Kind::ALL.len()];
    let mut markers = Vec::new();
    let mut rows = 0;
    for scene in scenes {
        for e in scene.rows() {
            rows += 1;
            let k = kind_index(e.kind());
            counts[k][bucket_of(e.ts_ns())] += 1;
            totals[k] += 1;
            if let Some(m) = marker(scene, &e) {
                markers.push((e.ts_ns(), e.seq(), m));
            }
        }
    }
    markers.sort_by_key(|(ts, seq, _)| (*ts, *seq));
    let series = Kind::ALL
        .iter()
        .zip(counts.into_iter().zip(totals))
        .filter(|(k, (_, total))| *total > 0 && !NOT_SERIES.contains(k))
        .map(|(&kind, (counts, total))| Series {
            kind,
            total,
            counts,
        })
        .collect();
    let mut spans: Vec<ScenarioSpan> = scenes
        .iter()
        .filter_map(|s| {
            let ts = s.history.rows.iter().map(|r| r.ts_ns);
            Some(ScenarioSpan {
                name: s.scenario.to_string(),
                start_ns: ts.clone().min()?,
                end_ns: ts.max()?,
            })
        })
        .collect();
    spans.sort_by(|a, b| (a.start_ns, &a.name).cmp(&(b.start_ns, &b.name)));
    let run_id = scenes[0].run_id;
    let title = match scenes {
        [one] => format!("timeline · {run_id} · {}", one.scenario),
        _ => format!("timeline · {run_id} · {} scenarios", scenes.len()),
    };
    Ok(Timeline {
        title,
        start_ns,
        end_ns,
        bucket_ns: (span as f64 / buckets as f64).ceil().max(1.0) as i64,
        series,
        markers: markers.into_iter().map(|(_, _, m)| m).collect(),
        scenarios: spans,
        events: rows,
    })
}

fn kind_index(kind: Kind) -> usize {
    Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

/// The marker of a `crash` or `fault` row.
fn marker(scene: &Scene, e: &RowRef) -> Option<Marker> {
    let (mark, label) = match e.kind() {
        Kind::Crash => {
            let label = format!("{}#{} at {}", e.actor(), e.incarnation(), e.crash_point());
            (Mark::Crash, label)
        }
        Kind::Fault => (Mark::Fault, format!("{}: {}", e.actor(), e.fault_name())),
        _ => return None,
    };
    Some(Marker {
        ts_ns: e.ts_ns(),
        mark,
        label,
        scenario: scene.scenario.to_string(),
    })
}
