//! The compact history of one `(run_id, scenario)`: the rows the checks need, sorted by `seq`, with
//! strings interned and optional numbers kept without `Option` padding.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use outbox_trace::detail::{Observed, RunEnd, RunStart};
use outbox_trace::{Detail, Field, Kind};

use crate::index::Indices;
use crate::intern::Id;
#[cfg(doc)]
use crate::intern::IdTable;

/// Which optional numeric columns a row carries (bit per column).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Present(u8);

impl Present {
    /// `aggregate_seq` is set.
    pub const AGGREGATE_SEQ: u8 = 1;
    /// `attempt` is set.
    pub const ATTEMPT: u8 = 1 << 1;
    /// `broker_seq` is set.
    pub const BROKER_SEQ: u8 = 1 << 2;
    /// `store_rev` is set.
    pub const STORE_REV: u8 = 1 << 3;
    /// `amount` is set.
    pub const AMOUNT: u8 = 1 << 4;
    /// `counter` is set.
    pub const COUNTER: u8 = 1 << 5;

    /// Marks `bit` present when `yes`.
    #[inline]
    pub fn set(&mut self, bit: u8, yes: bool) {
        if yes {
            self.0 |= bit;
        }
    }

    /// Whether `bit` is present.
    #[inline]
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// One event of a known kind, compactly. Numeric fields are meaningful only when [`Present`] says
/// so; use the accessors.
#[derive(Debug, Clone)]
pub struct Row {
    /// Recording order within the run.
    pub seq: u64,
    /// Nanoseconds since the run started (drawing only: no check reads it).
    pub ts_ns: i64,
    aggregate_seq: u64,
    broker_seq: u64,
    store_rev: i64,
    amount: i64,
    counter: i64,
    attempt: u32,
    /// The actor's incarnation.
    pub incarnation: u32,
    /// Who did it.
    pub actor: Id,
    /// `event_id`, if any.
    pub event: Option<Id>,
    /// `task_id`, if any.
    pub task: Option<Id>,
    /// `aggregate_id`, if any.
    pub aggregate: Option<Id>,
    /// Index into [`History::details`] for the kinds whose `detail` the analyzer keeps.
    pub detail: Option<u32>,
    /// What happened.
    pub kind: Kind,
    present: Present,
}

/// The optional numeric values of a row, as read from the file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Numbers {
    /// `aggregate_seq`
    pub aggregate_seq: Option<u64>,
    /// `attempt`
    pub attempt: Option<u32>,
    /// `broker_seq`
    pub broker_seq: Option<u64>,
    /// `store_rev`
    pub store_rev: Option<i64>,
    /// `amount`
    pub amount: Option<i64>,
    /// `counter`
    pub counter: Option<i64>,
}

impl Row {
    /// A row of `kind` by `actor#incarnation` at `seq`, with no optional field set.
    #[inline(always)]
    pub fn new(seq: u64, kind: Kind, actor: Id, incarnation: u32) -> Self {
        Row {
            seq,
            ts_ns: 0,
            aggregate_seq: 0,
            broker_seq: 0,
            store_rev: 0,
            amount: 0,
            counter: 0,
            attempt: 0,
            incarnation,
            actor,
            event: None,
            task: None,
            aggregate: None,
            detail: None,
            kind,
            present: Present::default(),
        }
    }

    /// Sets the optional numeric fields.
    #[inline(always)]
    pub fn with_numbers(mut self, n: Numbers) -> Self {
        let p = &mut self.present;
        p.set(Present::AGGREGATE_SEQ, n.aggregate_seq.is_some());
        p.set(Present::ATTEMPT, n.attempt.is_some());
        p.set(Present::BROKER_SEQ, n.broker_seq.is_some());
        p.set(Present::STORE_REV, n.store_rev.is_some());
        p.set(Present::AMOUNT, n.amount.is_some());
        p.set(Present::COUNTER, n.counter.is_some());
        self.aggregate_seq = n.aggregate_seq.unwrap_or(0);
        self.attempt = n.attempt.unwrap_or(0);
        self.broker_seq = n.broker_seq.unwrap_or(0);
        self.store_rev = n.store_rev.unwrap_or(0);
        self.amount = n.amount.unwrap_or(0);
        self.counter = n.counter.unwrap_or(0);
        self
    }

