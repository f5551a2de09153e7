//! The second stage: the rows of a batch built from its columns, the strings named by the ids
//! of the first stage, with the positions of the rows that lack a field their kind requires.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowPrimitiveType, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
use outbox_trace::schema::column;
use outbox_trace::{Field, Kind};

use super::names::{dictionary, Named};
use super::LoadError;
use crate::model::history::keeps_detail;
use crate::model::intern::Id;
use crate::model::row::{Columns, Present, Row, Source};

/// A decoded batch with its rows built.
pub(crate) struct Built {
    pub(super) batch: RecordBatch,
    /// The ids of each string column's dictionary values, by position in
    /// [`STRING_COLUMNS`](super::names::STRING_COLUMNS).
    pub(super) ids: Vec<Arc<[Id]>>,
    /// The kind of each value of the `kind` dictionary (`None`: a kind the contract lacks).
    pub(super) kinds: Vec<Option<Kind>>,
    pub(super) rows: Vec<Option<Row>>,
    /// Positions of the rows lacking a field their kind requires, ascending.
    pub(super) incomplete: Vec<u32>,
}

impl Built {
    /// Builds the rows of `batch`, whose names are `named`, in a buffer from `spent`.
    pub(super) fn of(batch: RecordBatch, named: Named, spent: &Spent) -> Result<Self, LoadError> {
        let kind_names = dictionary(&batch, "kind")?
            .values()
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("kind"))?;
        // Kinds by dictionary value: parsed once per value, not per row.
        let kinds: Vec<Option<Kind>> = kind_names.iter().map(|k| k?.parse().ok()).collect();
        let needs: Vec<u16> = kinds.iter().map(|k| k.map_or(0, needs)).collect();
        let Named { ids, counter_keys } = named;
        let (mut rows, incomplete) = build_rows(&batch, &ids, &kinds, &needs, spent.take())?;
        if let Some(keys) = counter_keys {
            for (row, key) in rows.iter_mut().zip(keys) {
                if let Some(row) = row {
                    row.counter_key = key;
                }
            }
        }
        Ok(Built {
            batch,
            ids,
            kinds,
            rows,
            incomplete,
        })
    }
}

/// The rows of a batch (`None` for a row of a kind the contract lacks, or without an actor),
/// and the positions of the rows that lack a field their kind requires (`detail` included).
/// Their strings are named by `ids` (by position in
/// [`STRING_COLUMNS`](super::names::STRING_COLUMNS)); `counter_key` is left unset.
fn build_rows(
    batch: &RecordBatch,
    ids: &[Arc<[Id]>],
    kinds: &[Option<Kind>],
    needs: &[u16],
    mut rows: Vec<Option<Row>>,
) -> Result<(Vec<Option<Row>>, Vec<u32>), LoadError> {
    let actor = dictionary(batch, "actor")?;
    let kind = dictionary(batch, "kind")?;
    let task = dictionary(batch, "task_id")?;
    let event = dictionary(batch, "event_id")?;
    let agg = dictionary(batch, "aggregate_id")?;
    let seq = Nums::<UInt64Type>::of(batch, "seq")?;
    let ts = Nums::<Int64Type>::of(batch, "ts_ns")?;
    let inc = Nums::<UInt32Type>::of(batch, "incarnation")?;
    let agg_seq = Nums::<UInt64Type>::of(batch, "aggregate_seq")?;
    let attempt = Nums::<UInt32Type>::of(batch, "attempt")?;
    let broker = Nums::<UInt64Type>::of(batch, "broker_seq")?;
    let partition = Nums::<Int32Type>::of(batch, "partition")?;
    let rev = Nums::<Int64Type>::of(batch, "store_rev")?;
    let amount = Nums::<Int64Type>::of(batch, "amount")?;
    let counter = Nums::<Int64Type>::of(batch, "counter")?;
    let detail = batch.column(column("detail"));
    let texts = detail.as_string_opt::<i32>();
    let n = batch.num_rows();
    let mut carried = vec![0u16; n];
    for (nulls, bit) in [
        (agg_seq.nulls, Carried::AGGREGATE_SEQ),
        (attempt.nulls, Carried::ATTEMPT),
        (broker.nulls, Carried::BROKER_SEQ),
        (partition.nulls, Carried::PARTITION),
        (rev.nulls, Carried::STORE_REV),
        (amount.nulls, Carried::AMOUNT),
        (counter.nulls, Carried::COUNTER),
        (task.nulls(), Carried::TASK),
        (event.nulls(), Carried::EVENT),
        (agg.nulls(), Carried::AGGREGATE),
        (detail.nulls(), Carried::DETAIL),
        (actor.nulls(), Carried::ACTOR),
    ] {
        Carried::mark(&mut carried, nulls, bit);
    }
    // Every column of a batch holds its number of rows (a null slot holds some value too).
    let [actor, kind, task, event, agg] =
        [actor, kind, task, event, agg].map(|a| &a.keys().values()[..n]);
    let (seq, ts, inc) = (&seq.values[..n], &ts.values[..n], &inc.values[..n]);
    let (agg_seq, attempt, broker) = (
        &agg_seq.values[..n],
        &attempt.values[..n],
        &broker.values[..n],
    );
    let (rev, amount, counter) = (&rev.values[..n], &amount.values[..n], &counter.values[..n]);
    let partition = &partition.values[..n];
    rows.clear();
    rows.reserve(n);
    let mut incomplete = Vec::new();
    let [_, _, _, actor_ids, _, task_ids, event_ids, agg_ids] = ids else {
        return Err(LoadError::Canonical("kind"));
    };
    // The id of a key of a column named by `ids`, when the column is set (a key is in range:
    // Arrow checks dictionary keys).
    let id = |c: u16, bit: u16, ids: &[Id], key: i32| {
        (c & bit != 0)
            .then(|| ids.get(usize::try_from(key).ok()?).copied())
            .flatten()
    };
    for (i, &c) in carried.iter().enumerate() {
        let key = usize::try_from(kind[i]).unwrap_or(usize::MAX);
        let (Some(&Some(k)), Some(actor_key)) =
            (kinds.get(key), id(c, Carried::ACTOR, actor_ids, actor[i]))
        else {
            rows.push(None);
            continue;
        };
        let numbers = Columns {
            aggregate_seq: agg_seq[i],
            attempt: attempt[i],
            broker_seq: broker[i],
            store_rev: rev[i],
            amount: amount[i],
            counter: counter[i],
            partition: partition[i],
        };
        // The low bits of `c` are the numbers' `Present` bits.
        let mut row = Row::new(seq[i], k, actor_key, inc[i]).with_columns(c as u8, numbers);
        row.ts_ns = ts[i];
        row.task = id(c, Carried::TASK, task_ids, task[i]);
        row.event = id(c, Carried::EVENT, event_ids, event[i]);
        row.aggregate = id(c, Carried::AGGREGATE, agg_ids, agg[i]);
        if let (true, Some(texts)) = (c & Carried::DETAIL != 0 && !keeps_detail(k), texts) {
            row.source = Source::of_detail(k, texts.value(i));
        }
        if needs.get(key).is_some_and(|&needs| needs & !c != 0) {
            incomplete.push(i as u32);
        }
        rows.push(Some(row));
    }
    Ok((rows, incomplete))
}

