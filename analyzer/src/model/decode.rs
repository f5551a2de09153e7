//! Decoding a file's batches on threads of their own, in two stages of the caller's: a first
//! stage that reads some of the columns (the names, say) and keeps state from batch to batch,
//! and a second that takes the whole batch with what the first made of it. The results come
//! out in file order.
//!
//! A Parquet file's columns are shared by two decoders (column chunks decode independently): a
//! helper reads the first stage's columns and does that stage, up to [`HELPER_AHEAD`] batches
//! ahead; the lead reads the other columns, joins the helper's to its own and does the second
//! stage. Work that comes in bursts in the first stage (a row group's new dictionaries, all in
//! its first batch) is then done while the lead and those after it go on with the batches
//! before. Any other input (JSON Lines, a directory, a pipe) is decoded by one thread doing
//! both stages.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::thread::Scope;

use arrow_array::RecordBatch;
use outbox_trace::input::Encoding;
use outbox_trace::schema::COLUMNS;
use outbox_trace::{ReadOptions, TraceError, TraceFile};

/// Batches the helper may read ahead of the lead: enough for the lead and the stages after it
/// to go on while the helper does a row group's first batch, a small part of the memory of
/// the rows.
const HELPER_AHEAD: usize = 32;

/// Batches the lead may decode ahead of the helper, waiting for the helper's halves: while the
/// helper interns a row group's dictionaries, the lead decodes on.
const LEAD_AHEAD: usize = 16;

/// Batches the lead may finish ahead of the caller.
const AHEAD: usize = 4;

/// The second stage's results for each batch of a file, in file order, decoded and done
/// ahead on threads of their own.
pub(crate) struct Ordered<T, E> {
    done: Receiver<Result<T, E>>,
}

/// The two stages done on each batch.
pub(crate) struct Stages<F, S> {
    /// The columns the first stage reads (any other column of its batch may be all null).
    pub(crate) first_columns: &'static [&'static str],
    /// Done on each batch in file order, on one thread.
    pub(crate) first: F,
    /// Done on each whole batch with the first stage's result for it.
    pub(crate) second: S,
}

impl<T: Send, E: From<TraceError> + Send> Ordered<T, E> {
    /// Starts decoding `trace` (opened from `path` with `options`) within `scope`, doing the
    /// `stages` on each batch.
    pub(crate) fn start<'scope, N, F, S>(
        scope: &'scope Scope<'scope, '_>,
        path: &'scope Path,
        trace: TraceFile,
        options: ReadOptions,
        stages: Stages<F, S>,
    ) -> Self
    where
        T: 'scope,
        E: 'scope,
        N: Send + 'scope,
        F: FnMut(&RecordBatch) -> Result<N, E> + Send + 'scope,
        S: Fn(RecordBatch, N) -> Result<T, E> + Send + 'scope,
    {
        let (tx, done) = sync_channel(AHEAD);
        let Stages {
            first_columns,
            first,
            second,
        } = stages;
        // Each decoder opens the file anew: only a regular file reads the same twice (a pipe
        // is read once, into memory, and a directory holds several files).
        let regular = std::fs::metadata(path).is_ok_and(|m| m.is_file());
        let shares = (trace.info().encoding == Encoding::Parquet && regular)
            .then(|| Shares::of(&options, first_columns))
            .flatten();
        let Some(shares) = shares else {
            scope.spawn(move || both_stages(trace, first, second, &tx));
            return Ordered { done };
        };
        let schema = trace.schema();
        drop(trace);
        let (helper_tx, halves) = sync_channel(HELPER_AHEAD);
        let helper = shares.options(&options, Share::Helper);
        scope.spawn(move || {
            if let Some(batches) = open(path, &helper, &helper_tx) {
                first_stage(batches, first, &helper_tx);
            }
        });
        let options = shares.options(&options, Share::Lead);
        let lead = Lead {
            shares,
            schema,
            second,
            halves,
            tx,
        };
        scope.spawn(move || {
            if let Some(batches) = open(path, &options, &lead.tx) {
                lead.run(batches);
            }
        });
        Ordered { done }
    }
}

