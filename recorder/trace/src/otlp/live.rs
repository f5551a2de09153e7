//! Spans as they arrive at a receiver (OTLP/HTTP or OTLP/gRPC), mapped request by request with
//! the file's mapping. What a file learns from the whole of it, a receiver learns in arrival
//! order: `service.instance.id`s rank by their first request, and a delivery whose receive and
//! process spans come in separate requests is one event at the start of the half that came first
//! (the event has been handed on by the time the other half arrives).

use std::collections::HashMap;

use super::dropped::Dropped;
use super::mapping::{Mapper, Out};
use super::spans::Request;
use crate::Event;

/// Maps spans as they arrive; keeps the state the mapping needs across requests (one
/// `delivered` per message and actor life for a receive + process pair, the ranks of instances).
#[derive(Debug, Default)]
pub struct LiveMapper {
    mapper: Mapper,
    /// Per actor, its `service.instance.id`s in order of arrival.
    instances: HashMap<String, HashMap<String, u32>>,
}

/// What one request gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mapped {
    /// The events, in the order of their spans in the request and of the events inside a span.
    pub events: Vec<LiveEvent>,
    /// One reason per span that could not be mapped (an attribute value that cannot be read, a
    /// span without any time); such a span gives no event.
    pub rejected: Vec<String>,
    /// The spans (or events of spans) that gave no row: refused for want of a column their
    /// kind requires, or mapped to no kind.
    pub dropped: Vec<Dropped>,
}

/// One event of a span that arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    /// The columns the attributes give. `run_id` is `outbox.run_id` or empty, `scenario`
    /// `outbox.scenario` or `default`, `backend` `outbox.backend` or `otel`, `actor`
    /// `outbox.actor` or `service.name`, `incarnation` `outbox.incarnation` or the rank of
    /// `service.instance.id` by arrival. `seq` and `ts_ns` are 0: the receiver stamps them.
    pub event: Event,
    /// The event's time, nanoseconds since the Unix epoch: the span's end; its start for a
    /// `publish_attempt` or a delivery; a span event's own time.
    pub at_unix_ns: u64,
    /// The `outbox.kind` when the contract does not define it (`event.kind` is then a stand-in).
    pub unknown_kind: Option<String>,
    /// When the span carrying the event ended (a fault "after KIND" fires on it).
    pub span_end_unix_ns: u64,
}

impl LiveMapper {
    /// A mapper with no state yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events of `request`'s spans.
    pub fn map(&mut self, request: &Request) -> Mapped {
        let mut out = Mapped::default();
        for rs in &request.resource_spans {
            for span in &rs.spans {
                let outs = match self.mapper.span(&rs.resource, span) {
                    Ok(outs) => outs,
                    Err(reason) => {
                        out.rejected.push(if span.name.is_empty() {
                            reason
                        } else {
                            format!("span `{}`: {reason}", span.name)
                        });
                        continue;
                    }
                };
                for o in outs {
                    // The other half of a delivery already handed on: nothing new.
                    let Out::Event(p) = o else { continue };
                    let mut p = *p;
                    p.event.incarnation = match (p.incarnation, &p.instance) {
                        (Some(n), _) => n,
                        (None, Some(instance)) => self.rank(&p.event.actor, instance),
                        (None, None) => 0,
                    };
                    out.events.push(LiveEvent {
                        event: p.event,
                        at_unix_ns: p.at,
                        unknown_kind: p.unknown_kind,
                        span_end_unix_ns: p.span_end,
                    });
                }
            }
        }
        out.dropped = self.mapper.take_dropped();
        out
    }

    /// `instance`'s rank among `actor`'s instances, by arrival.
    fn rank(&mut self, actor: &str, instance: &str) -> u32 {
        let known = self.instances.entry(actor.to_string()).or_default();
        if let Some(&rank) = known.get(instance) {
            return rank;
        }
        let rank = u32::try_from(known.len()).unwrap_or(u32::MAX);
        known.insert(instance.to_string(), rank);
        rank
    }
}
