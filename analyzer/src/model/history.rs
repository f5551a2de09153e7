//! The compact history of one `(run_id, scenario)`: the rows the checks need, sorted by `seq`, with
//! strings interned and optional numbers kept without `Option` padding.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use outbox_trace::detail::{BadDetail, Observed, RunEnd, RunStart};
use outbox_trace::{Detail, Kind};

use crate::model::index::Indices;
use crate::model::intern::Id;
#[cfg(doc)]
use crate::model::intern::IdTable;
use crate::model::row::{DetailIndex, Row};

/// Kinds whose `detail` the analyzer keeps (the rest are never read).
pub fn keeps_detail(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::RunStart
            | Kind::Crash
            | Kind::Fault
            | Kind::Observed
            | Kind::RunEnd
            | Kind::PublishUnacked
            | Kind::PublishFailed
    )
}

/// A kept `detail`: the file's text (witnesses quote it as written) and its typed decoding.
#[derive(Debug, Clone)]
pub struct KeptDetail {
    /// The text as the file holds it.
    pub text: Box<str>,
    /// The text decoded once, by the row's kind.
    pub typed: Detail,
}

/// One `(run_id, scenario)` of one file.
#[derive(Debug)]
pub struct History {
    /// Index of the file in the order given on the command line.
    pub file: usize,
    /// The run it belongs to (one file may hold several), interned.
    pub run_id: Id,
    /// The scenario it records, interned: with `run_id`, what the history is of.
    pub scenario: Id,
    /// The `backend` of the first row.
    pub backend: Id,
    /// Other `backend` values seen (normally none).
    pub other_backends: Vec<Id>,
    /// Rows of known kinds, sorted by `seq` once loading is done.
    pub rows: Vec<Row>,
    /// `detail`s of the kinds in [`keeps_detail`].
    pub details: Vec<KeptDetail>,
    /// Rows whose kind requires a field they lack: `(kind, column) -> rows`.
    pub missing: BTreeMap<(Kind, &'static str), u64>,
    /// Whether `seq` was derived from span times on separate clocks.
    pub seq_from_clocks: bool,
    /// Row indices per kind (position in [`Kind::ALL`]), built by [`History::finish`].
    by_kind: Vec<Vec<u32>>,
    /// One more than the largest id index the rows use.
    id_bound: usize,
    /// How many rows of `rows` `by_kind` and `id_bound` cover.
    indexed: usize,
    /// Whether the rows indexed came in `seq` order.
    in_order: bool,
    /// Rows by event, task, aggregate and actor life, built on first use.
    indices: OnceLock<Indices>,
    /// For a history holding only some of its scenario's rows (the witnesses of a streamed
    /// check): each row's position among all the scenario's rows, ascending.
    positions: Option<Vec<usize>>,
}

impl History {
    /// An empty history.
    pub fn new(file: usize, run_id: Id, scenario: Id, backend: Id) -> Self {
        History {
            file,
            run_id,
            scenario,
            backend,
            other_backends: Vec::new(),
            rows: Vec::new(),
            details: Vec::new(),
            missing: BTreeMap::new(),
            seq_from_clocks: false,
            by_kind: Vec::new(),
            id_bound: 0,
            indexed: 0,
            in_order: true,
            indices: OnceLock::new(),
            positions: None,
        }
    }

    /// The row at position `at` of the scenario: `rows[at]`, or for a history holding only
    /// some rows, the one kept for that position.
    ///
    /// # Panics
    /// If a partial history lacks the row: the streamed check keeps every witness row.
    pub fn row(&self, at: usize) -> &Row {
        match &self.positions {
            None => &self.rows[at],
            Some(p) => {
                let i = p.binary_search(&at).expect("every witness row is kept");
                &self.rows[i]
            }
        }
    }

    /// Whether the row at position `at` is held.
    pub fn holds(&self, at: usize) -> bool {
        match &self.positions {
            None => at < self.rows.len(),
            Some(p) => p.binary_search(&at).is_ok(),
        }
    }

    /// Keeps one row of a partial history, at its position among all the scenario's rows
    /// (positions ascending).
    pub fn keep_at(&mut self, at: usize, row: Row) {
        self.positions.get_or_insert_with(Vec::new).push(at);
        self.rows.push(row);
    }

    /// Marks the history as partial (holding only the rows given to [`History::keep_at`]).
    pub fn make_partial(&mut self) {
        self.positions.get_or_insert_with(Vec::new);
    }

    /// Keeps `text` as `row`'s detail, decoded once by the row's kind; a detail with a field of
    /// the wrong type is kept by none.
    pub fn attach_detail(&mut self, row: &mut Row, text: &str) -> Result<(), BadDetail> {
        let typed = Detail::parse(row.kind, text)?;
        row.detail = DetailIndex::new(self.details.len());
        self.details.push(KeptDetail {
            text: text.into(),
            typed,
        });
        Ok(())
    }

