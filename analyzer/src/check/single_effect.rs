//! `single-effect`: no `event_id` and no `task_id` has more than one `effect_committed`.
//!
//! Events are counted in one pass; the commits (and the deliveries that led to them) are gathered
//! in a second pass only for the examples kept.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Skips, Violation};
use crate::history::History;
use crate::intern::{FastMap, Id, IdTable};

#[derive(Clone, Copy, Default)]
struct Tally {
    count: u32,
    /// The second commit: where the duplicate shows.
    second: u32,
    first_event: Option<Id>,
    mixed_events: bool,
}

fn tally(table: &mut IdTable<Tally>, key: Id, at: u32, event: Option<Id>) {
    let t = table.get_mut(key);
    t.count += 1;
    match t.count {
        1 => t.first_event = event,
        2 => t.second = at,
        _ => {}
    }
    if t.first_event != event {
        t.mixed_events = true;
    }
}

/// Decides `single-effect`.
pub fn check(h: &History) -> Outcome {
    let mut skips = Skips::default();
    let mut by_event = IdTable::new(h.id_bound(), Tally::default());
    let mut by_task = IdTable::new(h.id_bound(), Tally::default());
    for (at, r) in h.of(Kind::EffectCommitted) {
        let at = row32(at);
        if let Some(e) = r.event {
            tally(&mut by_event, e, at, r.event);
        }
        if let Some(t) = r.task {
            tally(&mut by_task, t, at, r.event);
        }
        skips.usable(r, &[Field::EventId, Field::TaskId]);
    }
    let mut found: Vec<(usize, (Id, bool))> = Vec::new();
    for (e, t) in by_event.iter() {
        if t.count > 1 {
            found.push((t.second as usize, (e, false)));
        }
    }
    // A task whose commits all share one event is already reported under that event.
    for (task, t) in by_task.iter() {
        if t.count > 1 && t.mixed_events {
            found.push((t.second as usize, (task, true)));
        }
    }
    let (kept, more) = earliest(found);
    let violations = kept
        .into_iter()
        .map(|(key, by_task)| witness(h, key, by_task))
        .collect();
    Outcome::judge(Invariant::SingleEffect, violations, more, skips.reason())
}

/// The commits for `key` and, for each, the latest delivery of its event to the same actor
/// incarnation before it.
fn witness(h: &History, key: Id, by_task: bool) -> Violation {
    let mut last_delivery: FastMap<(Id, u32, Id), usize> = FastMap::default();
    let mut commits = Vec::new();
    let mut rows = Vec::new();
    let mut task = None;
    let mut event = None;
    for (at, r) in h.rows.iter().enumerate() {
        let Some(e) = r.event else { continue };
        if r.is_delivery() {
            last_delivery.insert((r.actor, r.incarnation, e), at);
            continue;
        }
        if r.kind != Kind::EffectCommitted {
            continue;
        }
        let matches = if by_task {
            r.task == Some(key)
        } else {
            e == key
        };
        if matches {
            task = task.or(r.task);
            event = event.or(Some(e));
            commits.push(at);
            rows.push(at);
            if let Some(&d) = last_delivery.get(&(r.actor, r.incarnation, e)) {
                rows.push(d);
            }
        }
    }
    let event = if by_task { None } else { event };
    Violation::new(
        event,
        task,
        Finding::MultipleEffects { by_task, commits },
        rows,
    )
}
