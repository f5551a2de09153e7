//! The chain of one task, event or violation: the rows that carry it from publication to ACK
//! (publish attempts and their ACKs or losses, marks, deliveries and redeliveries, commits,
//! conflicts, suppressions, external calls, ACKs), plus the crashes and restarts of the actors
//! that took part. A chain is data; `crate::render` lays it out and draws it.

use std::collections::BTreeSet;

use outbox_trace::Kind;

use crate::check::Verdict;
use crate::explain;
use crate::model::intern::Id;
use crate::views::scene::{RowRef, Scene, Scenes};

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
        /// The task or event asked for.
        what: String,
        /// How many scenarios carry it.
        count: usize,
        /// Those scenarios, for the user to pick one.
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
    pub scene: Scene<'a>,
    /// A one-line title.
    pub title: String,
    /// The rows, in `seq` order.
    pub rows: Vec<RowRef<'a>>,
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
    /// Index into [`Scenes::scene`].
    pub scene: usize,
    /// The id of the invariant it breaks, for the chain's title.
    pub invariant: &'static str,
    /// The event it concerns, if any: its rows join the witness in the chain.
    pub event: Option<String>,
    /// The task it concerns, if any.
    pub task: Option<String>,
    /// The witness rows (indices into the scene's rows).
    pub witness: Vec<usize>,
    /// What broke, in the words of `analyzer check`: the chain's note.
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
                    witness: v.witness.clone(),
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
            let scene = one_scene(
                &candidates,
                &format!("task {t}"),
                |s, id| !s.history.indices().by_task.of(id).is_empty(),
                t,
            )?;
            let id = scene
                .id(t)
                .ok_or_else(|| ChainError::NotFound(format!("task {t}")))?;
            Ok(task_chain(scene, id))
        }
        Selector::Event(e) => {
            let what = format!("event {e}");
            let scene = one_scene(
                &candidates,
                &what,
                |s, id| !s.history.indices().by_event.of(id).is_empty(),
                e,
            )?;
            let id = scene
                .id(e)
                .ok_or_else(|| ChainError::NotFound(what.clone()))?;
            let rows = drawable(scene.at(scene.history.indices().by_event.of(id)));
            Ok(Chain {
                scene,
                title: format!("{} · {what}", scene.scenario),
                rows: with_lives(scene, rows),
                marked: BTreeSet::new(),
                note: None,
            })
        }
        Selector::MostEventful => {
            let scene = candidates[0];
            let task = most_eventful(scene)
                .ok_or_else(|| ChainError::NoTask(scene.scenario.to_string()))?;
            Ok(task_chain(scene, task))
        }
        Selector::Violation(n) => {
            let all: Vec<NumberedViolation> = violations(scenes)
                .into_iter()
                .filter(|v| scenario.is_none_or(|s| scenes.scene(v.scene).scenario == s))
                .collect();
            let v = all.get(n.wrapping_sub(1)).ok_or(ChainError::NoViolation {
                wanted: *n,
                found: all.len(),
            })?;
            Ok(violation_chain(scenes, v))
        }
    }
}

/// The witness chain of one numbered violation: the rows of its event (or task), its witness
/// rows marked, and the lives of the actors that took part.
pub fn violation_chain<'a>(scenes: &'a Scenes, v: &NumberedViolation) -> Chain<'a> {
    let scene = scenes.scene(v.scene);
    let index = scene.history.indices();
    let about = match (&v.event, &v.task) {
        (Some(e), _) => scene.id(e).map(|id| index.by_event.of(id)),
        (None, Some(t)) => scene.id(t).map(|id| index.by_task.of(id)),
        (None, None) => None,
    };
    let mut chain = drawable(scene.at(about.unwrap_or(&[])));
    chain.extend(v.witness.iter().map(|&at| scene.row(at)));
    chain.sort_by_key(RowRef::seq);
    chain.dedup_by_key(|r| r.seq());
    let about = v.event.as_deref().or(v.task.as_deref()).unwrap_or("run");
    Chain {
        scene,
        title: format!(
            "{} · violation {}: {} · {about}",
            scene.scenario, v.number, v.invariant
        ),
        rows: with_lives(scene, chain),
        marked: v.witness.iter().map(|&at| scene.row(at).seq()).collect(),
        note: Some(v.text.clone()),
    }
}

