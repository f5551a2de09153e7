//! `analyzer diff`: where two runs part ways. The chains of the two runs are aligned task by task
//! (by `task_id`, or by acceptance order when the ids differ) and compared lane by lane (what the
//! API, the relay, the worker and the receiver did, in their own order), so timing between actors
//! does not count as a difference. The first diverging step is the earliest in the second run.

use outbox_trace::Kind;
use serde::Serialize;

use crate::model::intern::{FastMap, Id, IdSet};
use crate::views::chain::task_rows;
use crate::views::scene::{role, RowRef, Scene};

/// One side of a divergence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Side {
    /// The row's `seq`.
    pub seq: u64,
    /// What the run did there: the two sides' kinds differ, or one side has no step.
    pub kind: Kind,
    /// The actor that recorded it (its role is the lane).
    pub actor: String,
}

/// The first point where the two chains of one task differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// The task in the first run.
    pub task_a: String,
    /// The task in the second run.
    pub task_b: String,
    /// The lane (actor role) where they differ.
    pub lane: String,
    /// The step both lanes took last before differing.
    pub after: Option<Kind>,
    /// What the first run did there (`None`: its lane ended).
    pub a: Option<Side>,
    /// What the second run did there.
    pub b: Option<Side>,
}

impl Divergence {
    /// A sentence naming the divergence.
    pub fn describe(&self) -> String {
        let side = |s: &Option<Side>| match s {
            Some(s) => format!("{} (seq {})", s.kind, s.seq),
            None => "nothing more".into(),
        };
        let after = self
            .after
            .map_or_else(|| "at its start".into(), |k| format!("after {k}"));
        let mut line = format!(
            "task {}: the {} lane parts {after}: first run {}, second run {}",
            self.task_a,
            self.lane,
            side(&self.a),
            side(&self.b)
        );
        let kinds = (
            self.a.as_ref().map(|s| s.kind),
            self.b.as_ref().map(|s| s.kind),
        );
        let why = match kinds {
            (Some(Kind::EffectCommitted | Kind::DuplicateSuppressed), Some(Kind::Acked)) => {
                " -- the ACK came before the commit"
            }
            (Some(Kind::DuplicateSuppressed), Some(Kind::EffectCommitted)) => {
                " -- a second effect where the duplicate was suppressed"
            }
            (Some(Kind::EffectCommitted), Some(Kind::DuplicateSuppressed)) => {
                " -- a suppression where the first run took effect"
            }
            _ => "",
        };
        line.push_str(why);
        line
    }
}

/// The per-task results of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// The scenario both runs have, compared task by task.
    pub scenario: String,
    /// Tasks aligned by id (true) or by acceptance order (false).
    pub by_id: bool,
    /// Each aligned pair's first divergence, if any.
    pub tasks: Vec<(String, String, Option<Divergence>)>,
    /// The earliest divergence in the second run.
    pub first: Option<Divergence>,
}

/// A task of one run, by id and by name.
type Task<'a> = (Id, &'a str);

/// The scene's accepted tasks, in order of first acceptance.
fn tasks<'a>(scene: &Scene<'a>) -> Vec<Task<'a>> {
    let mut seen = IdSet::default();
    scene
        .of(Kind::TaskAccepted)
        .filter_map(|r| Some((r.row.task?, r.task_id()?)))
        .filter(|&(t, _)| seen.insert(t))
        .collect()
}

/// The step as compared: its kind, and for a crash its point.
fn key<'a>(e: &RowRef<'a>) -> (Kind, Option<&'a str>) {
    match e.kind() {
        Kind::Crash => (Kind::Crash, Some(e.crash_point())),
        k => (k, None),
    }
}

/// A chain's rows by lane (actor role), lanes in order of first appearance.
fn lanes<'a>(rows: &[RowRef<'a>]) -> Vec<(&'a str, Vec<RowRef<'a>>)> {
    let mut out: Vec<(&'a str, Vec<RowRef<'a>>)> = Vec::new();
    for e in rows.iter().filter(|e| e.kind() != Kind::Restart) {
        let r = role(e.actor());
        match out.iter_mut().find(|(l, _)| *l == r) {
            Some((_, v)) => v.push(*e),
            None => out.push((r, vec![*e])),
        }
    }
    out
}

fn side(e: Option<&RowRef>) -> Option<Side> {
    e.map(|e| Side {
        seq: e.seq(),
        kind: e.kind(),
        actor: format!("{}#{}", e.actor(), e.incarnation()),
    })
}

/// The first divergence between the rows of two chains ([`task_rows`]), lane by lane, earliest
/// in the second run.
pub fn first_divergence(
    a: &[RowRef],
    b: &[RowRef],
    task_a: &str,
    task_b: &str,
) -> Option<Divergence> {
    let (la, lb) = (lanes(a), lanes(b));
    let mut names: Vec<&str> = la.iter().map(|(n, _)| *n).collect();
    for (n, _) in &lb {
        if !names.contains(n) {
            names.push(n);
        }
    }
    let empty = Vec::new();
    let mut found: Vec<Divergence> = Vec::new();
    for name in names {
        let ra = la
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&empty, |(_, v)| v);
        let rb = lb
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&empty, |(_, v)| v);
        let at = (0..ra.len().max(rb.len()))
            .find(|&i| ra.get(i).map(|e| key(e)) != rb.get(i).map(|e| key(e)));
        if let Some(i) = at {
            found.push(Divergence {
                task_a: task_a.to_string(),
                task_b: task_b.to_string(),
                lane: name.to_string(),
                after: i.checked_sub(1).and_then(|p| ra.get(p)).map(RowRef::kind),
                a: side(ra.get(i)),
                b: side(rb.get(i)),
            });
        }
    }
    found.into_iter().min_by_key(|d| {
        (
            d.b.as_ref().map_or(u64::MAX, |s| s.seq),
            d.a.as_ref().map_or(u64::MAX, |s| s.seq),
        )
    })
}

/// Aligns the tasks of `a` and `b` and finds where each pair parts.
pub fn diff(a: &Scene, b: &Scene) -> Diff {
    let (ta, tb) = (tasks(a), tasks(b));
    let in_b: FastMap<&str, Id> = tb.iter().map(|&(id, name)| (name, id)).collect();
    let by_id = ta.iter().any(|(_, t)| in_b.contains_key(t));
    let pairs: Vec<(Task, Task)> = if by_id {
        ta.iter()
            .filter_map(|&(ia, t)| Some(((ia, t), (*in_b.get(t)?, t))))
            .collect()
    } else {
        ta.iter().copied().zip(tb.iter().copied()).collect()
    };
    let tasks: Vec<(String, String, Option<Divergence>)> = pairs
        .into_iter()
        .map(|((ia, x), (ib, y))| {
            let d = first_divergence(&task_rows(*a, ia), &task_rows(*b, ib), x, y);
            (x.to_string(), y.to_string(), d)
        })
        .collect();
    let first = tasks
        .iter()
        .filter_map(|(_, _, d)| d.clone())
        .min_by_key(|d| d.b.as_ref().map_or(u64::MAX, |s| s.seq));
    Diff {
        scenario: a.scenario.to_string(),
        by_id,
        tasks,
        first,
    }
}
