//! The mark of a run: an environment variable every process the run starts carries (and what
//! those start inherit), naming the run's `--out`, so the [`watchdog`](super::watchdog) and the
//! next run on the same `--out` can find them all.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::OnceLock;

/// The environment variable that marks a process as started by a run: its value is the run's
/// `--out`, as an absolute path.
pub const MARK: &str = "OUTBOX_RECORDER_OUT";

/// The environment variable that marks what one scenario started (its value names the
/// scenario): scenarios that run at once each sweep their own strays only.
pub const SCENARIO_MARK: &str = "OUTBOX_RECORDER_SCENARIO";

/// The run's mark, once its watchdog watches.
pub(super) static MARKED: OnceLock<String> = OnceLock::new();

/// The mark the run gives its children, once a watchdog watches them.
pub fn mark() -> Option<&'static str> {
    MARKED.get().map(String::as_str)
}

/// The run's watchdog's process id (0 before it starts): a child of the recorder that the end of
/// a scenario must not take for a stray.
static WATCHDOG: AtomicI32 = AtomicI32::new(0);

/// Notes the watchdog's process id.
pub(super) fn set_watchdog(pid: i32) {
    WATCHDOG.store(pid, Ordering::Relaxed);
}

/// Whether `pid` is the run's watchdog.
pub fn is_watchdog(pid: i32) -> bool {
    pid != 0 && WATCHDOG.load(Ordering::Relaxed) == pid
}
