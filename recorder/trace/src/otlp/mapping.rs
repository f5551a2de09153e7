//! Spans to events, as the contract's section "OpenTelemetry spans" says: the one mapping that a
//! whole file ([`super::file`]) and spans arriving at a receiver ([`super::LiveMapper`]) go
//! through.
//!
//! - A span or span event carrying `outbox.kind` is one event of that kind, at the span's end (a
//!   span event: at its own time); its columns come from `outbox.<column>` attributes.
//! - A span without `outbox.kind` that follows the messaging conventions: `send`/`publish` gives
//!   `publish_attempt` at its start and `publish_acked` (`publish_unacked` when its status is
//!   ERROR) at its end; `receive` and `process` of one message in one actor life give ONE
//!   `delivered` (`redelivered` when `outbox.attempt` > 1) at the earlier start of the two;
//!   `settle` gives `acked` unless it was negative; `create` and other spans give nothing.
//! - A delivery is `redelivered` when `outbox.attempt` > 1, or when the span carries RabbitMQ's
//!   flag (`messaging.rabbitmq.message.redelivered`, or `outbox.redelivered`) set true.
//! - An event that lacks a column identifying its step (`event_id`, `task_id` where its kind
//!   lists it) gives no row (it is *refused*); one that lacks only columns some invariants read
//!   (`store_rev`, `amount`, `counter`, `attempt`, `broker_seq`) is kept. A span that carries
//!   `outbox.*` attributes of its own but no kind, and whose events name none, is refused for
//!   want of `kind` (such a span frames steps only when its events report them). A span that
//!   maps to no kind and carries no `outbox.*` attribute gives no row either (*unmapped*); a
//!   span whose trace and span id were already taken is an exporter's retry (a *copy*) and gives
//!   nothing again. All are kept as [`Dropped`] for the counts of `run_end`.
//!
//! The mapping is stateful only for the receive/process pairs: the first span of a pair gives the
//! event, the second is paired with it (a [`Out::Merge`] moves the event to the earlier start,
//! which a file applies and a receiver, having sent the event on, cannot). Each delivery is paired
//! at most once, so a message delivered twice to one life gives two events.
//!
//! A value that cannot be read (an integer attribute that is not an integer or does not fit its
//! column, a span without any time, an entry id out of the packing's range) rejects the whole
//! span: it gives no event and leaves the state as it was.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};

use super::dropped::{Dropped, Why};
use super::key;
use super::spans::{Attribute, Span, SpanKey, Value};
use crate::position::{redis_entry_id, BrokerPosition};
use crate::step::MissingFields;
use crate::{Event, Kind};

/// One event of a span, before the run-wide numbers (`seq`, `ts_ns`, `incarnation`) are known.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The mapper's number for this event, in the order events were made (from 0).
    pub id: u64,
    /// The columns the attributes give; `seq`, `ts_ns` and `incarnation` are 0.
    pub event: Event,
    /// The kind's name when the contract does not define it (then `event.kind` is a stand-in).
    pub unknown_kind: Option<String>,
    /// The event's time, nanoseconds since the Unix epoch.
    pub at: u64,
    /// When its span started (ranks an actor's instances by their earliest span).
    pub span_start: u64,
    /// When its span ended.
    pub span_end: u64,
    /// Its place among its span's events (1-based).
    pub inside: u32,
    /// `outbox.seq`, on an event named by `outbox.kind`.
    pub seq: Option<u64>,
    /// `outbox.incarnation`.
    pub incarnation: Option<u32>,
    /// The resource's `service.instance.id`.
    pub instance: Option<String>,
}

/// What mapping one span gives.
#[derive(Debug, Clone)]
pub(crate) enum Out {
    /// A new event.
    Event(Box<Pending>),
    /// The span is the other half of the delivery already given as event `id`; that delivery
    /// happened at `at` (the earlier of the two starts).
    Merge {
        /// The event's [`Pending::id`].
        id: u64,
        /// Its time now.
        at: u64,
    },
}

