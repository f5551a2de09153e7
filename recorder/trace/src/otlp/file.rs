//! A whole file of spans as canonical batches: OTLP JSON Lines (one `TracesData` object per
//! line), one OTLP JSON document (a `TracesData` object spread over lines), or one OTLP protobuf
//! message (`TracesData` or `ExportTraceServiceRequest`, the same wire shape).
//!
//! Unlike the other encodings, no row can be handed out before the last span is read: `ts_ns`
//! counts from the run's earliest event, incarnations rank each actor's `service.instance.id`s by
//! their earliest span, `seq` (where `outbox.seq` is not on every event) is the time order of the
//! whole run, and the second half of a receive/process pair moves the first half's event to the
//! earlier start. Yet memory stays bounded, not by the file, by an external sort: the spans are
//! read line by line and mapped to pending events; once the pending events reach a bound
//! ([`Bound`]: 262,144 events or about 16 MiB) they are sorted and spilled as one segment to an
//! anonymous temporary file ([`super::spill`]). Only small run-wide state stays in memory: per
//! run its earliest time, whether every event has `outbox.seq`, each (actor, instance)'s earliest
//! span; the mapper's unpaired delivery halves; and the merges whose event was already spilled.
//! The last two are small when, as exporters do, the two halves of a delivery are written close
//! together; a file that lists every receive span before every process span holds both for each
//! delivery (a few dozen bytes each), and a file with a `run_id` per span holds a run each.
//! At the end, a segment whose order those late merges (or a run that turned out to lack
//! `outbox.seq`) changed is read back and sorted again, one segment at a time; then a k-way merge
//! of the segments assigns `seq`, `ts_ns` and `incarnation` and hands out canonical batches as
//! they are read. A file whose events stay under the bound is mapped in memory, without a
//! temporary file, and its batches are built before the first is handed out.
//!
//! The rows, their order and their numbers, and the errors, are the same whatever the bound.
//! One OTLP JSON document or protobuf message is decoded whole (at most [`MAX_LINE_BYTES`] of
//! input) before its spans are mapped: its span model is held whole, its events spill as those
//! of JSON Lines do.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::io::{BufRead, Read};
use std::sync::Arc;

use arrow_array::RecordBatch;
use prost::Message;

use super::dropped::{Ending, Tally};
use super::mapping::{Mapper, Out, Pending};
use super::spans::Request;
pub(super) use super::spill::Bound;
use super::spill::{Held, Key, Segment, SegmentReader, Spill};
use super::{json, proto};
use crate::input::{lines, max_line_words, Chunker, Decoded, Header, MAX_LINE_BYTES};
use crate::TraceError;

/// Decodes OTLP JSON Lines. `stem` is the default `run_id`.
pub(crate) fn decode_json_lines(text: impl BufRead, stem: &str) -> Result<Decoded, TraceError> {
    decode_json_lines_within(text, stem, Bound::default())
}

/// Decodes OTLP JSON Lines, spilling pending events at `bound`.
pub(super) fn decode_json_lines_within(
    text: impl BufRead,
    stem: &str,
    bound: Bound,
) -> Result<Decoded, TraceError> {
    let mut file = FileMapping::within(stem, bound);
    lines(text, |line, text| {
        let at = |reason: String| TraceError::Line { line, reason };
        let request = json::decode(text.as_bytes()).map_err(at)?;
        file.request(&request).map_err(|e| e.into_trace(at))
    })?;
    file.finish()
}

/// Decodes one OTLP JSON document (pretty-printed or not), read whole: one longer than
/// [`MAX_LINE_BYTES`] is bad input.
pub(crate) fn decode_json_document(text: impl Read, stem: &str) -> Result<Decoded, TraceError> {
    let mut capped = Read::take(text, MAX_LINE_BYTES as u64 + 1);
    let request = json::decode_reader(&mut capped).map_err(|e| {
        if capped.limit() == 0 {
            TraceError::Otlp(format!(
                "one OTLP JSON document longer than {}, the most read whole \
                 (MAX_LINE_BYTES): write spans as OTLP JSON Lines, one TracesData per line",
                max_line_words()
            ))
        } else {
            TraceError::Otlp(e)
        }
    })?;
    let mut file = FileMapping::new(stem);
    file.request(&request)
        .map_err(|e| e.into_trace(TraceError::Otlp))?;
    file.finish()
}