    /// The kept `detail` of a row, typed.
    pub fn detail(&self, row: &Row) -> Option<&Detail> {
        self.kept(row).map(|d| &d.typed)
    }

    /// The kept `detail` text of a row, as the file holds it.
    pub fn detail_text(&self, row: &Row) -> Option<&str> {
        self.kept(row).map(|d| d.text.as_ref())
    }

    fn kept(&self, row: &Row) -> Option<&KeptDetail> {
        row.detail.and_then(|i| self.details.get(i.get()))
    }

    /// The last `observed` row's index and ground truth (every total absent when its detail is
    /// missing or not an object).
    pub fn observed(&self) -> Option<(usize, &Observed)> {
        static NOTHING: std::sync::LazyLock<Observed> = std::sync::LazyLock::new(Observed::default);
        let at = self.last_of(Kind::Observed)?;
        let observed = self.detail(&self.rows[at]).and_then(Detail::observed);
        Some((at, observed.unwrap_or(&NOTHING)))
    }

    /// The last `run_end` row's index and detail (absent detail: all fields absent).
    pub fn run_end(&self) -> Option<(usize, Option<&RunEnd>)> {
        let at = self.last_of(Kind::RunEnd)?;
        Some((at, self.detail(&self.rows[at]).and_then(Detail::run_end)))
    }

    /// The first `run_start` row's detail.
    pub fn run_start(&self) -> Option<&RunStart> {
        let at = self.first_of(Kind::RunStart)?;
        self.detail(&self.rows[at])?.run_start()
    }

    /// The rows by event, task, aggregate and actor life (built once, in linear time, on the
    /// first call).
    pub fn indices(&self) -> &Indices {
        self.indices
            .get_or_init(|| Indices::build(&self.rows, self.id_bound))
    }

    /// The index of the last row of `kind` (by `seq`).
    pub fn last_of(&self, kind: Kind) -> Option<usize> {
        self.of(kind).next_back().map(|(at, _)| at)
    }

    /// The index of the first row of `kind` (by `seq`).
    pub fn first_of(&self, kind: Kind) -> Option<usize> {
        self.of(kind).next().map(|(at, _)| at)
    }

    /// Appends a row and indexes it: cheaper than pushing to [`History::rows`] and indexing all
    /// rows in [`History::finish`].
    pub fn push(&mut self, row: Row) {
        if self.indexed != self.rows.len() {
            self.rows.push(row);
            return;
        }
        if self.rows.last().is_some_and(|last| last.seq > row.seq) {
            self.in_order = false;
        }
        self.index(self.rows.len(), &row);
        self.rows.push(row);
        self.indexed += 1;
    }

    fn index(&mut self, at: usize, r: &Row) {
        let ids = [Some(r.actor), r.event, r.task, r.aggregate];
        for id in ids.into_iter().flatten() {
            self.id_bound = self.id_bound.max(id.index() + 1);
        }
        let k = r.kind as usize;
        if self.by_kind.len() <= k {
            self.by_kind.resize(k + 1, Vec::new());
        }
        // A history cannot hold 2^32 rows in memory; the conversion never fails in practice.
        if let Ok(at) = u32::try_from(at) {
            self.by_kind[k].push(at);
        }
    }

    /// Sorts rows by `seq` (nothing to do when they came in order, as the recorder writes them)
    /// and indexes them by kind. Call once, after the last row is pushed.
    pub fn finish(&mut self) {
        for rows in &mut self.by_kind {
            rows.shrink_to_fit();
        }
        if self.in_order && self.indexed == self.rows.len() {
            return;
        }
        if !self.rows.is_sorted_by_key(|r| r.seq) {
            self.rows.sort_by_key(|r| r.seq);
        }
        let rows = std::mem::take(&mut self.rows);
        self.by_kind = Vec::new();
        self.id_bound = 0;
        for (at, r) in rows.iter().enumerate() {
            self.index(at, r);
        }
        self.rows = rows;
        self.indexed = self.rows.len();
        self.in_order = true;
    }

    /// One more than the largest [`Id::index`] of an actor, event, task or aggregate in the rows:
    /// the size of an [`IdTable`] over them.
    pub fn id_bound(&self) -> usize {
        self.id_bound
    }

    /// The rows of `kind`, in `seq` order, with their indices into [`History::rows`].
    pub fn of(&self, kind: Kind) -> impl DoubleEndedIterator<Item = (usize, &Row)> + '_ {
        self.by_kind
            .get(kind as usize)
            .map_or(&[][..], |v| v.as_slice())
            .iter()
            .filter_map(|&at| self.rows.get(at as usize).map(|r| (at as usize, r)))
    }

    /// How many rows of `kind` there are.
    pub fn count(&self, kind: Kind) -> usize {
        self.by_kind.get(kind as usize).map_or(0, Vec::len)
    }
}
