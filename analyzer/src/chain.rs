//! The chain of one task, event or violation: the rows that carry it from publication to ACK
//! (publish attempts and their ACKs or losses, marks, deliveries and redeliveries, commits,
//! conflicts, suppressions, external calls, ACKs), plus the crashes and restarts of the actors
//! that took part. A chain is data; `crate::render` lays it out and draws it.

use std::collections::BTreeSet;

use outbox_trace::{Event, Kind};

use crate::check::Verdict;
use crate::explain;
use crate::scene::{Scene, Scenes};

/// What to draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// Every row of this `task_id`.
    Task(String),
    /// Every row of this `event_id`.
    Event(String),
    /// The witness of the N-th violation (1-based, in `analyzer check` order).
    Violation(usize),
    /// The task with the most retries, redeliveries, suppressions and crashes.
    MostEventful,
}

/// Why no chain could be selected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// No scene has the requested scenario.
    #[error("no scenario `{0}` in the trace")]
    NoScenario(String),
    /// The task or event occurs in several scenarios; `--scenario` must pick one.
    #[error("`{what}` occurs in {count} scenarios ({names}); choose one with --scenario")]
    Ambiguous {
        /// The task or event.
        what: String,
        /// How many scenes.
        count: usize,
        /// Their names.
        names: String,
    },
    /// No row carries the task or event.
    #[error("no row carries {0}")]
    NotFound(String),
    /// There are fewer violations.
    #[error("violation {wanted} does not exist: the check found {found} violation(s)")]
    NoViolation {
        /// The requested number.
        wanted: usize,
        /// How many there are.
        found: usize,
    },
    /// The scene has no task at all.
    #[error("scenario `{0}` has no task to draw")]
    NoTask(String),
}

/// A selected chain: which scene, the rows in `seq` order, and the rows to highlight.
#[derive(Debug, Clone)]
pub struct Chain<'a> {
    /// The scene the rows come from.
    pub scene: &'a Scene,
    /// A one-line title.
    pub title: String,
    /// The rows, in `seq` order.
    pub rows: Vec<&'a Event>,
    /// `seq`s to mark (a violation's witness).
    pub marked: BTreeSet<u64>,
    /// The violation's explanation, when the chain is a witness.
    pub note: Option<String>,
}

/// A violation found by the checks, numbered as `analyzer chain --violation` counts them.
#[derive(Debug, Clone)]
pub struct NumberedViolation {
    /// 1-based number.
    pub number: usize,
    /// Index into [`Scenes::scenes`].
    pub scene: usize,
    /// The invariant id.
    pub invariant: &'static str,
    /// The event concerned.
    pub event: Option<String>,
    /// The task concerned.
    pub task: Option<String>,
    /// The witness rows' `seq`s.
    pub witness: Vec<u64>,
    /// The explanation.
    pub text: String,
}

/// Every kept violation example, numbered 1.. in scenario, invariant and example order.
pub fn violations(scenes: &Scenes) -> Vec<NumberedViolation> {
    let loaded = &scenes.report.loaded;
    let mut out = Vec::new();
    for (i, s) in scenes.report.scenarios.iter().enumerate() {
        let h = &loaded.histories[s.history];
        for o in s.outcomes.iter().filter(|o| o.verdict == Verdict::Fail) {
            for v in &o.violations {
                out.push(NumberedViolation {
                    number: out.len() + 1,
                    scene: i,
                    invariant: o.invariant.id(),
                    event: loaded.names.name_opt(v.event).map(String::from),
                    task: loaded.names.name_opt(v.task).map(String::from),
                    witness: v.witness.iter().map(|&at| h.rows[at].seq).collect(),
                    text: explain::violation(v, h, &loaded.names),
                });
            }
        }
    }
    out
}

/// Selects a chain from `scenes`, in `scenario` when given.
pub fn select<'a>(
    scenes: &'a Scenes,
    scenario: Option<&str>,
    selector: &Selector,
) -> Result<Chain<'a>, ChainError> {
    let candidates = scenes.select(scenario);
    if candidates.is_empty() {
        return Err(ChainError::NoScenario(scenario.unwrap_or("").to_string()));
    }
    match selector {
        Selector::Task(t) => {
            let chain = by_key(&candidates, &format!("task {t}"), |e| {
                e.task_id.as_deref() == Some(t.as_str())
            })?;
            Ok(task_chain(chain.scene, t))
        }
        Selector::Event(id) => by_key(&candidates, &format!("event {id}"), |e| {
            e.event_id.as_deref() == Some(id.as_str())
        }),
        Selector::MostEventful => {
            let scene = candidates[0];
            let task = most_eventful(scene).ok_or(ChainError::NoTask(scene.scenario.clone()))?;
            Ok(task_chain(scene, &task))
        }
        Selector::Violation(n) => {
            let all: Vec<NumberedViolation> = violations(scenes)
                .into_iter()
                .filter(|v| scenario.is_none_or(|s| scenes.scenes[v.scene].scenario == s))
                .collect();
            let v = all.get(n.wrapping_sub(1)).ok_or(ChainError::NoViolation {
                wanted: *n,
                found: all.len(),
            })?;
            let scene = &scenes.scenes[v.scene];
            let mut chain = match (&v.event, &v.task) {
                (Some(e), _) => gather(scene, |r| r.event_id.as_deref() == Some(e.as_str())),
                (None, Some(t)) => gather(scene, |r| r.task_id.as_deref() == Some(t.as_str())),
                (None, None) => Vec::new(),
            };
            for seq in &v.witness {
                if let Some(r) = scene.by_seq(*seq) {
                    chain.push(r);
                }
            }
            chain.sort_by_key(|r| r.seq);
            chain.dedup_by_key(|r| r.seq);
            let about = v.event.as_deref().or(v.task.as_deref()).unwrap_or("run");
            Ok(Chain {
                scene,
                title: format!(
                    "{} · violation {}: {} · {about}",
                    scene.scenario, v.number, v.invariant
                ),
                rows: with_lives(scene, chain),
                marked: v.witness.iter().copied().collect(),
                note: Some(v.text.clone()),
            })
        }
    }
}