/// Which half of a delivery a span is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Receive,
    Process,
}

/// One message's delivery to one actor life (run, scenario, actor, incarnation or instance,
/// event, attempt), as a 128-bit digest: a waiting half costs 16 bytes of key, however long the
/// names, and two deliveries share a digest with a chance of about n^2 / 2^129.
type DeliveryKey = (u64, u64);

/// A delivery event given by one half and still waiting for the other.
#[derive(Debug, Clone, Copy)]
struct Unpaired {
    id: u64,
    half: Half,
    at: u64,
}

/// Maps spans to events, keeping the receive/process halves not yet paired.
#[derive(Debug, Default)]
pub(crate) struct Mapper {
    /// `run_id` where `outbox.run_id` is absent.
    default_run_id: String,
    unpaired: HashMap<DeliveryKey, VecDeque<Unpaired>>,
    next_id: u64,
    /// The keys of the spans mapped so far: a span with one of them again is a copy.
    seen: HashSet<SpanKey>,
    /// The spans, or events of spans, that gave no row since [`Mapper::take_dropped`].
    dropped: Vec<Dropped>,
}

impl Mapper {
    /// A mapper whose events without `outbox.run_id` get `default_run_id`.
    pub fn new(default_run_id: impl Into<String>) -> Self {
        Mapper {
            default_run_id: default_run_id.into(),
            ..Mapper::default()
        }
    }

    /// The events of `span`, whose resource has the attributes `resource`. `Err` says why the
    /// span cannot be mapped; the mapper is then as it was.
    pub fn span(&mut self, resource: &[Attribute], span: &Span) -> Result<Vec<Out>, String> {
        if span.key.is_some_and(|k| self.seen.contains(&k)) {
            self.drop_copy(resource, span);
            return Ok(Vec::new());
        }
        let whole = Frame::of(span)?;
        let attrs = Attrs([&span.attributes, resource, &[]]);
        let own_kind = attrs.text(key::KIND);
        let operation = if own_kind.is_some() {
            None
        } else {
            attrs
                .text(key::OPERATION_TYPE)
                .or_else(|| attrs.text(key::OPERATION))
                .map(|o| o.to_ascii_lowercase())
        };
        let operation = operation.as_deref();
        let mut made: Vec<Made> = Vec::new();
        if matches!(operation, Some("send" | "publish")) {
            let attempt = Kind::PublishAttempt.as_str();
            made.push(self.event(&attrs, attempt, whole.start, whole, true)?);
        }
        self.span_events(resource, span, whole, &mut made)?;
        let half = match own_kind {
            Some(kind) => {
                made.push(self.event(&attrs, &kind, whole.end, whole, false)?);
                None
            }
            None => self.conventional(&attrs, span, operation, whole, &mut made)?,
        };
        // Every event of the span was read: only now does the state change.
        if let Some(k) = span.key {
            self.seen.insert(k);
        }
        let understood = matches!(
            operation,
            Some("send" | "publish" | "receive" | "process" | "settle" | "create")
        );
        if made.is_empty() && !understood {
            self.drop_mapped_to_nothing(&attrs, span);
        }
        Ok(self.number(made, half))
    }

    /// Keeps `span`, a copy of one already mapped, as dropped.
    fn drop_copy(&mut self, resource: &[Attribute], span: &Span) {
        let (run_id, scenario) = self.place(&Attrs([&span.attributes, resource, &[]]));
        self.dropped.push(Dropped {
            run_id,
            scenario,
            why: Why::Copy,
        });
    }

    /// The events of `span`'s span events that carry their own kind, in time order, onto `made`.
    fn span_events(
        &self,
        resource: &[Attribute],
        span: &Span,
        whole: Frame,
        made: &mut Vec<Made>,
    ) -> Result<(), String> {
        let mut events: Vec<_> = span.events.iter().collect();
        events.sort_by_key(|e| e.time_unix_ns.unwrap_or(whole.end));
        for ev in events {
            // A span event carries its own kind; it sees its span's attributes after its own.
            if !ev.attributes.iter().any(|kv| kv.key == key::KIND) {
                continue;
            }
            let ev_attrs = Attrs([&ev.attributes, &span.attributes, resource]);
            let Some(kind) = ev_attrs.text(key::KIND) else {
                continue;
            };
            let at = ev.time_unix_ns.unwrap_or(whole.end);
            made.push(self.event(&ev_attrs, &kind, at, whole, false)?);
        }
        Ok(())
    }