/// Decodes one OTLP protobuf message; bytes that do not decode as one are
/// [`TraceError::NotATrace`] (they were told apart by their first byte only).
pub(crate) fn decode_protobuf(bytes: &[u8], stem: &str) -> Result<Decoded, TraceError> {
    let request = protobuf_request(bytes).map_err(|e| {
        TraceError::NotATrace(format!("starts like OTLP protobuf (byte 0a) but {e}"))
    })?;
    let mut file = FileMapping::new(stem);
    file.request(&request)
        .map_err(|e| e.into_trace(TraceError::Otlp))?;
    file.finish()
}

/// The spans of a `TracesData` protobuf message.
fn protobuf_request(bytes: &[u8]) -> Result<Request, String> {
    proto::TracesData::decode(bytes)
        .map(Request::from)
        .map_err(|e| format!("does not decode as an OTLP TracesData message: {e}"))
}

/// Why a span could not be taken.
#[derive(Debug)]
pub(super) enum Refused {
    /// The span cannot be mapped: why, naming the span.
    Span(String),
    /// Pending events could not be spilled.
    Spill(TraceError),
}

impl Refused {
    /// The error, `span` saying where the span was.
    pub(super) fn into_trace(self, span: impl FnOnce(String) -> TraceError) -> TraceError {
        match self {
            Refused::Span(reason) => span(reason),
            Refused::Spill(e) => e,
        }
    }
}

/// What is known of one run (`run_id`) while its spans are read: small, whatever the run.
#[derive(Debug)]
struct Run {
    name: String,
    /// Whether every event so far has `outbox.seq` (then `seq` is it, else the time order).
    by_seq: bool,
    /// The earliest event time, merges applied (late ones once read back).
    start: u64,
    /// The latest event time before any merge: `start` plus at most this, so at most this much
    /// span time.
    latest: u64,
    /// Per actor, per `service.instance.id`, its earliest span's start.
    first_spans: HashMap<String, HashMap<String, u64>>,
}

/// The events of a file's spans so far, and the mapping's state.
pub(super) struct FileMapping {
    mapper: Mapper,
    spans: u64,
    /// The runs, numbered by first appearance.
    runs: Vec<Run>,
    run_numbers: HashMap<String, u32>,
    /// The events not spilled: ids `base..base + held.len()`, in id order.
    held: Vec<Held>,
    base: u64,
    held_bytes: usize,
    /// Merges whose event was already spilled: id, its time now.
    late: BTreeMap<u64, u64>,
    spill: Option<Spill>,
    segments: Vec<Segment>,
    bound: Bound,
    /// The spans that gave no row, by scenario.
    tally: Tally,
    /// The scenarios with a `run_end` row.
    ended: HashSet<(String, String)>,
}

impl FileMapping {
    pub(super) fn new(stem: &str) -> Self {
        Self::within(stem, Bound::default())
    }

    /// A mapping that spills its pending events at `bound`.
    pub(super) fn within(stem: &str, bound: Bound) -> Self {
        FileMapping {
            mapper: Mapper::new(stem),
            spans: 0,
            runs: Vec::new(),
            run_numbers: HashMap::new(),
            held: Vec::new(),
            base: 0,
            held_bytes: 0,
            late: BTreeMap::new(),
            spill: None,
            segments: Vec::new(),
            bound,
            tally: Tally::default(),
            ended: HashSet::new(),
        }
    }

    /// How many segments were spilled so far.
    #[cfg(test)]
    pub(super) fn spilled(&self) -> usize {
        self.segments.len()
    }

