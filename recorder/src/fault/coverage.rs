//! What a scenario tried: every fault it named, searched or drew, how often and when it fired,
//! and, for one that never fired, why (from what the processes reported). This is the data behind
//! `run_end.detail.faults` and the line the recorder prints at a scenario's end.

use std::time::Duration;

use outbox_trace::detail::FaultTried;

use super::spec::Nemesis;

/// Where a scenario's faults come from, which decides how a fault that never fired is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Named by the user (`--fault`, `[[scenarios]].faults`): recorded in
    /// `run_start.detail.faults`; one that never fired leaves the scenario `unknown`.
    #[default]
    Named,
    /// One schedule of a systematic search (`recorder explore`): recorded in
    /// `run_start.detail.searched`; one that never fired is reported as not reached, not judged.
    Searched,
}

/// One fault and its count.
#[derive(Debug, Clone)]
pub struct Tally {
    /// The fault.
    pub nemesis: Nemesis,
    /// How many times it fired.
    pub fired: u64,
    /// When it first fired, from the scenario's first task.
    pub first: Option<Duration>,
}

impl Tally {
    /// A fault not fired yet.
    pub fn new(nemesis: Nemesis) -> Tally {
        Tally {
            nemesis,
            fired: 0,
            first: None,
        }
    }

    /// Counts one firing at `at` from the first task.
    pub fn fire(&mut self, at: Duration) {
        self.fired += 1;
        self.first.get_or_insert(at);
    }

    /// The entry of `run_end.detail.faults`, with `why` for a fault that never fired.
    pub fn entry(&self, why: Option<String>) -> FaultTried {
        FaultTried {
            spec: self.nemesis.to_string(),
            fired: self.fired,
            first_ms: self.first.map(|d| d.as_millis() as u64),
            why: if self.fired == 0 { why } else { None },
            ..FaultTried::default()
        }
    }
}
