//! The rules applied to what a proxy heard: each fact a rule matches gives a step of the rule's
//! kind with the columns it maps, and the columns the wire itself carries (`store_rev` where no
//! rule maps it, `attempt`, `broker_seq`); a fact that matches but lacks an id the kind needs gives the reason
//! instead, to be counted as a refused span is. So does a connection whose traffic passes
//! unread from some point on ([`Heard::Unread`]): each kind a rule reads from that traffic may
//! miss steps, and is counted refused for that reason.

use std::collections::HashMap;

use outbox_trace::detail::Note;
use outbox_trace::step::MissingFields;
use outbox_trace::{Event, Kind, Step};

use super::rules::{On, Rule, Steps, STORE_REV};
use super::value::shaped;
use crate::wire::heard::{Heard, Message, Statement, Ways};

/// The most distinct events whose publishes one reading counts (past it, `attempt` is left
/// out rather than the memory grown).
const COUNTED_AT_MOST: usize = 1 << 20;

/// What one fact gave: a step, or why it gave none where a rule could have matched (counted as
/// a refused span is, in `run_end.detail.refused`).
pub type Found = Result<Step, NoStep>;

/// Why a fact gave no step where a rule could have matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoStep {
    /// It matched, but lacks the ids its kind needs.
    Lacks(MissingFields),
    /// Traffic the rules of `kind` read passes unread, for `why`.
    Unread {
        /// The kind that may miss steps.
        kind: Kind,
        /// Why, in a few words.
        why: &'static str,
    },
}

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
            Heard::Unread { way, why } => unread(&rules, *way, why),
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
            // The wire's order, unless the rule maps a column (then that, or nothing).
            let mapped = rule.columns.iter().any(|(c, _)| c == STORE_REV);
            event.store_rev = (!mapped).then_some(self.store_rev);
            for (column, reference) in &rule.columns {
                set(&mut event, column, reference.in_statements(&shaped, at));
            }
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
        // A mapped store_rev that does not read as a number is left out, not guessed.
        STORE_REV => event.store_rev = value.trim().parse().ok(),
        _ => {}
    }
}

/// Each kind the `rules` read from traffic `way`, once, as missing steps for `why`.
fn unread(rules: &[Rule], way: Ways, why: &'static str) -> Vec<Found> {
    let mut kinds: Vec<Kind> = Vec::new();
    for rule in rules.iter().filter(|r| carried(r).meets(way)) {
        let also = (rule.kind == Kind::Delivered).then_some(Kind::Redelivered);
        for kind in std::iter::once(rule.kind).chain(also) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    let missing = |kind| Err(NoStep::Unread { kind, why });
    kinds.into_iter().map(missing).collect()
}

/// The traffic a rule's facts cross: both ways for a commit (a statement goes, the server
/// commits it, its answer comes back), the process's for a publish or an ACK, the server's for
/// a publish's ACK or a delivery.
fn carried(rule: &Rule) -> Ways {
    match (&rule.on, rule.kind) {
        (On::Commit { .. }, _) => Ways::Both,
        (On::Subject(_), Kind::PublishAttempt | Kind::Acked) => Ways::Requests,
        (On::Subject(_), _) => Ways::Replies,
    }
}

/// The step of a filled-in event, said to be read from the wire; or which id it lacks.
fn step(event: Event) -> Found {
    let mut step = Step::try_from(&event).map_err(NoStep::Lacks)?;
    if let Some(note) = step.note_mut() {
        *note = Note {
            source: Some("wire".to_string()),
            ..Note::default()
        };
    }
    Ok(step)
}
