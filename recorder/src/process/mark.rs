//! The mark of a run: an environment variable every process the run starts carries (and what
//! those start inherit), naming the run's `--out`, so the [`watchdog`](super::watchdog) and the
//! next run on the same `--out` can find them all.

use std::sync::OnceLock;

/// The environment variable that marks a process as started by a run: its value is the run's
/// `--out`, as an absolute path.
pub const MARK: &str = "OUTBOX_RECORDER_OUT";

/// The run's mark, once its watchdog watches.
pub(super) static MARKED: OnceLock<String> = OnceLock::new();

/// The mark the run gives its children, once a watchdog watches them.
pub fn mark() -> Option<&'static str> {
    MARKED.get().map(String::as_str)
}
