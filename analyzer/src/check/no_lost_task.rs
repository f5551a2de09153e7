//! `no-lost-task` (liveness): when the scenario's `run_end` says `recovered: true`, every task of a
//! `task_accepted` has an `effect_committed`. Without a `run_end`, or when the run did not recover,
//! the verdict is unknown: a run that never recovered proves nothing either way.
//!
//! Tasks with more than one effect are `single-effect`'s business; here only tasks with none are
//! violations.

use outbox_trace::{Field, Kind};

use super::{earliest, row32, Finding, Invariant, Outcome, Reason, Skips, Violation};
use crate::history::History;
use crate::intern::{Id, IdTable};

/// Decides `no-lost-task`.
pub fn check(h: &History) -> Outcome {
    let Some((_, end)) = h.run_end() else {
        return Outcome::unknown(Invariant::NoLostTask, Reason::NoRunEnd);
    };
    match end.and_then(|e| e.recovered) {
        Some(true) => {}
        Some(false) => return Outcome::unknown(Invariant::NoLostTask, Reason::NotRecovered),
        None => return Outcome::unknown(Invariant::NoLostTask, Reason::RecoveredMissing),
    }
    let mut skips = Skips::default();
    // Per task: its first acceptance and whether an effect was seen.
    let mut tasks: IdTable<Option<(u32, bool)>> = IdTable::new(h.id_bound(), None);
    for (at, r) in h.of(Kind::TaskAccepted) {
        if let (true, Some(t)) = (skips.usable(r, &[Field::TaskId]), r.task) {
            tasks.get_mut(t).get_or_insert((row32(at), false));
        }
    }
    for (at, r) in h.of(Kind::EffectCommitted) {
        if let (true, Some(t)) = (skips.usable(r, &[Field::TaskId]), r.task) {
            tasks.get_mut(t).get_or_insert((row32(at), true)).1 = true;
        }
    }
    let found = tasks
        .iter()
        .filter_map(|(t, task)| match *task {
            Some((at, false)) => Some((at as usize, (t, at as usize))),
            _ => None,
        })
        .collect();
    let (kept, more) = earliest(found);
    let violations = kept
        .into_iter()
        .map(|(task, accepted)| witness(h, task, accepted))
        .collect();
    Outcome::judge(Invariant::NoLostTask, violations, more, skips.reason())
}

/// The task's story: acceptance, intent, publishes, deliveries, suppressions and acks of its event,
/// and the crashes of the actor incarnations that handled it.
fn witness(h: &History, task: Id, accepted: usize) -> Violation {
    let event = h.rows[accepted].event;
    let mut rows: Vec<usize> = h
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let ours = r.task == Some(task) || (event.is_some() && r.event == event);
            ours && matches!(
                r.kind,
                Kind::TaskAccepted
                    | Kind::IntentRecorded
                    | Kind::PublishAttempt
                    | Kind::PublishAcked
                    | Kind::PublishUnacked
                    | Kind::PublishFailed
                    | Kind::OutboxMarked
                    | Kind::Delivered
                    | Kind::Redelivered
                    | Kind::DuplicateSuppressed
                    | Kind::CommitConflict
                    | Kind::Acked
            )
        })
        .map(|(at, _)| at)
        .collect();
    let mut handlers: Vec<(Id, u32)> = rows
        .iter()
        .map(|&at| (h.rows[at].actor, h.rows[at].incarnation))
        .collect();
    handlers.sort_unstable();
    handlers.dedup();
    rows.extend(
        h.rows
            .iter()
            .enumerate()
            .skip(accepted)
            .filter_map(|(at, r)| {
                let handled = handlers.binary_search(&(r.actor, r.incarnation)).is_ok();
                (r.kind == Kind::Crash && handled).then_some(at)
            }),
    );
    Violation::new(event, Some(task), Finding::LostTask { accepted }, rows)
}
