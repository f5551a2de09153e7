//! Decoding a file's batches on threads of their own, each batch taken on there by a piece of
//! work of the caller's, and the results handed on in file order: a Parquet file of several row
//! groups is shared by two decoders, one taking the even row groups and one the odd (row groups
//! decode independently, each with its own dictionaries); any other file is decoded by one.

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::Scope;

use arrow_array::RecordBatch;
use outbox_trace::input::Encoding;
use outbox_trace::{ReadOptions, TraceError, TraceFile};

/// Decoders sharing a Parquet file's row groups.
const DECODERS: usize = 2;

/// Batches a decoder may run ahead of the one handing them on.
const AHEAD: usize = 1;

/// What a decoder hands on.
enum Decoded<T, E> {
    /// The work done on the next batch of its row group (an error ends the decoder).
    Batch(Result<T, E>),
    /// Its row group is done: the next batch comes from the next decoder.
    GroupEnd,
}

/// The work done on each batch of a file, in file order, decoded and done ahead on threads of
/// their own.
pub(crate) struct Ordered<T, E> {
    decoders: Vec<Receiver<Decoded<T, E>>>,
    /// The decoder whose row group comes next.
    next: usize,
}

impl<T: Send + 'static, E: From<TraceError> + Send + 'static> Ordered<T, E> {
    /// Starts decoding `trace` (opened from `path` with `options`) within `scope`, doing `work`
    /// on each batch.
    pub(crate) fn start<'scope, W>(
        scope: &'scope Scope<'scope, '_>,
        path: &'scope Path,
        trace: TraceFile,
        options: ReadOptions,
        work: &'scope W,
    ) -> Self
    where
        W: Fn(RecordBatch) -> Result<T, E> + Sync,
    {
        let info = trace.info();
        let groups = info.row_groups;
        if info.encoding != Encoding::Parquet || groups < 2 || path.is_dir() {
            let (tx, rx) = sync_channel(1);
            scope.spawn(move || {
                for batch in trace.batches() {
                    if !send(&tx, batch.map_err(E::from), work) {
                        break;
                    }
                }
            });
            return Ordered {
                decoders: vec![rx],
                next: 0,
            };
        }
        drop(trace);
        let decoders = (0..DECODERS)
            .map(|first| {
                let (tx, rx) = sync_channel(AHEAD);
                let options = options.clone();
                scope.spawn(move || {
                    for group in (first..groups).step_by(DECODERS) {
                        if !decode_group(path, group, &options, &tx, work) {
                            break;
                        }
                    }
                });
                rx
            })
            .collect();
        Ordered { decoders, next: 0 }
    }
}

/// Does `work` on `batch` and sends the result; whether to go on (it was no error and the
/// receiver is still there). A panic in `work` (corrupt data past the decoder) is an error too.
fn send<T, E, W>(tx: &SyncSender<Decoded<T, E>>, batch: Result<RecordBatch, E>, work: &W) -> bool
where
    E: From<TraceError>,
    W: Fn(RecordBatch) -> Result<T, E>,
{
    let done = batch.and_then(|b| outbox_trace::guarded(|| Ok(work(b)))?);
    let failed = done.is_err();
    tx.send(Decoded::Batch(done)).is_ok() && !failed
}

/// Decodes row group `group` of `path` alone, doing `work` on each batch; whether to go on with
/// the next.
fn decode_group<T, E, W>(
    path: &Path,
    group: usize,
    options: &ReadOptions,
    tx: &SyncSender<Decoded<T, E>>,
    work: &W,
) -> bool
where
    E: From<TraceError>,
    W: Fn(RecordBatch) -> Result<T, E>,
{
    let options = ReadOptions {
        row_groups: Some(vec![group]),
        ..options.clone()
    };
    match TraceFile::open_with(path, &options) {
        Ok(trace) => {
            for batch in trace.batches() {
                if !send(tx, batch.map_err(E::from), work) {
                    return false;
                }
            }
            tx.send(Decoded::GroupEnd).is_ok()
        }
        Err(e) => {
            let _ = tx.send(Decoded::Batch(Err(e.into())));
            false
        }
    }
}

impl<T, E> Iterator for Ordered<T, E> {
    type Item = Result<T, E>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.decoders.get(self.next)?.recv() {
                Ok(Decoded::Batch(batch)) => return Some(batch),
                Ok(Decoded::GroupEnd) => self.next = (self.next + 1) % self.decoders.len(),
                // The decoder whose turn it is has no row group left: every one is read.
                Err(_) => return None,
            }
        }
    }
}
