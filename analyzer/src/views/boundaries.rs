//! The atomic boundaries a recording shows: rows with equal `store_rev` were committed in one
//! transaction, so grouping by `store_rev` tells which steps the create transaction and the
//! complete transaction held, and which steps (the broker's publish ACK, the consumer ACK) sat
//! outside every transaction. A broken protocol that splits a transaction shows it here.

use std::collections::BTreeMap;

use outbox_trace::Kind;
use serde::Serialize;

use crate::model::intern::{Id, IdTable};
use crate::views::scene::{RowRef, Scene};

/// What a transaction did, by the kinds it reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Task (and idempotency key) and/or outbox record.
    Create,
    /// The outbox record marked published.
    Mark,
    /// Dedup key + result + completed task + counter.
    Complete,
    /// Anything else carrying a `store_rev`.
    Other,
}

impl Role {
    /// A short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Create => "create",
            Role::Mark => "mark",
            Role::Complete => "complete",
            Role::Other => "other",
        }
    }

    fn of(kinds: &[Kind]) -> Role {
        if kinds
            .iter()
            .any(|k| matches!(k, Kind::TaskAccepted | Kind::IntentRecorded))
        {
            Role::Create
        } else if kinds.contains(&Kind::EffectCommitted) {
            Role::Complete
        } else if kinds.contains(&Kind::OutboxMarked) {
            Role::Mark
        } else {
            Role::Other
        }
    }
}

/// How many transactions held exactly this set of kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Which kind of actor takes part (api, relay, broker, worker, receiver): one box each.
    pub role: Role,
    /// The kinds reported with one `store_rev`, sorted.
    pub kinds: Vec<Kind>,
    /// How many transactions.
    pub count: usize,
}

impl Shape {
    /// The kinds, joined: `task_accepted + intent_recorded`.
    pub fn kinds_text(&self) -> String {
        let names: Vec<&str> = self.kinds.iter().map(|k| k.as_str()).collect();
        names.join(" + ")
    }
}

/// One step of the representative task, inside a transaction or outside all of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The row's kind.
    pub kind: Kind,
    /// The row's `seq`.
    pub seq: u64,
    /// The transaction (`store_rev`), or `None` outside any.
    pub rev: Option<i64>,
    /// Who did it.
    pub actor: String,
    /// The broker position, for ACKs.
    pub broker_seq: Option<u64>,
}

/// The boundaries of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Boundaries {
    /// The scenario drawn, for the title.
    pub scenario: String,
    /// The protocol variant, when recorded.
    pub protocol: Option<String>,
    /// Every distinct transaction shape with its count, by role then kinds.
    pub shapes: Vec<Shape>,
    /// The task whose steps are drawn (the one that shows the most transactions in its create).
    pub task: Option<String>,
    /// Its steps in protocol order.
    pub steps: Vec<Step>,
    /// Accepted tasks whose event was never recorded as an intent.
    pub tasks_without_intent: usize,
    /// `commit_conflict` rows (revision races the counter lost and retried).
    pub conflicts: usize,
}

impl Boundaries {
    /// Whether every create transaction held both the task and its intent.
    pub fn create_is_atomic(&self) -> bool {
        let creates: Vec<&Shape> = self
            .shapes
            .iter()
            .filter(|s| s.role == Role::Create)
            .collect();
        !creates.is_empty()
            && self.tasks_without_intent == 0
            && creates.iter().all(|s| {
                s.kinds.contains(&Kind::TaskAccepted) && s.kinds.contains(&Kind::IntentRecorded)
            })
    }
}

/// The kinds drawn for a task, in protocol order.
const STEPS: &[Kind] = &[
    Kind::TaskAccepted,
    Kind::IntentRecorded,
    Kind::PublishAcked,
    Kind::OutboxMarked,
    Kind::Delivered,
    Kind::EffectCommitted,
    Kind::Acked,
];