    fn get<T: Copy>(&self, bit: u8, v: T) -> Option<T> {
        self.present.has(bit).then_some(v)
    }

    /// `aggregate_seq`
    pub fn aggregate_seq(&self) -> Option<u64> {
        self.get(Present::AGGREGATE_SEQ, self.aggregate_seq)
    }
    /// `attempt`
    pub fn attempt(&self) -> Option<u32> {
        self.get(Present::ATTEMPT, self.attempt)
    }
    /// `broker_seq`
    pub fn broker_seq(&self) -> Option<u64> {
        self.get(Present::BROKER_SEQ, self.broker_seq)
    }
    /// `store_rev`
    pub fn store_rev(&self) -> Option<i64> {
        self.get(Present::STORE_REV, self.store_rev)
    }
    /// `amount`
    pub fn amount(&self) -> Option<i64> {
        self.get(Present::AMOUNT, self.amount)
    }
    /// `counter`
    pub fn counter(&self) -> Option<i64> {
        self.get(Present::COUNTER, self.counter)
    }

    /// Whether the row carries `field` (for `detail`: whether the analyzer kept one).
    #[inline(always)]
    pub fn has(&self, field: Field) -> bool {
        match field {
            Field::TaskId => self.task.is_some(),
            Field::EventId => self.event.is_some(),
            Field::StoreRev => self.present.has(Present::STORE_REV),
            Field::Attempt => self.present.has(Present::ATTEMPT),
            Field::BrokerSeq => self.present.has(Present::BROKER_SEQ),
            Field::Amount => self.present.has(Present::AMOUNT),
            Field::Counter => self.present.has(Present::COUNTER),
            Field::Detail => self.detail.is_some(),
        }
    }

    /// Whether the row carries every one of `fields`.
    pub fn has_all(&self, fields: &[Field]) -> bool {
        fields.iter().all(|f| self.has(*f))
    }

    /// Whether this is a delivery (`delivered` or `redelivered`).
    pub fn is_delivery(&self) -> bool {
        matches!(self.kind, Kind::Delivered | Kind::Redelivered)
    }
}

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
    /// `run_id`
    pub run_id: Id,
    /// `scenario`
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
            by_kind: vec![Vec::new(); Kind::ALL.len()],
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

    /// Keeps `text` as `row`'s detail, decoded once by the row's kind.
    pub fn attach_detail(&mut self, row: &mut Row, text: &str) {
        row.detail = u32::try_from(self.details.len()).ok();
        self.details.push(KeptDetail {
            text: text.into(),
            typed: Detail::parse(row.kind, text),
        });
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
        row.detail.and_then(|i| self.details.get(i as usize))
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
        self.by_kind = vec![Vec::new(); Kind::ALL.len()];
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_stays_small() {
        // Ten million rows must fit comfortably in memory.
        assert!(
            std::mem::size_of::<Row>() <= 96,
            "{}",
            std::mem::size_of::<Row>()
        );
    }

    #[test]
    fn absent_numbers_read_as_none() {
        let mut names = crate::intern::Interner::default();
        let actor = names.intern("worker").unwrap();
        let row = Row::new(7, Kind::Acked, actor, 0).with_numbers(Numbers {
            broker_seq: Some(0),
            ..Numbers::default()
        });
        assert_eq!(row.broker_seq(), Some(0));
        assert_eq!(row.store_rev(), None);
        assert!(row.has(Field::BrokerSeq));
        assert!(!row.has(Field::EventId));
    }
}