fn by_key<'a>(
    candidates: &[&'a Scene],
    what: &str,
    pick: impl Fn(&Event) -> bool + Copy,
) -> Result<Chain<'a>, ChainError> {
    let hits: Vec<&&Scene> = candidates
        .iter()
        .filter(|s| s.events.iter().any(pick))
        .collect();
    match hits.as_slice() {
        [] => Err(ChainError::NotFound(what.to_string())),
        [scene] => Ok(Chain {
            scene,
            title: format!("{} · {what}", scene.scenario),
            rows: with_lives(scene, gather(scene, pick)),
            marked: BTreeSet::new(),
            note: None,
        }),
        many => Err(ChainError::Ambiguous {
            what: what.to_string(),
            count: many.len(),
            names: many
                .iter()
                .map(|s| s.label(false))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The chain of `task` in `scene`.
pub fn task_chain<'a>(scene: &'a Scene, task: &str) -> Chain<'a> {
    let pick = |e: &Event| e.task_id.as_deref() == Some(task);
    // Rows of the task's events that lack task_id (a foreign producer's) belong to it too.
    let events: BTreeSet<&str> = scene
        .events
        .iter()
        .filter(|e| pick(e))
        .filter_map(|e| e.event_id.as_deref())
        .collect();
    let rows = gather(scene, |e| {
        pick(e) || e.event_id.as_deref().is_some_and(|id| events.contains(id))
    });
    Chain {
        scene,
        title: format!("{} · task {task}", scene.scenario),
        rows: with_lives(scene, rows),
        marked: BTreeSet::new(),
        note: None,
    }
}

fn gather(scene: &Scene, pick: impl Fn(&Event) -> bool) -> Vec<&Event> {
    scene
        .events
        .iter()
        .filter(|e| pick(e) && !matches!(e.kind, Kind::Observed | Kind::RunStart | Kind::RunEnd))
        .collect()
}

/// Adds the crash and the restart of every actor incarnation that appears in `rows`, so each
/// segment of a lane has its start and its end.
fn with_lives<'a>(scene: &'a Scene, mut rows: Vec<&'a Event>) -> Vec<&'a Event> {
    let lives: BTreeSet<(&str, u32)> = rows
        .iter()
        .map(|r| (r.actor.as_str(), r.incarnation))
        .collect();
    rows.extend(scene.events.iter().filter(|e| {
        matches!(e.kind, Kind::Crash | Kind::Restart)
            && lives.contains(&(e.actor.as_str(), e.incarnation))
    }));
    rows.sort_by_key(|r| r.seq);
    rows.dedup_by_key(|r| r.seq);
    rows
}

/// How eventful a task was: retries, losses, redeliveries, suppressions, conflicts, crashes.
fn score(scene: &Scene, task: &str) -> usize {
    let chain = task_chain(scene, task);
    chain
        .rows
        .iter()
        .map(|r| match r.kind {
            Kind::Redelivered | Kind::DuplicateSuppressed | Kind::Crash => 3,
            Kind::PublishUnacked | Kind::PublishFailed | Kind::CommitConflict => 3,
            Kind::ExternalReplayed => 2,
            Kind::PublishAttempt if r.attempt.unwrap_or(1) > 1 => 2,
            _ => 0,
        })
        .sum::<usize>()
        * 1000
        + chain.rows.len()
}

/// The task whose chain has the most retries, redeliveries, suppressions and crashes; the first
/// accepted among equals.
pub fn most_eventful(scene: &Scene) -> Option<String> {
    let mut tasks: Vec<&str> = Vec::new();
    for e in &scene.events {
        if let Some(t) = e.task_id.as_deref() {
            if !tasks.contains(&t) {
                tasks.push(t);
            }
        }
    }
    let mut best: Option<(usize, &str)> = None;
    for t in tasks {
        let s = score(scene, t);
        if best.is_none_or(|(b, _)| s > b) {
            best = Some((s, t));
        }
    }
    best.map(|(_, t)| t.to_string())
}