/// The one candidate scene in which `name` has rows (`has`), or why there is none or several.
fn one_scene<'a>(
    candidates: &[Scene<'a>],
    what: &str,
    has: impl Fn(&Scene<'a>, Id) -> bool,
    name: &str,
) -> Result<Scene<'a>, ChainError> {
    let hits: Vec<Scene<'a>> = candidates
        .iter()
        .filter(|s| s.id(name).is_some_and(|id| has(s, id)))
        .copied()
        .collect();
    match hits.as_slice() {
        [] => Err(ChainError::NotFound(what.to_string())),
        [scene] => Ok(*scene),
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

/// The chain of `task` in `scene`: its rows, the rows of its events that lack a `task_id` (a
/// foreign producer's), and the lives of the actors that took part.
pub fn task_chain(scene: Scene<'_>, task: Id) -> Chain<'_> {
    Chain {
        scene,
        title: format!("{} · task {}", scene.scenario, scene.names.name(task)),
        rows: task_rows(scene, task),
        marked: BTreeSet::new(),
        note: None,
    }
}

/// The rows of [`task_chain`]: the task's rows with the lives of the actors in them, in `seq`
/// order.
pub fn task_rows(scene: Scene<'_>, task: Id) -> Vec<RowRef<'_>> {
    let index = scene.history.indices();
    let rows = drawable(scene.at(&index.task_rows(&scene.history.rows, task)));
    with_lives(scene, rows)
}

/// Leaves out the rows about the whole scenario rather than one task.
fn drawable(rows: Vec<RowRef<'_>>) -> Vec<RowRef<'_>> {
    rows.into_iter()
        .filter(|r| !matches!(r.kind(), Kind::Observed | Kind::RunStart | Kind::RunEnd))
        .collect()
}

/// Adds the crash and the restart of every actor incarnation that appears in `rows`, so each
/// segment of a lane has its start and its end.
fn with_lives<'a>(scene: Scene<'a>, mut rows: Vec<RowRef<'a>>) -> Vec<RowRef<'a>> {
    let mut lives: Vec<(Id, u32)> = rows
        .iter()
        .map(|r| (r.row.actor, r.incarnation()))
        .collect();
    lives.sort_unstable();
    lives.dedup();
    let index = scene.history.indices();
    for (actor, incarnation) in lives {
        // A life's crash is its last row; its restart its first.
        let life = index.life(actor, incarnation);
        for &at in life.first().into_iter().chain(life.last()) {
            let r = scene.row(at as usize);
            if matches!(r.kind(), Kind::Crash | Kind::Restart) {
                rows.push(r);
            }
        }
    }
    rows.sort_by_key(RowRef::seq);
    rows.dedup_by_key(|r| r.seq());
    rows
}

/// How eventful one row makes a task: retries, losses, redeliveries, suppressions, conflicts,
/// crashes.
fn weight(r: &RowRef<'_>) -> usize {
    match r.kind() {
        Kind::Redelivered | Kind::DuplicateSuppressed | Kind::Crash => 3,
        Kind::PublishUnacked | Kind::PublishFailed | Kind::CommitConflict => 3,
        Kind::ExternalReplayed => 2,
        Kind::PublishAttempt if r.row.attempt().unwrap_or(1) > 1 => 2,
        _ => 0,
    }
}

/// The task whose chain has the most retries, redeliveries, suppressions and crashes; the first
/// to appear among equals. Each task's chain is scored once, from the indices.
pub fn most_eventful(scene: Scene<'_>) -> Option<Id> {
    most_eventful_tasks(scene, 1).first().copied()
}

/// The `k` most eventful tasks, most eventful first (the first to appear among equals). Each
/// task's chain is scored once, from the indices, so the cost is linear in the scene whatever `k`.
pub fn most_eventful_tasks(scene: Scene<'_>, k: usize) -> Vec<Id> {
    let index = scene.history.indices();
    let mut first_seen: Vec<(u32, Id)> = index
        .by_task
        .ids()
        .map(|t| (index.by_task.of(t)[0], t))
        .collect();
    first_seen.sort_unstable();
    // (score, first row) of the best `k` so far, best first.
    let mut best: Vec<(usize, u32, Id)> = Vec::with_capacity(k + 1);
    for (first, t) in first_seen {
        let s = task_chain(scene, t);
        let score = s.rows.iter().map(weight).sum::<usize>() * 1000 + s.rows.len();
        let at = best.partition_point(|&(b, f, _)| b > score || (b == score && f < first));
        if at < k {
            best.insert(at, (score, first, t));
            best.truncate(k);
        }
    }
    best.into_iter().map(|(_, _, t)| t).collect()
}
