//! The rules applied to what a proxy heard: each fact a rule matches gives a step of the rule's
//! kind with the columns it maps, and the columns the wire itself carries (`store_rev`,
//! `attempt`, `broker_seq`); a fact that matches but lacks an id the kind needs gives the reason
//! instead, to be counted as a refused step is.

use std::collections::HashMap;

use outbox_trace::detail::Note;
use outbox_trace::step::MissingFields;
use outbox_trace::{Event, Kind, Step};

use super::rules::{On, Rule, Steps};
use super::value::shaped;
use crate::wire::heard::{Heard, Message, Statement};

/// The most distinct events whose publishes one reading counts (past it, `attempt` is left
/// out rather than the memory grown).
const COUNTED_AT_MOST: usize = 1 << 20;

/// What one fact gave: a step, or the ids a matching fact lacked (counted as a refused span's
/// are, in `run_end.detail.refused`).
pub type Found = Result<Step, MissingFields>;

/// One scenario's reading of its proxies: the rules, and the numbers the wire gives in order.
#[derive(Debug)]
pub struct Reading {
    steps: Steps,
    /// The last `store_rev` given: the commits the proxies saw answered, numbered in that order.
    store_rev: i64,
    /// Publishes of one event by one process life: `(actor, incarnation, event_id)`.
    publishes: HashMap<(String, u32, String), u32>,
}

impl Reading {
    /// A reading by `steps`, numbering from 1.
    pub fn new(steps: Steps) -> Reading {
        Reading {
            steps,
            store_rev: 0,
            publishes: HashMap::new(),
        }
    }

    /// The steps `heard` gives, heard on `service` by the life `incarnation` of `actor`.
    pub fn read(
        &mut self,
        service: &str,
        actor: &str,
        incarnation: u32,
        heard: &Heard,
    ) -> Vec<Found> {
        let rules: Vec<Rule> = self
            .steps
            .rules()
            .iter()
            .filter(|r| r.service == service)
            .cloned()
            .collect();
        if rules.is_empty() {
            return Vec::new();
        }
        match heard {
            Heard::Committed(statements) => self.committed(&rules, statements),
            Heard::Published(m) => self.message(&rules, Kind::PublishAttempt, m, |e, me| {
                e.attempt = me.count(actor, incarnation, e.event_id.as_deref(), true);
            }),
            Heard::PubAcked { publish, seq } => {
                self.message(&rules, Kind::PublishAcked, publish, |e, me| {
                    e.attempt = me.count(actor, incarnation, e.event_id.as_deref(), false);
                    e.broker_seq = Some(*seq);
                })
            }
            Heard::Delivered(d) => self.message(&rules, Kind::Delivered, &d.message, |e, _| {
                if d.delivered > 1 {
                    e.kind = Kind::Redelivered;
                }
                e.attempt = Some(d.delivered);
                e.broker_seq = Some(d.stream_seq);
            }),
            Heard::Acked(d) => self.message(&rules, Kind::Acked, &d.message, |e, _| {
                e.broker_seq = Some(d.stream_seq);
            }),
        }
    }

    /// The steps of a committed transaction: one `store_rev` for all of them. A transaction that
    /// gives an effect for an event gives no suppression of it.
    fn committed(&mut self, rules: &[Rule], statements: &[Statement]) -> Vec<Found> {
        let shaped = shaped(statements);
        // Each rule with each statement it matches: a batch gives a step per statement.
        let matched: Vec<(&Rule, usize)> = rules
            .iter()
            .flat_map(|rule| {
                shaped
                    .iter()
                    .enumerate()
                    .filter(|(_, (st, sh))| match &rule.on {
                        On::Commit { target, rows } => {
                            sh.target.as_ref() == Some(target)
                                && rows.map_or(st.rows() >= 1, |n| st.rows() == n)
                        }
                        On::Subject(_) => false,
                    })
                    .map(move |(i, _)| (rule, i))
            })
            .collect();
        if matched.is_empty() {
            return Vec::new();
        }
        self.store_rev += 1;
        let mut events: Vec<Event> = Vec::new();
        for (rule, at) in matched {
            let mut event = Event::new(rule.kind);
            for (column, reference) in &rule.columns {
                set(&mut event, column, reference.in_statements(&shaped, at));
            }
            event.store_rev = Some(self.store_rev);
            // One step of a kind per event and transaction, whichever rules matched it.
            let again = events
                .iter()
                .any(|e| e.kind == event.kind && e.event_id == event.event_id);
            if !again {
                events.push(event);
            }
        }
        let effects: Vec<Option<String>> = events
            .iter()
            .filter(|e| e.kind == Kind::EffectCommitted)
            .map(|e| e.event_id.clone())
            .collect();
        events.retain(|e| e.kind != Kind::DuplicateSuppressed || !effects.contains(&e.event_id));
        events.into_iter().map(step).collect()
    }

    /// The steps of a NATS message for the rules of `kind` on its subject; `fill` adds what the
    /// wire carries.
    fn message(
        &mut self,
        rules: &[Rule],
        kind: Kind,
        message: &Message,
        fill: impl Fn(&mut Event, &mut Reading),
    ) -> Vec<Found> {
        let mut found = Vec::new();
        for rule in rules {
            let matches = rule.kind == kind && rule.on == On::Subject(message.subject.clone());
            if !matches {
                continue;
            }
            let mut event = Event::new(kind);
            for (column, reference) in &rule.columns {
                set(&mut event, column, reference.in_message(message));
            }
            fill(&mut event, self);
            found.push(step(event));
        }
        found
    }

    /// The publish count of `event_id` by this life: one more for a publish (`add`), the last
    /// one for its ACK.
    fn count(
        &mut self,
        actor: &str,
        incarnation: u32,
        event_id: Option<&str>,
        add: bool,
    ) -> Option<u32> {
        let key = (actor.to_string(), incarnation, event_id?.to_string());
        if !self.publishes.contains_key(&key) && (!add || self.publishes.len() >= COUNTED_AT_MOST) {
            return None;
        }
        let n = self.publishes.entry(key).or_insert(0);
        if add {
            *n += 1;
        }
        Some(*n)
    }
}

/// Sets the mapped `column` of `event` (a number column from a value that reads as one).
fn set(event: &mut Event, column: &str, value: Option<String>) {
    let Some(value) = value else { return };
    match column {
        "event_id" => event.event_id = Some(value),
        "task_id" => event.task_id = Some(value),
        "aggregate_id" => event.aggregate_id = Some(value),
        "counter_key" => event.counter_key = Some(value),
        "aggregate_seq" => event.aggregate_seq = value.trim().parse().ok(),
        "amount" => event.amount = value.trim().parse().ok(),
        "counter" => event.counter = value.trim().parse().ok(),
        _ => {}
    }
}

/// The step of a filled-in event, said to be read from the wire; or which id it lacks.
fn step(event: Event) -> Found {
    let mut step = Step::try_from(&event)?;
    if let Some(note) = step.note_mut() {
        *note = Note {
            source: Some("wire".to_string()),
            ..Note::default()
        };
    }
    Ok(step)
}