    /// Maps every span of `request`; the first span that cannot be mapped is the error.
    pub(super) fn request(&mut self, request: &Request) -> Result<(), Refused> {
        for rs in &request.resource_spans {
            for span in &rs.spans {
                self.spans += 1;
                let outs = self
                    .mapper
                    .span(&rs.resource, span)
                    .map_err(|reason| Refused::Span(refusal(self.spans, span, &reason)))?;
                for d in self.mapper.take_dropped() {
                    self.tally.add(&d);
                }
                for out in outs {
                    match out {
                        Out::Event(p) => self.hold(*p),
                        Out::Merge { id, at } => self.merge(id, at),
                    }
                }
                if self.held.len() >= self.bound.events || self.held_bytes >= self.bound.bytes {
                    self.spill_held().map_err(Refused::Spill)?;
                }
            }
        }
        Ok(())
    }

    /// Takes a new event, and what it tells of its run.
    fn hold(&mut self, p: Pending) {
        debug_assert_eq!(p.id, self.base + self.held.len() as u64);
        if p.event.kind == crate::Kind::RunEnd && p.unknown_kind.is_none() {
            self.ended
                .insert((p.event.run_id.clone(), p.event.scenario.clone()));
        }
        let run = match self.run_numbers.get(&p.event.run_id) {
            Some(&n) => n,
            None => {
                let n = u32::try_from(self.runs.len()).unwrap_or(u32::MAX);
                self.runs.push(Run {
                    name: p.event.run_id.clone(),
                    by_seq: true,
                    start: u64::MAX,
                    latest: 0,
                    first_spans: HashMap::new(),
                });
                self.run_numbers.insert(p.event.run_id.clone(), n);
                n
            }
        };
        let r = &mut self.runs[run as usize];
        r.by_seq &= p.seq.is_some();
        r.start = r.start.min(p.at);
        r.latest = r.latest.max(p.at);
        if let Some(instance) = &p.instance {
            let actor = &p.event.actor;
            if !r.first_spans.contains_key(actor) {
                r.first_spans.insert(actor.clone(), HashMap::new());
            }
            if let Some(instances) = r.first_spans.get_mut(actor) {
                match instances.get_mut(instance) {
                    Some(at) => *at = (*at).min(p.span_start),
                    None => {
                        instances.insert(instance.clone(), p.span_start);
                    }
                }
            }
        }
        let held = Held {
            pending: p,
            span: self.spans,
            run,
        };
        self.held_bytes += held.bytes();
        self.held.push(held);
    }

    /// Moves event `id` to `at` (the other half of its delivery started earlier).
    fn merge(&mut self, id: u64, at: u64) {
        if id < self.base {
            self.late.insert(id, at);
            return;
        }
        if let Some(h) = usize::try_from(id - self.base)
            .ok()
            .and_then(|i| self.held.get_mut(i))
        {
            h.pending.at = at;
            let r = &mut self.runs[h.run as usize];
            r.start = r.start.min(at);
        }
    }

    /// Sorts the events held and writes them as one segment.
    fn spill_held(&mut self) -> Result<(), TraceError> {
        if self.held.is_empty() {
            return Ok(());
        }
        let runs = &self.runs;
        self.held
            .sort_unstable_by_key(|h| h.key(runs[h.run as usize].by_seq));
        let mut by_seq: Vec<u32> = self
            .held
            .iter()
            .map(|h| h.run)
            .filter(|&r| runs[r as usize].by_seq)
            .collect();
        by_seq.dedup();
        let spill = match &mut self.spill {
            Some(s) => s,
            None => self.spill.insert(Spill::new()?),
        };
        let segment = spill.write(&self.held, self.base, by_seq)?;
        self.base = segment.hi;
        self.segments.push(segment);
        self.held.clear();
        self.held_bytes = 0;
        Ok(())
    }

