//! The last stage: every built row handed, in order, to the sink with the history of its
//! `(run_id, scenario)` (opened on its first row), the fields it lacks counted; rows of kinds the
//! contract lacks counted by kind.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
use outbox_trace::schema::column;

use super::build::{Built, Nums};
use super::names::{dictionary, STRING_COLUMNS};
use super::{LoadError, Sink};
use crate::model::history::{keeps_detail, History};
use crate::model::intern::{FastMap, Id};
use crate::model::row::Row;

/// Per-file loading state.
pub(super) struct FileState {
    pub(super) groups: Groups,
    pub(super) unknown: BTreeMap<String, u64>,
}

/// Which history each `(run_id, scenario)` of a file goes to.
pub(super) struct Groups {
    /// Rows in the file: the first history reserves room for all of them (most files hold one
    /// scenario, and pages never touched cost nothing).
    pub(super) rows: u64,
    pub(super) file: usize,
    pub(super) first_history: usize,
    /// Whether the first history reserves room for every row.
    pub(super) reserve: bool,
    pub(super) map: FastMap<(Id, Id), usize>,
    /// The last `(run_id, scenario)` seen and its history: rows of one scenario come together,
    /// so most rows skip the map.
    pub(super) last: Option<(Id, Id, usize)>,
}

impl Groups {
    /// The history of `(run, scenario)`, opened with `backend` on its first row.
    fn history(
        &mut self,
        run: Id,
        scenario: Id,
        backend: Id,
        histories: &mut Vec<History>,
    ) -> usize {
        if let Some((r, s, h)) = self.last {
            if r == run && s == scenario {
                return h;
            }
        }
        let h = *self.map.entry((run, scenario)).or_insert_with(|| {
            let h = histories.len();
            let mut history = History::new(self.file, run, scenario, backend);
            if h == self.first_history && self.reserve {
                history
                    .rows
                    .reserve(usize::try_from(self.rows).unwrap_or(0));
            }
            histories.push(history);
            h
        });
        self.last = Some((run, scenario, h));
        h
    }
}

impl FileState {
    /// Hands every row of `p` to `sink`; gives back the emptied row buffer.
    pub(super) fn batch(
        &mut self,
        p: Built,
        histories: &mut Vec<History>,
        sink: &mut impl Sink,
    ) -> Result<Vec<Option<Row>>, LoadError> {
        let batch = &p.batch;
        let [run, scenario, backend, _, kind, ..] = &columns(batch, &p.ids)?[..] else {
            return Err(LoadError::Canonical("kind"));
        };
        let kind_names = dictionary(batch, "kind")?
            .values()
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("kind"))?;
        let seq = Nums::<UInt64Type>::of(batch, "seq")?;
        let detail = batch
            .column(column("detail"))
            .as_string_opt::<i32>()
            .ok_or(LoadError::Canonical("detail"))?;
        let required = |name| LoadError::Canonical(name);
        let mut incomplete = p.incomplete.iter().copied().peekable();
        // Rows of one scenario come together: `(run_id, scenario, backend)` keys repeat, and
        // then so does their history.
        let mut last_group: Option<([Option<&i32>; 3], usize)> = None;
        // Most batches hold one scenario only: then its history, once found, is every row's.
        let one_group = [run, scenario, backend].iter().all(|c| c.uniform());
        let mut rows = p.rows;
        for (i, row) in rows.iter_mut().enumerate() {
            let Some(row) = row else {
                let key = kind.keys.get(i).ok_or(required("kind"))?;
                if p.kinds.get(*key as usize).copied().flatten().is_some() {
                    // A known kind is built unless its actor is missing.
                    return Err(required("actor"));
                }
                let name = kind_names.value(*key as usize).to_string();
                *self.unknown.entry(name).or_default() += 1;
                let run_id = run.opt(i).ok_or(required("run_id"))?;
                sink.unknown(run_id, seq.get(i))?;
                continue;
            };
            let k = row.kind;
            let group = || [run.keys.get(i), scenario.keys.get(i), backend.keys.get(i)];
            let h = match last_group {
                Some((_, h)) if one_group => h,
                Some((keys, h)) if keys == group() => h,
                _ => {
                    let run_id = run.opt(i).ok_or(required("run_id"))?;
                    let scenario_id = scenario.opt(i).ok_or(required("scenario"))?;
                    let backend_id = backend.opt(i).ok_or(required("backend"))?;
                    let h = self
                        .groups
                        .history(run_id, scenario_id, backend_id, histories);
                    let history = &mut histories[h];
                    if backend_id != history.backend
                        && !history.other_backends.contains(&backend_id)
                    {
                        history.other_backends.push(backend_id);
                    }
                    last_group = Some((group(), h));
                    h
                }
            };
            let text = (keeps_detail(k) && detail.is_valid(i)).then(|| detail.value(i));
            if incomplete.next_if_eq(&(i as u32)).is_some() {
                let history = &mut histories[h];
                for field in k.required_fields() {
                    // A kept detail is attached by the sink.
                    let has = match field {
                        outbox_trace::Field::Detail => text.is_some(),
                        _ => row.has(*field),
                    };
                    if !has {
                        *history.missing.entry((k, field.column())).or_default() += 1;
                    }
                }
            }
            sink.row(histories, h, row, text)?;
        }
        rows.clear();
        Ok(rows)
    }
}

/// The string columns of `batch` as ids, by position in [`STRING_COLUMNS`].
fn columns<'a>(batch: &'a RecordBatch, ids: &'a [Arc<[Id]>]) -> Result<Vec<Ids<'a>>, LoadError> {
    STRING_COLUMNS
        .iter()
        .zip(ids)
        .map(|(name, ids)| {
            let a = dictionary(batch, name)?;
            Ok(Ids {
                keys: a.keys().values(),
                nulls: a.nulls(),
                ids,
            })
        })
        .collect()
}

/// A string column of a batch, as ids.
struct Ids<'a> {
    keys: &'a [i32],
    nulls: Option<&'a NullBuffer>,
    ids: &'a [Id],
}

impl<'a> Ids<'a> {
    /// Whether every row holds the same value (none null).
    fn uniform(&self) -> bool {
        let no_nulls = self.nulls.is_none_or(|n| n.null_count() == 0);
        no_nulls
            && self
                .keys
                .first()
                .is_none_or(|k| self.keys.iter().all(|x| x == k))
    }

    /// The id of row `i`, absent for a null (or a key out of range, which Arrow rules out).
    #[inline(always)]
    fn opt(&self, i: usize) -> Option<Id> {
        if self.nulls.is_some_and(|n| n.is_null(i)) {
            return None;
        }
        let key = usize::try_from(*self.keys.get(i)?).ok()?;
        self.ids.get(key).copied()
    }
}