/// Derives the boundaries of `scene`, in one pass over its rows plus one lookup per task.
pub fn derive(scene: &Scene) -> Boundaries {
    let mut by_rev: BTreeMap<i64, Vec<Kind>> = BTreeMap::new();
    for r in &scene.history.rows {
        if let Some(rev) = r.store_rev() {
            by_rev.entry(rev).or_default().push(r.kind);
        }
    }
    let mut counted: BTreeMap<(Role, Vec<Kind>), usize> = BTreeMap::new();
    for kinds in by_rev.values_mut() {
        kinds.sort();
        kinds.dedup();
        *counted.entry((Role::of(kinds), kinds.clone())).or_default() += 1;
    }
    let shapes = counted
        .into_iter()
        .map(|((role, kinds), count)| Shape { role, kinds, count })
        .collect();
    let mut intents = IdTable::new(scene.history.id_bound(), false);
    for r in scene.of(Kind::IntentRecorded) {
        if let Some(e) = r.row.event {
            *intents.get_mut(e) = true;
        }
    }
    let accepted: Vec<RowRef> = scene.of(Kind::TaskAccepted).collect();
    let tasks_without_intent = accepted
        .iter()
        .filter(|a| a.row.event.is_none_or(|e| !*intents.get(e)))
        .count();
    let task = representative(scene, &accepted);
    let steps = task.map(|t| task_steps(scene, t)).unwrap_or_default();
    Boundaries {
        scenario: scene.scenario.to_string(),
        protocol: scene.protocol.map(String::from),
        shapes,
        task: task.map(|t| scene.names.name(t).to_string()),
        steps,
        tasks_without_intent,
        conflicts: scene.history.count(Kind::CommitConflict),
    }
}

/// The task that reaches a commit and whose create shows the most distinct transactions.
fn representative(scene: &Scene, accepted: &[RowRef]) -> Option<Id> {
    let mut best: Option<(usize, Id)> = None;
    let mut seen = IdTable::new(scene.history.id_bound(), false);
    for a in accepted {
        let Some(task) = a.row.task else {
            continue;
        };
        if std::mem::replace(seen.get_mut(task), true) {
            continue;
        }
        let steps = task_steps(scene, task);
        let has = |k: Kind| steps.iter().any(|s| s.kind == k);
        let creates: std::collections::BTreeSet<i64> = steps
            .iter()
            .filter(|s| matches!(s.kind, Kind::TaskAccepted | Kind::IntentRecorded))
            .filter_map(|s| s.rev)
            .collect();
        let score = creates.len() * 10 + usize::from(has(Kind::EffectCommitted)) * 5 + steps.len();
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, task));
        }
    }
    best.map(|(_, t)| t)
}

/// The first row of each of [`STEPS`] for `task` (found by task or by its event).
fn task_steps(scene: &Scene, task: Id) -> Vec<Step> {
    let index = scene.history.indices();
    let rows = index.task_rows(&scene.history.rows, task);
    STEPS
        .iter()
        .filter_map(|k| {
            rows.iter()
                .map(|&at| scene.row(at as usize))
                .find(|r| r.kind() == *k)
        })
        .map(|r| Step {
            kind: r.kind(),
            seq: r.seq(),
            rev: r.row.store_rev(),
            actor: r.actor().to_string(),
            broker_seq: r.row.broker_seq(),
        })
        .collect()
}

/// What a step stands for, in the lab's words.
pub fn meaning(kind: Kind) -> &'static str {
    match kind {
        Kind::TaskAccepted => "task + idempotency key",
        Kind::IntentRecorded => "outbox record",
        Kind::PublishAcked => "broker's publish ACK",
        Kind::OutboxMarked => "outbox record marked published",
        Kind::Delivered => "delivery to the worker",
        Kind::EffectCommitted => "dedup key + result + task done + counter",
        Kind::Acked => "consumer ACK",
        _ => "",
    }
}

/// Consecutive steps of one transaction together; each step outside a transaction alone.
pub fn groups(steps: &[Step]) -> Vec<&[Step]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=steps.len() {
        let split = i == steps.len() || steps[i].rev.is_none() || steps[i].rev != steps[start].rev;
        if split {
            out.push(&steps[start..i]);
            start = i;
        }
    }
    out
}
