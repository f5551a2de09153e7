//! The facts an ADR on retention, atomic scope and the shared counter needs, from a recording's
//! scenarios and their atomic boundaries, as Markdown: how long dedup keys must live against
//! redelivery, what each transaction held, and how often the shared counter conflicted.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use outbox_trace::output::escape::markdown;
use outbox_trace::{detail_key, Kind};

use crate::model::intern::{FastMap, IdTable};
use crate::model::row::Position;
use crate::views::boundaries::{self, Boundaries};
use crate::views::scene::Scene;

/// The ADR's facts, as Markdown.
pub fn adr_facts(scenes: &[Scene], bounds: &[Boundaries]) -> String {
    let mut md = String::new();
    retention(&mut md, scenes);
    atomic_scope(&mut md, bounds);
    shared_counter(&mut md, bounds);
    md
}

/// Retention: the broker's AckWait, the redeliveries and the last uses of dedup keys, and whether
/// every key outlived the run.
fn retention(md: &mut String, scenes: &[Scene]) {
    let waits: BTreeSet<i64> = scenes.iter().filter_map(|s| s.ack_wait_ms()).collect();
    let delays: Vec<(i64, &str)> = scenes
        .iter()
        .flat_map(|s| redelivery_delays(s).into_iter().map(|d| (d, s.scenario)))
        .collect();
    let uses: Vec<(i64, &str)> = scenes
        .iter()
        .flat_map(|s| key_uses(s).into_iter().map(|d| (d, s.scenario)))
        .collect();
    let _ = writeln!(md, "### Retention: dedup keys against redelivery\n");
    let waits: Vec<String> = waits.iter().map(|w| format!("{w} ms")).collect();
    let waits = if waits.is_empty() {
        "not recorded".into()
    } else {
        waits.join(", ")
    };
    let _ = writeln!(
        md,
        "- AckWait (`{}.detail.{}`): {waits}.",
        Kind::RunStart,
        detail_key!(RunStart.ack_wait_ms)
    );
    match delays.iter().max() {
        Some((d, s)) => {
            let s = markdown(s);
            let _ = writeln!(
                md,
                "- Longest redelivery delay seen: {d} ms after the delivery (scenario {s}); {} redelivery(ies) in all.",
                delays.len()
            );
        }
        None => {
            let _ = writeln!(md, "- No redelivery was recorded.");
        }
    }
    if let Some((d, s)) = uses.iter().max() {
        let s = markdown(s);
        let _ = writeln!(md, "- Latest use of a dedup key: a suppression {d} ms after the key's commit (scenario {s}).");
    }
    key_lifetimes(md, scenes);
}

/// Whether every dedup key was still there at the end (then how long the shortest-lived one
/// lived), or where keys were gone.
fn key_lifetimes(md: &mut String, scenes: &[Scene]) {
    let mut lost = Vec::new();
    let mut shortest_life: Option<(i64, &str)> = None;
    for s in scenes {
        let effects = s.figures.effects as i64;
        if let Some(keys) = s.figures.dedup_keys {
            if keys < effects {
                lost.push(format!(
                    "{} ({keys} keys for {effects} effects)",
                    markdown(s.scenario)
                ));
            }
        }
        let end = s.of(Kind::Observed).next_back().map(|e| e.ts_ns());
        let last_commit = s.of(Kind::EffectCommitted).map(|e| e.ts_ns()).max();
        if let (Some(end), Some(c)) = (end, last_commit) {
            let life = (end - c) / 1_000_000;
            if shortest_life.is_none_or(|(l, _)| life < l) {
                shortest_life = Some((life, s.scenario));
            }
        }
    }
    if lost.is_empty() {
        if let Some((l, s)) = shortest_life {
            let s = markdown(s);
            let _ = writeln!(md, "- Every dedup key was still present when the observer read the store: keys lived at least {l} ms (shortest, the last key of {s}).");
        }
    } else {
        let _ = writeln!(md, "- Dedup keys were gone by the end in {}: a redelivery after that would take effect again.", lost.join(", "));
    }
}

/// Atomic scope: each transaction's shape, and where the task and its outbox record were split.
fn atomic_scope(md: &mut String, bounds: &[Boundaries]) {
    let _ = writeln!(md, "\n### Atomic scope: what each transaction held\n");
    let mut shapes: BTreeSet<String> = BTreeSet::new();
    for b in bounds {
        for s in &b.shapes {
            shapes.insert(format!(
                "{} transaction: {}",
                s.role.as_str(),
                s.kinds_text()
            ));
        }
    }
    for s in &shapes {
        let _ = writeln!(md, "- {s}");
    }
    let split: Vec<String> = bounds
        .iter()
        .filter(|b| {
            b.shapes.iter().any(|s| s.role == boundaries::Role::Create) && !b.create_is_atomic()
        })
        .map(|b| markdown(&b.scenario))
        .collect();
    if split.is_empty() {
        let _ = writeln!(md, "- The task and its outbox record were committed in one transaction in every scenario; the publish ACK and the consumer ACK sit outside every transaction.");
    } else {
        let _ = writeln!(
            md,
            "- The task and its outbox record were NOT committed together in: {}.",
            split.join(", ")
        );
    }
}

/// The shared counter: its revision conflicts, in all and per scenario.
fn shared_counter(md: &mut String, bounds: &[Boundaries]) {
    let _ = writeln!(md, "\n### The shared counter\n");
    let conflicts: usize = bounds.iter().map(|b| b.conflicts).sum();
    let per: Vec<String> = bounds
        .iter()
        .filter(|b| b.conflicts > 0)
        .map(|b| format!("{} {}", markdown(&b.scenario), b.conflicts))
        .collect();
    let per = if per.is_empty() {
        String::new()
    } else {
        format!(" ({})", per.join(", "))
    };
    let _ = writeln!(md, "- Revision conflicts on the counter (`{}`): {conflicts}{per}. Every commit is one guarded transaction on one key: the counter serialises all workers.", Kind::CommitConflict);
}

/// The delay from the last delivery of a copy to its redelivery, in ms, for every redelivery.
fn redelivery_delays(scene: &Scene) -> Vec<i64> {
    let mut last: FastMap<(crate::model::intern::Id, Option<Position>), i64> = FastMap::default();
    let mut out = Vec::new();
    for r in scene.rows().filter(|r| r.row.is_delivery()) {
        let Some(event) = r.row.event else { continue };
        let copy = (event, r.row.position());
        if r.kind() == Kind::Redelivered {
            if let Some(d) = last.get(&copy) {
                out.push((r.ts_ns() - d) / 1_000_000);
            }
        }
        last.insert(copy, r.ts_ns());
    }
    out
}

/// How long after its commit each dedup key was last needed (a suppression), in ms.
fn key_uses(scene: &Scene) -> Vec<i64> {
    let mut committed = IdTable::new(scene.history.id_bound(), None);
    for c in scene.of(Kind::EffectCommitted) {
        if let Some(e) = c.row.event {
            committed.get_mut(e).get_or_insert(c.ts_ns());
        }
    }
    scene
        .of(Kind::DuplicateSuppressed)
        .filter_map(|e| {
            let c = (*committed.get(e.row.event?))?;
            Some((e.ts_ns() - c) / 1_000_000)
        })
        .collect()
}