    /// The event a kind-less span gives by the messaging conventions of its `operation`, onto
    /// `made`; which half of a delivery it is, for a receive or process span.
    fn conventional(
        &self,
        attrs: &Attrs,
        span: &Span,
        operation: Option<&str>,
        whole: Frame,
        made: &mut Vec<Made>,
    ) -> Result<Option<Half>, String> {
        match operation {
            Some("send" | "publish") => {
                let kind = if span.error {
                    Kind::PublishUnacked
                } else {
                    Kind::PublishAcked
                };
                made.push(self.event(attrs, kind.as_str(), whole.end, whole, true)?);
            }
            Some(op @ ("receive" | "process")) => {
                let delivered = Kind::Delivered.as_str();
                let mut delivery = self.event(attrs, delivered, whole.start, whole, true)?;
                if delivery.pending.event.attempt.is_some_and(|a| a > 1) || redelivered_flag(attrs)
                {
                    delivery.pending.event.kind = Kind::Redelivered;
                }
                made.push(delivery);
                return Ok(Some(if op == "receive" {
                    Half::Receive
                } else {
                    Half::Process
                }));
            }
            Some("settle") => {
                let negative = attrs.text(key::OPERATION_NAME).is_some_and(|name| {
                    key::NEGATIVE_SETTLEMENTS
                        .iter()
                        .any(|n| name.eq_ignore_ascii_case(n))
                });
                if !negative && !span.error {
                    made.push(self.event(attrs, Kind::Acked.as_str(), whole.end, whole, true)?);
                }
            }
            _ => {}
        }
        Ok(None)
    }

    /// Keeps `span`, which gave no event and whose operation means nothing here, as dropped: a
    /// span with `outbox.*` attributes of its own speaks the contract, so without a kind on it
    /// or its events it is refused (kind-less), not unmapped.
    fn drop_mapped_to_nothing(&mut self, attrs: &Attrs, span: &Span) {
        let speaks = span
            .attributes
            .iter()
            .any(|kv| kv.key.starts_with("outbox."));
        let (run_id, scenario) = self.place(attrs);
        self.dropped.push(Dropped {
            run_id,
            scenario,
            why: if speaks {
                Why::Kindless
            } else {
                Why::Unmapped(span.name.clone())
            },
        });
    }

    /// The span's events numbered, refused where they lack an identifying column, and (the
    /// span being a delivery's `half`) paired with the other half where it waits.
    fn number(&mut self, made: Vec<Made>, half: Option<Half>) -> Vec<Out> {
        let mut out = Vec::with_capacity(made.len());
        let mut inside = 0u32;
        for mut m in made {
            let missing = m.pending.event.missing_identity();
            if m.pending.unknown_kind.is_none() && !missing.is_empty() {
                let e = &m.pending.event;
                self.dropped.push(Dropped {
                    run_id: e.run_id.clone(),
                    scenario: e.scenario.clone(),
                    why: Why::Refused(MissingFields {
                        kind: e.kind,
                        fields: missing,
                    }),
                });
                continue;
            }
            inside = inside.saturating_add(1);
            m.pending.inside = inside;
            if let (Some(half), true) = (half, m.delivery) {
                if let Some(merge) = self.pair(half, &m.pending) {
                    out.push(merge);
                    continue;
                }
            }
            m.pending.id = self.next_id;
            self.next_id += 1;
            if let Some(half) = half.filter(|_| m.delivery) {
                let unpaired = Unpaired {
                    id: m.pending.id,
                    half,
                    at: m.pending.at,
                };
                self.unpaired
                    .entry(delivery_key(&m.pending))
                    .or_default()
                    .push_back(unpaired);
            }
            out.push(Out::Event(Box::new(m.pending)));
        }
        out
    }

