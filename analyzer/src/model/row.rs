//! One row of a history, compactly: the fields the checks and views read, ids interned, optional
//! numbers kept without `Option` padding (a bit per column says which are set).

use std::num::NonZeroU32;

use outbox_trace::{Field, Kind};

use crate::model::intern::Id;

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
    /// `partition` is set.
    pub const PARTITION: u8 = 1 << 6;
    /// Every bit.
    const ALL: u8 = (1 << 7) - 1;

    /// Marks `bit` present when `yes`.
    #[inline]
    pub fn set(&mut self, bit: u8, yes: bool) {
        // A select rather than a branch: rows come with any mix of columns set.
        self.0 |= if yes { bit } else { 0 };
    }

    /// Whether `bit` is present.
    #[inline]
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
}

/// An index into a history's kept details, in four bytes (and so is an `Option` of one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetailIndex(NonZeroU32);

impl DetailIndex {
    /// The index `i`; `None` from 2^32 - 1 on.
    pub fn new(i: usize) -> Option<Self> {
        u32::try_from(i)
            .ok()
            .and_then(|i| i.checked_add(1))
            .and_then(NonZeroU32::new)
            .map(DetailIndex)
    }

    /// The index.
    pub fn get(self) -> usize {
        self.0.get() as usize - 1
    }
}

/// Where a step row was read, by its `detail.source`: the recorder's proxy read it from the
/// process's traffic (`wire`), or the process reported it (`span`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Source {
    /// The row does not say (every row of a run that reads no step from the wire).
    #[default]
    Unsaid,
    /// The process's own report of the step.
    Span,
    /// The step as it crossed the wire.
    Wire,
}

impl Source {
    /// The source a step row of `kind` says in its `detail` text, typed by the contract
    /// ([`outbox_trace::detail::Note::source`]); a detail that does not parse, or names another
    /// source, says none.
    pub fn of_detail(kind: Kind, text: &str) -> Source {
        // Most details say nothing of it: only theirs is parsed.
        if !text.contains("\"source\"") {
            return Source::Unsaid;
        }
        let detail = outbox_trace::Detail::parse(kind, text).ok();
        match detail.as_ref().and_then(|d| d.note()?.source.as_deref()) {
            Some("span") => Source::Span,
            Some("wire") => Source::Wire,
            _ => Source::Unsaid,
        }
    }

    /// `span`, `wire`, or none.
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Source::Unsaid => None,
            Source::Span => Some("span"),
            Source::Wire => Some("wire"),
        }
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
    partition: i32,
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
    /// `counter_key`, if any: which counter `amount` and `counter` belong to (none: the one).
    pub counter_key: Option<Id>,
    /// Index into the history's `details` for the kinds whose `detail` the analyzer keeps.
    pub detail: Option<DetailIndex>,
    /// What happened.
    pub kind: Kind,
    /// Where a step was read (`detail.source`).
    pub source: Source,
    present: Present,
}

/// The optional numeric values of a row, as read from the file.
#[derive(Debug, Clone, Copy, Default)]
pub struct Numbers {
    /// The `aggregate_seq` column as read; `None` when the row lacks it.
    pub aggregate_seq: Option<u64>,
    /// The `attempt` column as read; `None` when the row lacks it.
    pub attempt: Option<u32>,
    /// The `broker_seq` column as read; `None` when the row lacks it.
    pub broker_seq: Option<u64>,
    /// The `store_rev` column as read; `None` when the row lacks it.
    pub store_rev: Option<i64>,
    /// The `amount` column as read; `None` when the row lacks it.
    pub amount: Option<i64>,
    /// The `counter` column as read; `None` when the row lacks it.
    pub counter: Option<i64>,
    /// The `partition` column as read; `None` when the row lacks it.
    pub partition: Option<i32>,
}

/// The optional numeric columns of a row as read, each meaningful only where its column is set
/// (see [`Row::with_columns`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Columns {
    /// The `aggregate_seq` column's value.
    pub aggregate_seq: u64,
    /// The `attempt` column's value.
    pub attempt: u32,
    /// The `broker_seq` column's value.
    pub broker_seq: u64,
    /// The `store_rev` column's value.
    pub store_rev: i64,
    /// The `amount` column's value.
    pub amount: i64,
    /// The `counter` column's value.
    pub counter: i64,
    /// The `partition` column's value.
    pub partition: i32,
}

/// Where a copy sits in the broker: its `broker_seq`, in the sequence of its `partition` (`None`:
/// the broker's one sequence). Two rows name the same copy when their positions are equal; the
/// order of positions means something within one partition only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The partition, for a broker that orders per partition (Kafka).
    pub partition: Option<i32>,
    /// The `broker_seq` within it.
    pub broker_seq: u64,
}

