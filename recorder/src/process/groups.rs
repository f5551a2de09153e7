//! The process groups each scenario's processes were started in. Every process the recorder
//! starts leads a group of its own (its id the process's); one started with a scenario's
//! [`SCENARIO_MARK`] is noted here under that scenario, so what stays in its group belongs to
//! the scenario even after it dropped its environment (`env -i`, `sudo`, `su -`). The
//! [`reaper`](super::reaper) asks, and forgets a scenario's groups once it swept them.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::{Mutex, PoisonError};

use super::mark::SCENARIO_MARK;

/// The process groups each scenario's processes were started in (each started in a group of its
/// own, its id the process's), by scenario, until the scenario is swept.
static GROUPS: Mutex<Vec<(String, i32)>> = Mutex::new(Vec::new());

/// Notes that `pid`, started with `env`, leads a process group of its own: if `env` holds a
/// [`SCENARIO_MARK`], what stays in that group belongs to that scenario.
pub(super) fn note_group<'a>(
    pid: i32,
    mut env: impl Iterator<Item = (&'a OsStr, Option<&'a OsStr>)>,
) {
    let scenario = env.find_map(|(k, v)| (k == SCENARIO_MARK).then_some(v).flatten());
    if let Some(scenario) = scenario {
        let scenario = scenario.to_string_lossy().into_owned();
        GROUPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((scenario, pid));
    }
}

/// Which scenario each noted process group belongs to.
pub(super) fn group_owners() -> HashMap<i32, String> {
    let groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    groups.iter().map(|(s, g)| (*g, s.clone())).collect()
}

/// Forgets the groups of `scenario` (every scenario's, with `None`); returns whether another
/// scenario still holds groups.
pub(super) fn forget_groups(scenario: Option<&str>) -> bool {
    let mut groups = GROUPS.lock().unwrap_or_else(PoisonError::into_inner);
    match scenario {
        Some(scenario) => groups.retain(|(s, _)| s != scenario),
        None => groups.clear(),
    }
    !groups.is_empty()
}
