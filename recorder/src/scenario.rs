//! The scenarios: which tasks are created, how many workers run, and which faults are armed in which
//! actor. One table, so a new scenario is a new row.

use crate::faults::{CrashPoint, Fault};
use crate::protocol::TaskSpec;

/// A scenario the recorder can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum ScenarioName {
    /// The outbox is committed and the relay dies right before publishing; its next life publishes.
    CrashBeforePublish,
    /// The first publish's ACK is lost; the retry stores a second copy that the worker suppresses.
    LostPublishAck,
    /// The worker commits and dies before its ACK; the redelivery is recognised and ACKed.
    LostConsumerAck,
    /// The API dies after accepting a task; the client retries with the same idempotency key.
    CrashAfterAccept,
    /// Two workers commit at once, each pausing between its read and its commit; the counter's
    /// revision guard turns the race into a retry.
    ConcurrentWorkers,
}

/// Everything that defines a scenario's run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Which one.
    pub name: ScenarioName,
    /// Worker processes.
    pub workers: usize,
    /// Faults armed in the API's first life.
    pub api: Vec<Fault>,
    /// Faults armed in the relay's first life.
    pub relay: Vec<Fault>,
    /// Faults armed in every worker's first life.
    pub worker: Vec<Fault>,
    /// The tasks the API creates.
    pub tasks: Vec<TaskSpec>,
}

impl ScenarioName {
    /// Every scenario, in the order `all` runs them.
    pub const ALL: [ScenarioName; 5] = [
        ScenarioName::CrashBeforePublish,
        ScenarioName::LostPublishAck,
        ScenarioName::LostConsumerAck,
        ScenarioName::CrashAfterAccept,
        ScenarioName::ConcurrentWorkers,
    ];

    /// The name written to the trace's `scenario` column.
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioName::CrashBeforePublish => "crash-before-publish",
            ScenarioName::LostPublishAck => "lost-publish-ack",
            ScenarioName::LostConsumerAck => "lost-consumer-ack",
            ScenarioName::CrashAfterAccept => "crash-after-accept",
            ScenarioName::ConcurrentWorkers => "concurrent-workers",
        }
    }

    /// The scenario's definition.
    pub fn scenario(self) -> Scenario {
        let crash = |point| vec![Fault::Crash { point }];
        let mut s = Scenario {
            name: self,
            workers: 1,
            api: Vec::new(),
            relay: Vec::new(),
            worker: Vec::new(),
            tasks: lab_tasks(),
        };
        match self {
            ScenarioName::CrashBeforePublish => s.relay = crash(CrashPoint::RelayBeforePublish),
            ScenarioName::LostPublishAck => s.relay = vec![Fault::LosePublishAck],
            ScenarioName::LostConsumerAck => {
                s.worker = crash(CrashPoint::WorkerBetweenCommitAndAck)
            }
            ScenarioName::CrashAfterAccept => s.api = crash(CrashPoint::ApiBetweenTaskAndOutbox),
            ScenarioName::ConcurrentWorkers => {
                s.workers = 2;
                s.worker = vec![Fault::StallBeforeCommit { millis: 300 }];
            }
        }
        s
    }
}

/// The lab's three tasks: effects 2, 3 and 5 (counter 10), in one aggregate.
pub fn lab_tasks() -> Vec<TaskSpec> {
    [2, 3, 5]
        .iter()
        .enumerate()
        .map(|(i, amount)| TaskSpec {
            task_id: format!("task-{}", i + 1),
            idempotency_key: format!("key-{}", i + 1),
            amount: *amount,
            aggregate_id: "account-1".to_string(),
        })
        .collect()
}