impl std::fmt::Display for Position {
    /// The `broker_seq` as [`outbox_trace::BrokerPosition`] draws it, after `p<partition>:` where
    /// there is one (`p1:5`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = self.partition {
            write!(f, "p{p}:")?;
        }
        write!(f, "{}", outbox_trace::BrokerPosition(self.broker_seq))
    }
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
            partition: 0,
            incarnation,
            actor,
            event: None,
            task: None,
            aggregate: None,
            counter_key: None,
            detail: None,
            kind,
            source: Source::Unsaid,
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
        p.set(Present::PARTITION, n.partition.is_some());
        self.aggregate_seq = n.aggregate_seq.unwrap_or(0);
        self.attempt = n.attempt.unwrap_or(0);
        self.broker_seq = n.broker_seq.unwrap_or(0);
        self.store_rev = n.store_rev.unwrap_or(0);
        self.amount = n.amount.unwrap_or(0);
        self.counter = n.counter.unwrap_or(0);
        self.partition = n.partition.unwrap_or(0);
        self
    }

    /// Sets the optional numeric fields from their columns' values, set where `present` has
    /// their [`Present`] bit; a value whose bit is clear reads as absent (it is kept as it came,
    /// whatever a null slot of its column held, and never read).
    #[inline(always)]
    pub fn with_columns(mut self, present: u8, values: Columns) -> Self {
        self.present = Present(present & Present::ALL);
        self.aggregate_seq = values.aggregate_seq;
        self.attempt = values.attempt;
        self.broker_seq = values.broker_seq;
        self.store_rev = values.store_rev;
        self.amount = values.amount;
        self.counter = values.counter;
        self.partition = values.partition;
        self
    }

    fn get<T: Copy>(&self, bit: u8, v: T) -> Option<T> {
        self.present.has(bit).then_some(v)
    }

    /// The `aggregate_seq` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn aggregate_seq(&self) -> Option<u64> {
        self.get(Present::AGGREGATE_SEQ, self.aggregate_seq)
    }
    /// The `attempt` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn attempt(&self) -> Option<u32> {
        self.get(Present::ATTEMPT, self.attempt)
    }
    /// The `broker_seq` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn broker_seq(&self) -> Option<u64> {
        self.get(Present::BROKER_SEQ, self.broker_seq)
    }
    /// The `partition` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn partition(&self) -> Option<i32> {
        self.get(Present::PARTITION, self.partition)
    }
    /// The copy's place in the broker, `None` when the row lacks `broker_seq`.
    pub fn position(&self) -> Option<Position> {
        self.broker_seq().map(|broker_seq| Position {
            partition: self.partition(),
            broker_seq,
        })
    }
    /// The `store_rev` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn store_rev(&self) -> Option<i64> {
        self.get(Present::STORE_REV, self.store_rev)
    }
    /// The `amount` column, `None` when the row lacks it (zero is a value, not absence).
    pub fn amount(&self) -> Option<i64> {
        self.get(Present::AMOUNT, self.amount)
    }
    /// The `counter` column, `None` when the row lacks it (zero is a value, not absence).
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
    fn columns_whose_bit_is_clear_read_as_none() {
        let mut names = crate::model::intern::Interner::default();
        let actor = names.intern("worker").unwrap();
        let values = Columns {
            aggregate_seq: 3,
            attempt: 4,
            broker_seq: 5,
            store_rev: 6,
            amount: 7,
            counter: 8,
            partition: 9,
        };
        let row = Row::new(7, Kind::Acked, actor, 0)
            .with_columns(Present::BROKER_SEQ | Present::COUNTER | 1 << 7, values);
        assert_eq!(row.broker_seq(), Some(5));
        assert_eq!(row.counter(), Some(8));
        assert_eq!(row.aggregate_seq(), None);
        assert_eq!(row.attempt(), None);
        assert_eq!(row.store_rev(), None);
        assert_eq!(row.amount(), None);
        assert_eq!(row.partition(), None);
        assert_eq!(row.present, Present(Present::BROKER_SEQ | Present::COUNTER));
        let row = row.with_columns(Present::BROKER_SEQ | Present::PARTITION, values);
        assert_eq!(row.partition(), Some(9));
        assert_eq!(
            row.position(),
            Some(Position {
                partition: Some(9),
                broker_seq: 5
            })
        );
    }

    #[test]
    fn a_step_says_its_source_in_its_detail() {
        let of = |text| Source::of_detail(Kind::EffectCommitted, text);
        assert_eq!(of(r#"{"source":"wire"}"#), Source::Wire);
        assert_eq!(of(r#"{"reason":"x", "source": "span"}"#), Source::Span);
        assert_eq!(of(r#"{"source":"radio"}"#), Source::Unsaid);
        assert_eq!(of(r#"{"source":3}"#), Source::Unsaid);
        assert_eq!(of(r#"{"reason":"source"}"#), Source::Unsaid);
        assert_eq!(of("not json"), Source::Unsaid);
    }

    #[test]
    fn absent_numbers_read_as_none() {
        let mut names = crate::model::intern::Interner::default();
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
