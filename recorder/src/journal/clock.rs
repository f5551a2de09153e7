//! The run's clock: nanoseconds since the run started, read from `CLOCK_MONOTONIC`, which every
//! process on the machine shares. The recorder hands its start reading to each actor process, so
//! `ts_ns` is comparable across all of them.

use nix::time::{clock_gettime, ClockId};
use serde::{Deserialize, Serialize};

/// A clock anchored at the run's start.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RunClock {
    /// `CLOCK_MONOTONIC` at the run's start, in nanoseconds.
    start_ns: i64,
}

impl RunClock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        RunClock {
            start_ns: monotonic_ns(),
        }
    }

    /// Nanoseconds since the run started.
    pub fn now(&self) -> i64 {
        monotonic_ns() - self.start_ns
    }
}

fn monotonic_ns() -> i64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always available");
    t.tv_sec() * 1_000_000_000 + t.tv_nsec()
}
