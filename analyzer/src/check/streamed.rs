//! Checking a file as it streams, holding no rows: each decoded row goes straight to the rules
//! of its scenario ([`Scan`]), so memory grows with the distinct ids, not with the rows. Only
//! when a rule found a violation is the file read again, keeping just the rows its witnesses
//! need (and gathering those the rules ask for); a third read fetches any witness row the second
//! did not foresee.
//!
//! The rules need each run's rows in ascending `seq` order, as the recorder writes them; a file
//! that is not gives [`LoadError::NotInSeqOrder`], and the caller loads it whole instead.

use std::collections::BTreeSet;
use std::path::Path;

use outbox_trace::{Detail, Kind};

use super::coverage::Coverage;
use super::invariant::Invariant;
use super::report::ScenarioReport;
use super::scan::{Gathering, Scan, Scanned};
use crate::model::history::History;
use crate::model::intern::{FastMap, Id, Interner};
use crate::model::load::{self, LoadError, Loaded, Sink};
use crate::model::row::Row;

/// Checks `path` as it streams, appending its file, its histories (holding only witness rows)
/// and its scenario reports to `loaded` and `reports`.
///
/// Decoding and interning with building the rows run on two threads of their own (see
/// `load::read`); this one keeps the rows in order and feeds them to each scenario's [`Scan`].
/// Once the file is read, each scenario is judged in turn: one without violations keeps only
/// its report; only those with violations keep their rules' findings for the witnesses.
pub fn check(
    loaded: &mut Loaded,
    path: &Path,
    reports: &mut Vec<ScenarioReport>,
) -> Result<(), LoadError> {
    let file = loaded.files.len();
    let mut histories = Vec::new();
    let mut feed = Feed {
        scans: Vec::new(),
        positions: Vec::new(),
        last_seq: FastMap::default(),
        current: None,
    };
    let read = load::read(path, &mut loaded.names, &mut histories, file, &mut feed)?;
    let first = loaded.histories.len();
    let mut judged = Vec::with_capacity(histories.len());
    let mut pending = Vec::new();
    let mut scans = feed.scans.into_iter();
    for (i, h) in histories.iter().enumerate() {
        let scan = scans
            .next()
            .unwrap_or_else(|| Box::new(Scan::of(Invariant::ALL)));
        let scanned = scan.finish(&loaded.names);
        if scanned.any_violation() {
            pending.push((i, scanned));
            judged.push(None);
        } else {
            judged.push(Some(report(first + i, scanned, h, &loaded.names)));
        }
    }
    if !pending.is_empty() {
        histories = witnesses(loaded, path, file, histories.len(), &mut pending)?;
    }
    for (i, scanned) in pending {
        judged[i] = Some(report(first + i, scanned, &histories[i], &loaded.names));
    }
    reports.extend(judged.into_iter().flatten());
    loaded.histories.extend(histories);
    loaded.files.push(read.into_file(path));
    Ok(())
}

/// The report of history `history` (`h`), its rules' findings settled.
fn report(history: usize, s: Scanned, h: &History, names: &Interner) -> ScenarioReport {
    let figures = s.figures.clone();
    let run_end = s.ends.run_end.as_ref().and_then(|(_, end)| end.as_deref());
    let coverage = Coverage::of(s.ends.run_start.as_deref(), run_end);
    let outcomes = s.settle(h, names);
    ScenarioReport::new(history, outcomes, figures, coverage)
}

/// Reads the file again for the rows the violations' witnesses need, and completes them:
/// `pending` holds the scenarios with violations (by history), of `count` histories.
fn witnesses(
    loaded: &mut Loaded,
    path: &Path,
    file: usize,
    count: usize,
    pending: &mut [(usize, Scanned)],
) -> Result<Vec<History>, LoadError> {
    let mut wanted: Vec<Wanted> = (0..count).map(|_| Wanted::default()).collect();
    for (i, s) in pending.iter_mut() {
        wanted[*i] = Wanted::of(s);
    }
    let mut keep = Keep {
        wanted,
        positions: Vec::new(),
    };
    let mut histories = Vec::new();
    load::read(path, &mut loaded.names, &mut histories, file, &mut keep)?;
    for (i, s) in pending.iter_mut() {
        if let Some(g) = std::mem::take(&mut keep.wanted[*i]).gathering {
            g.finish(s);
        }
    }
    let unforeseen = pending
        .iter()
        .any(|(i, s)| s.witness_rows().iter().any(|&at| !histories[*i].holds(at)));
    if unforeseen {
        let mut wanted: Vec<Wanted> = (0..count).map(|_| Wanted::default()).collect();
        for (i, s) in pending.iter() {
            wanted[*i] = Wanted::exactly(s);
        }
        let mut fetch = Keep {
            wanted,
            positions: Vec::new(),
        };
        histories.clear();
        load::read(path, &mut loaded.names, &mut histories, file, &mut fetch)?;
    }
    for h in &mut histories {
        h.make_partial();
    }
    Ok(histories)
}