/// One decoder doing both stages on each batch of `trace`, sending the results on `tx`.
fn both_stages<N, T, E: From<TraceError>>(
    trace: TraceFile,
    mut first: impl FnMut(&RecordBatch) -> Result<N, E>,
    second: impl Fn(RecordBatch, N) -> Result<T, E>,
    tx: &SyncSender<Result<T, E>>,
) {
    for batch in trace.batches() {
        let done = batch.map_err(E::from).and_then(|batch| {
            guarded(|| {
                let n = first(&batch)?;
                second(batch, n)
            })
        });
        if !send(tx, done) {
            break;
        }
    }
}

/// The helper's work: the first stage on each of its `batches`, sent on `tx` with the batch (its
/// half of the columns).
fn first_stage<N, E: From<TraceError>>(
    batches: impl Iterator<Item = Result<RecordBatch, TraceError>>,
    mut first: impl FnMut(&RecordBatch) -> Result<N, E>,
    tx: &SyncSender<Result<(N, RecordBatch), E>>,
) {
    for batch in batches {
        let done = batch
            .map_err(E::from)
            .and_then(|batch| Ok((guarded(|| first(&batch))?, batch)));
        if !send(tx, done) {
            break;
        }
    }
}

/// The lead decoder: joins each of its batches to the helper's half of it and does the second
/// stage, sending the results on `tx` in file order.
struct Lead<N, T, E, S> {
    /// Which decoder reads which column.
    shares: Shares,
    /// The whole file's schema, of the joined batches.
    schema: arrow_schema::SchemaRef,
    /// The second stage.
    second: S,
    /// The helper's halves, each with the first stage's result for it.
    halves: Receiver<Result<(N, RecordBatch), E>>,
    /// Where the results go.
    tx: SyncSender<Result<T, E>>,
}

impl<N, T, E, S> Lead<N, T, E, S>
where
    E: From<TraceError>,
    S: Fn(RecordBatch, N) -> Result<T, E>,
{
    /// Finishes each of the lead's `batches` as the helper's halves come; the lead's batches
    /// decoded while the helper is behind (its first batch of a row group brings the
    /// dictionaries to intern) wait for them, up to [`LEAD_AHEAD`].
    fn run(self, batches: impl Iterator<Item = Result<RecordBatch, TraceError>>) {
        let mut waiting = VecDeque::new();
        for batch in batches {
            waiting.push_back(batch);
            while !waiting.is_empty() {
                let half = if waiting.len() >= LEAD_AHEAD {
                    self.halves.recv().ok()
                } else {
                    match self.halves.try_recv() {
                        Ok(half) => Some(half),
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => None,
                    }
                };
                let lead = waiting.pop_front().expect("a batch waits");
                if !self.finish(lead, half) {
                    return;
                }
            }
        }
        for lead in waiting {
            if !self.finish(lead, self.halves.recv().ok()) {
                return;
            }
        }
        if let Ok(more) = self.halves.recv() {
            // The helper read rows past the lead's last: the file changed between the reads.
            let _ = send(&self.tx, more.and(Err(uneven().into())));
        }
    }

    /// Joins a batch of the lead's to the helper's half of it (`None`: the helper ended) and
    /// does the second stage; whether to go on.
    fn finish(
        &self,
        lead: Result<RecordBatch, TraceError>,
        half: Option<Result<(N, RecordBatch), E>>,
    ) -> bool {
        let done = lead.map_err(E::from).and_then(|lead| {
            let (n, helper) = half.unwrap_or_else(|| Err(uneven().into()))?;
            let batch = self.shares.join(&self.schema, lead, &helper)?;
            guarded(|| (self.second)(batch, n))
        });
        send(&self.tx, done)
    }
}

/// Which decoder reads a column.
#[derive(Clone, Copy, PartialEq)]
enum Share {
    Lead,
    Helper,
}

/// Each canonical column's decoder (none for a column neither reads).
struct Shares(Vec<Option<Share>>);

impl Shares {
    /// The columns `options` leaves to read, the helper's those of `helper`; `None` unless
    /// each decoder has one.
    fn of(options: &ReadOptions, helper: &[&str]) -> Option<Self> {
        let shares: Vec<Option<Share>> = COLUMNS
            .iter()
            .map(|c| {
                let share = match helper.contains(&c.name) {
                    true => Share::Helper,
                    false => Share::Lead,
                };
                (!options.skip.contains(&c.name)).then_some(share)
            })
            .collect();
        let both = [Share::Lead, Share::Helper]
            .iter()
            .all(|s| shares.contains(&Some(*s)));
        both.then_some(Shares(shares))
    }