    /// The run-wide numbers, and the rows as batches: built now when no event was spilled,
    /// else as they are handed out.
    pub(super) fn finish(mut self) -> Result<Decoded, TraceError> {
        // Once anything spilled, the rest spills too: a segment read back to be sorted again is
        // then the only one in memory.
        if self.spill.is_some() {
            self.spill_held()?;
            self.held = Vec::new();
        }
        let FileMapping {
            mut runs,
            mut held,
            base,
            late,
            mut spill,
            mut segments,
            tally,
            ended,
            ..
        } = self;
        let ending = Ending::new(tally, &ended);
        let rows = base + held.len() as u64 + ending.added();
        if rows == 0 {
            return Err(TraceError::Empty);
        }
        let names: Arc<[String]> = runs.iter().map(|r| r.name.clone()).collect();
        // A segment whose order changed is read back and sorted again: one segment at a time.
        for segment in &mut segments {
            let late_here = late.range(segment.lo..segment.hi).next().is_some();
            let turned = segment.by_seq.iter().any(|&r| !runs[r as usize].by_seq);
            let Some(spill) = spill.as_mut().filter(|_| late_here || turned) else {
                continue;
            };
            let mut reader = spill.reader(segment, names.clone());
            let mut events = Vec::with_capacity(usize::try_from(segment.count).unwrap_or(0));
            while let Some(mut h) = reader.next_held()? {
                if let Some(&at) = late.get(&h.pending.id) {
                    h.pending.at = at;
                    let r = &mut runs[h.run as usize];
                    r.start = r.start.min(at);
                }
                events.push(h);
            }
            drop(reader);
            events.sort_unstable_by_key(|h| h.key(runs[h.run as usize].by_seq));
            *segment = spill.write(&events, segment.lo, Vec::new())?;
        }
        drop(late);
        held.sort_unstable_by_key(|h| h.key(runs[h.run as usize].by_seq));
        // No run may span more span time than `ts_ns` holds: the first that does is the error.
        for (n, run) in runs.iter().enumerate() {
            if run.latest - run.start <= i64::MAX as u64 {
                continue;
            }
            // `latest` is before merges: the exact latest time, read back.
            let mut latest = held
                .iter()
                .filter(|h| h.run as usize == n)
                .map(|h| h.pending.at)
                .max()
                .unwrap_or(0);
            if let Some(spill) = &spill {
                for segment in &segments {
                    let mut reader = spill.reader(segment, names.clone());
                    while let Some(h) = reader.next_held()? {
                        if h.run as usize == n {
                            latest = latest.max(h.pending.at);
                        }
                    }
                }
            }
            if latest - run.start > i64::MAX as u64 {
                return Err(too_long(&run.name));
            }
        }
        let header = Header {
            version_declared: true,
            seq_from_clocks: runs.iter().any(|r| !r.by_seq),
            ..Header::default()
        };
        let mut sources: Vec<Source> = match &spill {
            Some(spill) => segments
                .iter()
                .map(|s| Source::Spilled(spill.reader(s, names.clone())))
                .collect(),
            None => Vec::new(),
        };
        sources.push(Source::Held(held.into_iter()));
        let runs = runs.into_iter().map(Placing::new).collect();
        let mut handout = Handout::new(sources, runs, ending)?;
        let batches: crate::input::DecodedBatches = if segments.is_empty() {
            let mut all = Vec::new();
            while let Some(batch) = handout.next_batch()? {
                all.push(batch);
            }
            Box::new(all.into_iter().map(Ok))
        } else {
            Box::new(handout)
        };
        Ok(Decoded {
            batches,
            rows,
            header,
        })
    }
}

fn too_long(run: &str) -> TraceError {
    TraceError::Otlp(format!(
        "run `{run}` spans more than 292 years of span time"
    ))
}

/// Where the merge takes events from: a spilled segment, or the events still held.
enum Source {
    Spilled(SegmentReader),
    Held(std::vec::IntoIter<Held>),
}

impl Source {
    fn next_held(&mut self) -> Result<Option<Held>, TraceError> {
        match self {
            Source::Spilled(r) => r.next_held(),
            Source::Held(events) => Ok(events.next()),
        }
    }
}

/// A run's numbers while its events are handed out.
struct Placing {
    name: String,
    by_seq: bool,
    start: u64,
    /// Per actor, per `service.instance.id`, its rank by earliest span.
    ranks: HashMap<String, HashMap<String, u32>>,
    /// Events handed out so far.
    placed: u64,
}