/// Numbers each scenario's rows, makes sure each run's rows come in ascending `seq` order, and
/// feeds them to their scenario's rules.
struct Feed {
    /// Per history: its rules (boxed: a file may hold many scenarios, and the list grows by
    /// doubling, which would hold each scan's room twice).
    #[allow(clippy::vec_box)]
    scans: Vec<Box<Scan>>,
    /// Per history: the position of its next row.
    positions: Vec<usize>,
    /// The last `seq` of each run but the current one.
    last_seq: FastMap<Id, u64>,
    /// The current run and its last `seq`: a run's rows come together, so most rows skip the map.
    current: Option<(Id, u64)>,
}

impl Feed {
    /// Fails unless `seq` comes after every earlier `seq` of `run`.
    fn order(&mut self, run: Id, seq: u64) -> Result<(), LoadError> {
        let last = match self.current {
            Some((r, last)) if r == run => Some(last),
            current => {
                if let Some((r, last)) = current {
                    self.last_seq.insert(r, last);
                }
                self.last_seq.get(&run).copied()
            }
        };
        if last.is_some_and(|last| seq <= last) {
            return Err(LoadError::NotInSeqOrder);
        }
        self.current = Some((run, seq));
        Ok(())
    }
}

impl Sink for Feed {
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError> {
        self.order(histories[h].run_id, row.seq)?;
        if self.positions.len() <= h {
            self.positions.resize(h + 1, 0);
        }
        let at = self.positions[h];
        self.positions[h] += 1;
        while self.scans.len() <= h {
            self.scans.push(Box::new(Scan::of(Invariant::ALL)));
        }
        let scan = &mut self.scans[h];
        // Few rows have a detail kept: only theirs is parsed (and dropped).
        match detail {
            Some(text) => {
                let detail =
                    Detail::parse(row.kind, text).map_err(LoadError::bad_detail(row.seq))?;
                scan.row(at, row, Some(&detail));
            }
            None => scan.row(at, row, None),
        }
        Ok(())
    }

    fn unknown(&mut self, run: Id, seq: u64) -> Result<(), LoadError> {
        self.order(run, seq)
    }

    fn keeps_rows(&self) -> bool {
        false
    }

    /// The rules never read `ts_ns`; the rows kept for witnesses come from a later read.
    fn skips(&self) -> &'static [&'static str] {
        &["ts_ns"]
    }
}

/// The rows one scenario's witnesses need.
#[derive(Default)]
struct Wanted {
    /// The rules still gathering.
    gathering: Option<Gathering>,
    /// Witness rows already known, by position.
    rows: BTreeSet<usize>,
    /// Rows of these events and tasks, and every `crash` row, may be witnesses to gather.
    events: BTreeSet<Id>,
    tasks: BTreeSet<Id>,
    /// Whether to keep the rows of `events`, `tasks` and crashes too.
    foresee: bool,
}

impl Wanted {
    /// The rows the violations of `s` may need, with the rules that still gather.
    fn of(s: &mut Scanned) -> Self {
        let violations = s.outcomes.iter().flat_map(|o| &o.violations);
        Wanted {
            rows: s.witness_rows(),
            events: violations.clone().filter_map(|v| v.event).collect(),
            tasks: violations.filter_map(|v| v.task).collect(),
            gathering: s.gathering(),
            foresee: true,
        }
    }

    /// Exactly the witness rows of `s`.
    fn exactly(s: &Scanned) -> Self {
        Wanted {
            rows: s.witness_rows(),
            ..Wanted::default()
        }
    }

    fn wants(&self, at: usize, r: &Row) -> bool {
        self.rows.contains(&at)
            || (self.foresee
                && (r.kind == Kind::Crash
                    || r.event.is_some_and(|e| self.events.contains(&e))
                    || r.task.is_some_and(|t| self.tasks.contains(&t))))
    }
}

/// Keeps the rows each scenario's witnesses want, in partial histories.
struct Keep {
    wanted: Vec<Wanted>,
    positions: Vec<usize>,
}

impl Sink for Keep {
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError> {
        if self.positions.len() <= h {
            self.positions.resize(h + 1, 0);
        }
        let at = self.positions[h];
        self.positions[h] += 1;
        let Some(wanted) = self.wanted.get_mut(h) else {
            return Ok(());
        };
        if let Some(g) = &mut wanted.gathering {
            g.row(at, row);
        }
        if wanted.wants(at, row) {
            let history = &mut histories[h];
            let mut row = row.clone();
            if let Some(text) = detail {
                history
                    .attach_detail(&mut row, text)
                    .map_err(LoadError::bad_detail(row.seq))?;
            }
            history.keep_at(at, row);
        }
        Ok(())
    }

    fn unknown(&mut self, _: Id, _: u64) -> Result<(), LoadError> {
        Ok(())
    }

    fn keeps_rows(&self) -> bool {
        false
    }
}
