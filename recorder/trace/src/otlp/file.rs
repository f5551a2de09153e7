//! A whole file of spans as canonical batches: OTLP JSON Lines (one `TracesData` object per
//! line), one OTLP JSON document (a `TracesData` object spread over lines), or one OTLP protobuf
//! message (`TracesData` or `ExportTraceServiceRequest`, the same wire shape).
//!
//! Unlike the other encodings, the whole file is mapped before any row is handed out: `ts_ns`
//! counts from the run's earliest event, incarnations rank each actor's `service.instance.id`s by
//! their earliest span, and `seq` (where `outbox.seq` is not on every event) is the time order of
//! the whole run.

use std::collections::HashMap;
use std::io::{BufRead, Read};

use prost::Message;

use super::mapping::{Mapper, Out, Pending};
use super::spans::Request;
use super::{json, proto};
use crate::input::{lines, max_line_words, Chunker, Decoded, MAX_LINE_BYTES};
use crate::TraceError;

/// Decodes OTLP JSON Lines. `stem` is the default `run_id`.
pub(crate) fn decode_json_lines(text: impl BufRead, stem: &str) -> Result<Decoded, TraceError> {
    let mut file = FileMapping::new(stem);
    lines(text, |line, text| {
        let at = |reason: String| TraceError::Line { line, reason };
        let request = json::decode(text.as_bytes()).map_err(at)?;
        file.request(&request).map_err(at)
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
    file.request(&request).map_err(TraceError::Otlp)?;
    file.finish()
}

/// Decodes one OTLP protobuf message; bytes that do not decode as one are
/// [`TraceError::NotATrace`] (they were told apart by their first byte only).
pub(crate) fn decode_protobuf(bytes: &[u8], stem: &str) -> Result<Decoded, TraceError> {
    let request = protobuf_request(bytes).map_err(|e| {
        TraceError::NotATrace(format!("starts like OTLP protobuf (byte 0a) but {e}"))
    })?;
    let mut file = FileMapping::new(stem);
    file.request(&request).map_err(TraceError::Otlp)?;
    file.finish()
}

/// The spans of a `TracesData` protobuf message.
fn protobuf_request(bytes: &[u8]) -> Result<Request, String> {
    proto::TracesData::decode(bytes)
        .map(Request::from)
        .map_err(|e| format!("does not decode as an OTLP TracesData message: {e}"))
}

/// The events of a file's spans so far, and the mapping's state.
pub(super) struct FileMapping {
    mapper: Mapper,
    /// Every event, by [`Pending::id`], with the number of the span that gave it.
    pending: Vec<(Pending, u64)>,
    spans: u64,
}

impl FileMapping {
    pub(super) fn new(stem: &str) -> Self {
        FileMapping {
            mapper: Mapper::new(stem),
            pending: Vec::new(),
            spans: 0,
        }
    }

    /// Maps every span of `request`; the first span that cannot be mapped is the error.
    pub(super) fn request(&mut self, request: &Request) -> Result<(), String> {
        for rs in &request.resource_spans {
            for span in &rs.spans {
                self.spans += 1;
                let outs = self.mapper.span(&rs.resource, span).map_err(|reason| {
                    if span.name.is_empty() {
                        format!("span {}: {reason}", self.spans)
                    } else {
                        format!("span {} `{}`: {reason}", self.spans, span.name)
                    }
                })?;
                for out in outs {
                    match out {
                        Out::Event(p) => {
                            debug_assert_eq!(p.id, self.pending.len() as u64);
                            self.pending.push((*p, self.spans));
                        }
                        Out::Merge { id, at } => {
                            if let Some((p, _)) = usize::try_from(id)
                                .ok()
                                .and_then(|i| self.pending.get_mut(i))
                            {
                                p.at = at;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The run-wide numbers, and the rows as batches.
    pub(super) fn finish(self) -> Result<Decoded, TraceError> {
        if self.pending.is_empty() {
            return Err(TraceError::Empty);
        }
        let mut out = Decoded::default();
        out.header.version_declared = true;
        let mut runs: HashMap<String, Vec<(Pending, u64)>> = HashMap::new();
        let mut run_order = Vec::new();
        for p in self.pending {
            let run = &p.0.event.run_id;
            if !runs.contains_key(run) {
                run_order.push(run.clone());
            }
            runs.entry(run.clone()).or_default().push(p);
        }
        let mut chunker = Chunker::default();
        for run in run_order {
            let mut events = runs.remove(&run).unwrap_or_default();
            // Incarnations: `outbox.incarnation`, else the instance's rank.
            let incarnations: Vec<u32> = {
                let ranks = instance_ranks(&events);
                events
                    .iter()
                    .map(|(p, _)| match (p.incarnation, &p.instance) {
                        (Some(n), _) => n,
                        (None, Some(instance)) => ranks
                            .get(&(p.event.actor.as_str(), instance.as_str()))
                            .copied()
                            .unwrap_or(0),
                        (None, None) => 0,
                    })
                    .collect()
            };
            for ((p, _), n) in events.iter_mut().zip(incarnations) {
                p.event.incarnation = n;
            }
            let start = events.iter().map(|(p, _)| p.at).min().unwrap_or(0);
            let all_seq = events.iter().all(|(p, _)| p.seq.is_some());
            if all_seq {
                events.sort_by_key(|(p, _)| p.seq);
            } else {
                out.header.seq_from_clocks = true;
                events.sort_by_key(|(p, span)| (p.at, *span, p.inside));
            }
            for (i, (mut p, _)) in events.into_iter().enumerate() {
                p.event.seq = if all_seq {
                    p.seq.unwrap_or(0)
                } else {
                    i as u64 + 1
                };
                p.event.ts_ns = i64::try_from(p.at - start).map_err(|_| {
                    TraceError::Otlp(format!(
                        "run `{run}` spans more than 292 years of span time"
                    ))
                })?;
                out.batches.extend(chunker.push(p.event, p.unknown_kind)?);
            }
        }
        out.batches.extend(chunker.flush()?);
        out.rows = chunker.rows();
        if out.rows == 0 {
            return Err(TraceError::Empty);
        }
        Ok(out)
    }
}

/// Each `(actor, service.instance.id)`'s rank among that actor's instances, by earliest span.
fn instance_ranks(events: &[(Pending, u64)]) -> HashMap<(&str, &str), u32> {
    let mut first_seen: HashMap<(&str, &str), u64> = HashMap::new();
    for (p, _) in events {
        if let Some(i) = &p.instance {
            let at = first_seen
                .entry((p.event.actor.as_str(), i.as_str()))
                .or_insert(p.span_start);
            *at = (*at).min(p.span_start);
        }
    }
    let mut by_actor: HashMap<&str, Vec<(u64, &str)>> = HashMap::new();
    for (&(actor, instance), &at) in &first_seen {
        by_actor.entry(actor).or_default().push((at, instance));
    }
    let mut ranks = HashMap::new();
    for (actor, mut instances) in by_actor {
        instances.sort_unstable();
        for (rank, (_, instance)) in instances.into_iter().enumerate() {
            ranks.insert((actor, instance), u32::try_from(rank).unwrap_or(u32::MAX));
        }
    }
    ranks
}