impl Placing {
    fn new(run: Run) -> Self {
        let ranks = run
            .first_spans
            .into_iter()
            .map(|(actor, instances)| {
                let mut by_start: Vec<(u64, String)> =
                    instances.into_iter().map(|(i, at)| (at, i)).collect();
                by_start.sort_unstable();
                let ranked = by_start
                    .into_iter()
                    .enumerate()
                    .map(|(rank, (_, i))| (i, u32::try_from(rank).unwrap_or(u32::MAX)))
                    .collect();
                (actor, ranked)
            })
            .collect();
        Placing {
            name: run.name,
            by_seq: run.by_seq,
            start: run.start,
            ranks,
            placed: 0,
        }
    }
}

/// The k-way merge of the sources, in order, as canonical batches.
struct Handout {
    sources: Vec<Source>,
    /// The next event of each source, and the heap of their keys.
    heads: Vec<Option<Held>>,
    heap: BinaryHeap<Reverse<(Key, usize)>>,
    runs: Vec<Placing>,
    chunker: Chunker,
    /// Reading a spilled segment back failed: that error was the last item.
    failed: bool,
    /// Completes the `run_end` rows with the counts of spans that gave no row.
    ending: Ending,
}

impl Handout {
    fn new(
        mut sources: Vec<Source>,
        runs: Vec<Placing>,
        ending: Ending,
    ) -> Result<Self, TraceError> {
        let mut heads = Vec::with_capacity(sources.len());
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, source) in sources.iter_mut().enumerate() {
            let head = source.next_held()?;
            if let Some(h) = &head {
                heap.push(Reverse((h.key(runs[h.run as usize].by_seq), i)));
            }
            heads.push(head);
        }
        Ok(Handout {
            sources,
            heads,
            heap,
            runs,
            chunker: Chunker::default(),
            failed: false,
            ending,
        })
    }

    /// The next batch; `None` after the last.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>, TraceError> {
        loop {
            let Some(Reverse((_, i))) = self.heap.pop() else {
                for e in self.ending.rest() {
                    if let Some(batch) = self.chunker.push(e, None)? {
                        return Ok(Some(batch));
                    }
                }
                return self.chunker.flush();
            };
            let Some(h) = self.heads[i].take() else {
                continue;
            };
            if let Some(next) = self.sources[i].next_held()? {
                let by_seq = self.runs[next.run as usize].by_seq;
                self.heap.push(Reverse((next.key(by_seq), i)));
                self.heads[i] = Some(next);
            }
            let run = &mut self.runs[h.run as usize];
            let mut p = h.pending;
            p.event.incarnation = match (p.incarnation, &p.instance) {
                (Some(n), _) => n,
                (None, Some(instance)) => run
                    .ranks
                    .get(&p.event.actor)
                    .and_then(|r| r.get(instance))
                    .copied()
                    .unwrap_or(0),
                (None, None) => 0,
            };
            run.placed += 1;
            p.event.seq = if run.by_seq {
                p.seq.unwrap_or(0)
            } else {
                run.placed
            };
            p.event.ts_ns =
                p.at.checked_sub(run.start)
                    .and_then(|t| i64::try_from(t).ok())
                    .ok_or_else(|| too_long(&run.name))?;
            self.ending.pass(&mut p.event);
            if let Some(batch) = self.chunker.push(p.event, p.unknown_kind)? {
                return Ok(Some(batch));
            }
        }
    }
}

/// The batches of a mapping that spilled, built as they are read. A spilled segment that cannot
/// be read back (the temporary file failing under it) is the last item: an error, never a
/// shorter trace.
impl Iterator for Handout {
    type Item = Result<RecordBatch, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_batch().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

/// Why the `n`-th span of a file, `span`, could not be mapped: its number, its name if it has
/// one, and `reason`.
pub(super) fn refusal(n: u64, span: &super::spans::Span, reason: &str) -> String {
    if span.name.is_empty() {
        format!("span {n}: {reason}")
    } else {
        format!("span {n} `{}`: {reason}", span.name)
    }
}