/// Which of a row's columns are not null, a bit per column ([`Carried`]), read from the null
/// bitmaps 64 rows at a time. The numbers come first, in the order of [`Present`]'s bits.
///
/// [`Present`]: crate::model::row::Present
struct Carried;

impl Carried {
    const AGGREGATE_SEQ: u16 = Present::AGGREGATE_SEQ as u16;
    const ATTEMPT: u16 = Present::ATTEMPT as u16;
    const BROKER_SEQ: u16 = Present::BROKER_SEQ as u16;
    const STORE_REV: u16 = Present::STORE_REV as u16;
    const AMOUNT: u16 = Present::AMOUNT as u16;
    const COUNTER: u16 = Present::COUNTER as u16;
    const PARTITION: u16 = Present::PARTITION as u16;
    const TASK: u16 = 1 << 7;
    const EVENT: u16 = 1 << 8;
    const AGGREGATE: u16 = 1 << 9;
    const DETAIL: u16 = 1 << 10;
    const ACTOR: u16 = 1 << 11;

    /// The bit of `field`'s column.
    fn of(field: Field) -> u16 {
        match field {
            Field::TaskId => Carried::TASK,
            Field::EventId => Carried::EVENT,
            Field::StoreRev => Carried::STORE_REV,
            Field::Attempt => Carried::ATTEMPT,
            Field::BrokerSeq => Carried::BROKER_SEQ,
            Field::Amount => Carried::AMOUNT,
            Field::Counter => Carried::COUNTER,
            Field::Detail => Carried::DETAIL,
        }
    }

    /// Sets `bit` in `rows[i]` for every row `i` whose value in a column with `nulls` is set.
    fn mark(rows: &mut [u16], nulls: Option<&NullBuffer>, bit: u16) {
        match nulls {
            None => rows.iter_mut().for_each(|c| *c |= bit),
            Some(nulls) => {
                let words = nulls.inner().bit_chunks().iter_padded();
                for (rows, mut word) in rows.chunks_mut(64).zip(words) {
                    // Only the rows set, lowest first.
                    while word != 0 {
                        if let Some(c) = rows.get_mut(word.trailing_zeros() as usize) {
                            *c |= bit;
                        }
                        word &= word - 1;
                    }
                }
            }
        }
    }
}

/// The columns a row of `kind` must carry, as [`Carried`] bits: its required fields, `detail`
/// only where the analyzer keeps it.
fn needs(kind: Kind) -> u16 {
    kind.required_fields()
        .iter()
        .filter(|&&f| f != Field::Detail || keeps_detail(kind))
        .fold(0, |set, &f| set | Carried::of(f))
}

/// Row buffers handed on and emptied, back for the next batch (fresh ones would cost a page
/// fault per page each).
#[derive(Default)]
pub(crate) struct Spent(std::sync::Mutex<Vec<Vec<Option<Row>>>>);

impl Spent {
    fn take(&self) -> Vec<Option<Row>> {
        let mut spent = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spent.pop().unwrap_or_default()
    }

    pub(super) fn give(&self, rows: Vec<Option<Row>>) {
        let mut spent = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if spent.len() < 8 {
            spent.push(rows);
        }
    }
}

/// A numeric column of a batch, read as a slice.
pub(super) struct Nums<'a, T: ArrowPrimitiveType> {
    values: &'a [T::Native],
    nulls: Option<&'a NullBuffer>,
}

impl<'a, T: ArrowPrimitiveType> Nums<'a, T> {
    pub(super) fn of(batch: &'a RecordBatch, name: &'static str) -> Result<Self, LoadError> {
        let a = batch
            .column(column(name))
            .as_primitive_opt::<T>()
            .ok_or(LoadError::Canonical(name))?;
        Ok(Nums {
            values: a.values(),
            nulls: a.nulls(),
        })
    }

    #[inline(always)]
    pub(super) fn get(&self, i: usize) -> T::Native {
        self.values.get(i).copied().unwrap_or_default()
    }
}