    /// The spans, or events of spans, that gave no row since the last call.
    pub fn take_dropped(&mut self) -> Vec<Dropped> {
        std::mem::take(&mut self.dropped)
    }

    /// The run and scenario a span's attributes name.
    fn place(&self, attrs: &Attrs) -> (String, String) {
        let text = |k: &str| attrs.text(k).map(Cow::into_owned);
        (
            text(key::RUN_ID).unwrap_or_else(|| self.default_run_id.clone()),
            text(key::SCENARIO).unwrap_or_else(|| "default".into()),
        )
    }

    /// Pairs the delivery `p` (a `half`) with the oldest waiting other half of the same
    /// delivery, if there is one.
    fn pair(&mut self, half: Half, p: &Pending) -> Option<Out> {
        let k = delivery_key(p);
        let waiting = self.unpaired.get_mut(&k)?;
        let i = waiting.iter().position(|u| u.half != half)?;
        let other = waiting.remove(i)?;
        if waiting.is_empty() {
            self.unpaired.remove(&k);
        }
        Some(Out::Merge {
            id: other.id,
            at: other.at.min(p.at),
        })
    }

    /// One event of kind `kind_name` at `at` from `attrs`. `derived`: the kind came from the
    /// messaging conventions, so `outbox.seq` (if any) does not name it.
    fn event(
        &self,
        attrs: &Attrs,
        kind_name: &str,
        at: u64,
        span: Frame,
        derived: bool,
    ) -> Result<Made, String> {
        let (kind, unknown_kind) = match kind_name.parse::<Kind>() {
            Ok(k) => (k, None),
            Err(_) => (Kind::RunStart, Some(kind_name.to_string())),
        };
        let mut e = Event::new(kind);
        let text = |k: &str| attrs.text(k).map(Cow::into_owned);
        e.run_id = text(key::RUN_ID).unwrap_or_else(|| self.default_run_id.clone());
        e.scenario = text(key::SCENARIO).unwrap_or_else(|| "default".into());
        e.backend = text(key::BACKEND).unwrap_or_else(|| "otel".into());
        e.actor = text(key::ACTOR)
            .or_else(|| text(key::SERVICE_NAME))
            .unwrap_or_else(|| "unknown_service".into());
        e.task_id = text(key::TASK_ID);
        e.event_id = std::iter::once(key::EVENT_ID)
            .chain(key::EVENT_ID_FALLBACKS.iter().copied())
            .find_map(text);
        e.aggregate_id = text(key::AGGREGATE_ID);
        e.aggregate_seq = attrs.integer(key::AGGREGATE_SEQ)?;
        e.attempt = attrs.integer(key::ATTEMPT)?;
        e.broker_seq = broker_seq(attrs)?;
        e.partition = std::iter::once(key::PARTITION)
            .chain(key::PARTITION_FALLBACKS.iter().copied())
            .map(|k| attrs.integer(k))
            .find_map(Result::transpose)
            .transpose()?;
        e.store_rev = attrs.integer(key::STORE_REV)?;
        e.amount = attrs.integer(key::AMOUNT)?;
        e.counter = attrs.integer(key::COUNTER)?;
        e.counter_key = text(key::COUNTER_KEY);
        e.detail = text(key::DETAIL);
        let seq = if derived {
            None
        } else {
            attrs.integer(key::SEQ)?
        };
        let delivery = derived && matches!(kind, Kind::Delivered);
        Ok(Made {
            pending: Pending {
                id: 0,
                event: e,
                unknown_kind,
                at,
                span_start: span.start,
                span_end: span.end,
                inside: 0,
                seq,
                incarnation: attrs.integer(key::INCARNATION)?,
                instance: text(key::SERVICE_INSTANCE_ID),
            },
            delivery,
        })
    }
}