    /// `options` for the decoder of `share`: the other share's columns skipped too.
    fn options(&self, options: &ReadOptions, share: Share) -> ReadOptions {
        let others = COLUMNS
            .iter()
            .zip(&self.0)
            .filter(|(_, s)| s.is_some_and(|s| s != share))
            .map(|(c, _)| c.name);
        ReadOptions {
            skip: options.skip.iter().copied().chain(others).collect(),
            ..options.clone()
        }
    }

    /// The lead's batch with the helper's columns of the same rows in place of its nulls.
    fn join(
        &self,
        schema: &arrow_schema::SchemaRef,
        lead: RecordBatch,
        helper: &RecordBatch,
    ) -> Result<RecordBatch, TraceError> {
        if helper.num_rows() != lead.num_rows() {
            return Err(uneven());
        }
        let columns = self
            .0
            .iter()
            .enumerate()
            .map(|(i, share)| match share {
                Some(Share::Helper) => helper.column(i).clone(),
                _ => lead.column(i).clone(),
            })
            .collect();
        Ok(RecordBatch::try_new(schema.clone(), columns)?)
    }
}

/// The batches of `path` read with `options`; `None` once the error opening it is sent on `tx`.
fn open<T, E: From<TraceError>>(
    path: &Path,
    options: &ReadOptions,
    tx: &SyncSender<Result<T, E>>,
) -> Option<impl Iterator<Item = Result<RecordBatch, TraceError>>> {
    match TraceFile::open_with(path, options) {
        Ok(trace) => Some(trace.batches()),
        Err(e) => {
            let _ = tx.send(Err(e.into()));
            None
        }
    }
}

/// The two decoders of a file found different numbers of rows in it.
fn uneven() -> TraceError {
    TraceError::Corrupt("its columns hold different numbers of rows".into())
}

/// `work`, a panic in it (corrupt data past the decoder) an error too.
fn guarded<T, E: From<TraceError>>(work: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    outbox_trace::guarded(|| Ok(work()))?
}

/// Sends `done`; whether to go on (it was no error and the receiver is still there).
fn send<T, E>(tx: &SyncSender<Result<T, E>>, done: Result<T, E>) -> bool {
    let failed = done.is_err();
    tx.send(done).is_ok() && !failed
}

impl<T, E> Iterator for Ordered<T, E> {
    type Item = Result<T, E>;

    fn next(&mut self) -> Option<Self::Item> {
        self.done.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_trace::schema::column;

    #[test]
    fn shared_columns_come_out_as_one_decoder_reads_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("trace.parquet");
        // Three batches of one row group.
        crate::model::synth::write(&path, 40_000).expect("write");
        let options = ReadOptions {
            dictionary: vec!["actor", "task_id"],
            ..ReadOptions::default()
        };
        let one: Vec<RecordBatch> = TraceFile::open_with(&path, &options)
            .expect("open")
            .batches()
            .collect::<Result<_, _>>()
            .expect("read");
        let trace = TraceFile::open_with(&path, &options).expect("open");
        let (mut rows, mut shared) = (0, true);
        let stages = Stages {
            first_columns: &["actor", "task_id"],
            first: |batch: &RecordBatch| {
                // The helper reads its columns only.
                shared &= batch.column(column("seq")).null_count() == batch.num_rows();
                rows += batch.num_rows();
                Ok::<_, TraceError>(rows)
            },
            second: |batch, rows| Ok((rows, batch)),
        };
        let two: Vec<(usize, RecordBatch)> = std::thread::scope(|scope| {
            Ordered::start(scope, &path, trace, options.clone(), stages)
                .collect::<Result<Vec<_>, TraceError>>()
        })
        .expect("read");
        assert!(shared, "the columns were not shared");
        assert_eq!(two.len(), one.len());
        let mut before = 0;
        for ((rows, two), one) in two.iter().zip(&one) {
            before += one.num_rows();
            assert_eq!(*rows, before, "the first stage runs in file order");
            assert_eq!(two, one);
        }
    }
}
