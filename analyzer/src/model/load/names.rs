//! The first stage: the string columns of a batch as ids. They are read as dictionaries (each
//! distinct value of a row group is interned once, and a row costs an array lookup); the
//! interner is told how many names to expect as the file goes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch};
use outbox_trace::schema::column;
use outbox_trace::Kind;

use super::LoadError;
use crate::model::intern::{Id, Interner};

/// The string columns the checks compare, read as dictionaries (each distinct value of a row
/// group is interned once, and a row costs an array lookup).
pub(super) const STRING_COLUMNS: [&str; 8] = [
    "run_id",
    "scenario",
    "backend",
    "actor",
    "kind",
    "task_id",
    "event_id",
    "aggregate_id",
];

/// The columns the names are read from: the string columns and `counter_key`.
pub(super) const NAMED_COLUMNS: [&str; STRING_COLUMNS.len() + 1] = {
    let mut named = [""; STRING_COLUMNS.len() + 1];
    let mut i = 0;
    while i < STRING_COLUMNS.len() {
        named[i] = STRING_COLUMNS[i];
        i += 1;
    }
    named[i] = "counter_key";
    named
};

/// A `Dictionary(Int32, Utf8)` column of a batch.
pub(super) fn dictionary<'a>(
    batch: &'a RecordBatch,
    name: &'static str,
) -> Result<&'a DictionaryArray<Int32Type>, LoadError> {
    batch
        .column(column(name))
        .as_dictionary_opt::<Int32Type>()
        .ok_or(LoadError::Canonical(name))
}

/// How many names a file will have interned by its end, told to the interner as the rows come:
/// the names so far, scaled by the rows still to come. Told only as a batch with new
/// dictionaries comes (a row group's first), when the names so far are those of the rows
/// before it (a row group's dictionaries are interned whole with its first batch), and once a
/// sixteenth of the file is read (a first row group dense in new names would otherwise make a
/// table for many more than come).
pub(super) struct Expect {
    /// Names before the file.
    before: usize,
    /// Rows in the file, when known before its end.
    rows: Option<u64>,
    /// Rows read (as of the batch before the current one).
    read: u64,
}

impl Expect {
    pub(super) fn new(before: usize, rows: Option<u64>) -> Self {
        Expect {
            before,
            rows,
            read: 0,
        }
    }

    /// A batch of `rows` is about to be interned, with new dictionaries when `fresh`.
    pub(super) fn batch(&mut self, rows: usize, fresh: bool, names: &mut Interner) {
        if let Some(total) = self
            .rows
            .filter(|&total| fresh && self.read > 0 && self.read >= total / 16)
        {
            let seen = (names.len() - self.before) as u128;
            let expected = seen * u128::from(total) / u128::from(self.read);
            names.expect(self.before + usize::try_from(expected).unwrap_or(usize::MAX));
        }
        self.read += rows as u64;
    }
}

/// The ids of one dictionary's values, kept while batches share that dictionary (the Parquet
/// reader hands out one per row group for a column stored dictionary-encoded).
#[derive(Default)]
struct Dictionary {
    /// The values the ids are for; holding them keeps their address from being reused.
    values: Option<ArrayRef>,
    /// `ids[k]`: the id of value `k`.
    ids: Arc<[Id]>,
}

impl Dictionary {
    /// Whether `array`'s dictionary values are the ones held.
    fn holds(&self, array: &DictionaryArray<Int32Type>) -> bool {
        let values = array.values();
        self.values.as_ref().is_some_and(|v| Arc::ptr_eq(v, values))
    }

    /// The ids of `array`'s dictionary values, interned unless they are the ones already held.
    fn ids(
        &mut self,
        array: &DictionaryArray<Int32Type>,
        names: &mut Interner,
    ) -> Result<Arc<[Id]>, LoadError> {
        if !self.holds(array) {
            let values = array.values();
            let text = values
                .as_string_opt::<i32>()
                .ok_or(LoadError::Canonical("dictionary"))?;
            self.ids = names.intern_all(text.iter())?.into();
            self.values = Some(values.clone());
        }
        Ok(self.ids.clone())
    }
}

/// The dictionaries of the string columns, by position in [`STRING_COLUMNS`].
#[derive(Default)]
pub(super) struct Dictionaries([Dictionary; 8]);

impl Dictionaries {
    /// Whether `batch` brings a dictionary not held yet (it is a row group's first batch).
    pub(super) fn fresh(&self, batch: &RecordBatch) -> bool {
        STRING_COLUMNS
            .iter()
            .zip(&self.0)
            .any(|(name, dict)| dictionary(batch, name).is_ok_and(|a| !dict.holds(a)))
    }

    /// The ids of `batch`'s string columns, its dictionaries interned where new.
    pub(super) fn name(
        &mut self,
        batch: &RecordBatch,
        names: &mut Interner,
    ) -> Result<Named, LoadError> {
        let mut new = 0;
        for (name, dict) in STRING_COLUMNS.iter().zip(&self.0) {
            let array = dictionary(batch, name)?;
            if !dict.holds(array) {
                new += array.values().len();
            }
        }
        names.reserve(new)?;
        let mut ids = Vec::with_capacity(STRING_COLUMNS.len());
        for (name, dict) in STRING_COLUMNS.iter().zip(&mut self.0) {
            ids.push(dict.ids(dictionary(batch, name)?, names)?);
        }
        // `counter_key` (an optional column, plain text): interned where set, which is rare, on
        // the rows that are built (of a known kind, with an actor) only.
        let keys = batch.column(column("counter_key")).as_string_opt::<i32>();
        let counter_keys = match keys {
            Some(keys) if keys.null_count() < keys.len() => {
                let (kind, actor) = (dictionary(batch, "kind")?, dictionary(batch, "actor")?);
                let known: Vec<bool> = kind
                    .values()
                    .as_string_opt::<i32>()
                    .ok_or(LoadError::Canonical("kind"))?
                    .iter()
                    .map(|k| k.is_some_and(|k| k.parse::<Kind>().is_ok()))
                    .collect();
                let built = |i: usize| {
                    let key = usize::try_from(kind.keys().value(i)).unwrap_or(usize::MAX);
                    known.get(key).copied().unwrap_or(false) && actor.is_valid(i)
                };
                let ids = keys.iter().enumerate().map(|(i, key)| {
                    key.filter(|_| built(i))
                        .map(|key| names.intern(key))
                        .transpose()
                });
                Some(ids.collect::<Result<_, _>>()?)
            }
            _ => None,
        };
        Ok(Named { ids, counter_keys })
    }
}

/// What the names of a batch are as ids.
pub(crate) struct Named {
    /// The ids of each string column's dictionary values, by position in [`STRING_COLUMNS`].
    pub(super) ids: Vec<Arc<[Id]>>,
    /// Each row's `counter_key`, unless none is set.
    pub(super) counter_keys: Option<Vec<Option<Id>>>,
}