/// Whether the span carries RabbitMQ's redelivery flag set true.
fn redelivered_flag(attrs: &Attrs) -> bool {
    key::REDELIVERED.iter().any(|k| {
        attrs
            .text(k)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    })
}

/// A span's start and end.
#[derive(Debug, Clone, Copy)]
struct Frame {
    start: u64,
    end: u64,
}

impl Frame {
    /// `span`'s start and end; either for both when it has one only.
    fn of(span: &Span) -> Result<Self, String> {
        let (start, end) = match (span.start_unix_ns, span.end_unix_ns) {
            (Some(s), Some(e)) => (s, e),
            (Some(t), None) | (None, Some(t)) => (t, t),
            (None, None) => return Err("the span has neither a start nor an end time".into()),
        };
        Ok(Frame { start, end })
    }
}

/// An event made from a span, not yet numbered.
struct Made {
    pending: Pending,
    /// A `delivered` from a receive or process span: one half of a pair.
    delivery: bool,
}

fn delivery_key(p: &Pending) -> DeliveryKey {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let e = &p.event;
    let digest = |salt: u8| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        (&e.run_id, &e.scenario, &e.actor, p.incarnation, &p.instance).hash(&mut h);
        (&e.event_id, e.attempt).hash(&mut h);
        h.finish()
    };
    (digest(0), digest(1))
}

/// `broker_seq`: `outbox.broker_seq` (a number or a Redis Stream entry id), else a Kafka offset,
/// else `messaging.message.id` when it is a Redis Stream entry id.
fn broker_seq(attrs: &Attrs) -> Result<Option<u64>, String> {
    if let Some(v) = attrs.value(key::BROKER_SEQ) {
        return position(key::BROKER_SEQ, v).map(Some);
    }
    for k in key::BROKER_SEQ_FALLBACKS {
        if let Some(n) = attrs.integer(k)? {
            return Ok(Some(n));
        }
    }
    match attrs.text(key::MESSAGE_ID) {
        Some(id) if redis_entry_id(&id).is_some() => {
            let position: BrokerPosition = id
                .parse()
                .map_err(|e| format!("attribute `{}`: {e}", key::MESSAGE_ID))?;
            Ok(Some(position.0))
        }
        _ => Ok(None),
    }
}

/// A broker position attribute: an integer, or a string holding a number or an entry id.
fn position(k: &str, v: &Value) -> Result<u64, String> {
    match v {
        Value::Int(n) => {
            u64::try_from(*n).map_err(|_| format!("attribute `{k}` is out of range: {n}"))
        }
        Value::String(s) => s
            .parse::<BrokerPosition>()
            .map(|p| p.0)
            .map_err(|e| format!("attribute `{k}`: {e}")),
        other => Err(format!(
            "attribute `{k}` must be an integer, found {other:?}"
        )),
    }
}

/// The attributes an event sees, looked up in order (own, then its span's or resource's, ...).
struct Attrs<'a>([&'a [Attribute]; 3]);

impl Attrs<'_> {
    fn value(&self, k: &str) -> Option<&Value> {
        self.0
            .iter()
            .find_map(|layer| layer.iter().find(|kv| kv.key == k))
            .map(|kv| &kv.value)
    }

    fn text(&self, k: &str) -> Option<Cow<'_, str>> {
        self.value(k).and_then(Value::text)
    }

    /// An integer attribute that must fit `T`: an `intValue`, or a string of decimal digits.
    fn integer<T: TryFrom<i128>>(&self, k: &str) -> Result<Option<T>, String> {
        let v: i128 = match self.value(k) {
            None => return Ok(None),
            Some(Value::Int(n)) => i128::from(*n),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| format!("attribute `{k}` must be an integer, found `{s}`"))?,
            Some(other) => {
                let shown = other
                    .text()
                    .map_or_else(|| "a value of another type".into(), |t| format!("`{t}`"));
                return Err(format!("attribute `{k}` must be an integer, found {shown}"));
            }
        };
        T::try_from(v)
            .map(Some)
            .map_err(|_| format!("attribute `{k}` is out of range: {v}"))
    }
}
