//! The scenarios: which tasks are created, how many workers run, which faults are armed in which
//! actor. One table, so a new scenario is a new row; every scenario but `dual-write` runs on every
//! backend.

use crate::backend::connection::BackendKind;
use crate::fault::plan::{CrashPoint, Fault};
use crate::protocol::model::{ApiMode, TaskSpec};

/// A scenario the recorder can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScenarioName {
    /// The API saves an order and publishes it directly, without an outbox; the publish fails.
    DualWrite,
    /// Three orders, each with its outbox row in one transaction; a fourth fails before its commit.
    PlaceOrder,
    /// The relay runs to completion twice; the second run publishes nothing.
    RelayIdempotent,
    /// One order's three events, committed back to back, go out in ascending `seq`.
    AggregateOrder,
    /// The outbox is committed and the relay dies right before publishing; its next life publishes.
    CrashBeforePublish,
    /// The relay publishes and dies before marking; its next life publishes the same event again.
    RelayCrash,
    /// The first publish's ACK is lost; the retry stores a second copy that the worker suppresses.
    LostPublishAck,
    /// The worker commits and dies before its ACK; the redelivery is recognised and ACKed.
    LostConsumerAck,
    /// The API dies after accepting a task; the client retries with the same idempotency key.
    CrashAfterAccept,
    /// Two workers commit at once, each pausing between its read and its commit; the counter's
    /// guard turns the race into a retry.
    ConcurrentWorkers,
    /// The worker pays through an external receiver before its commit and dies around the call.
    ExternalEffect,
    /// Many tasks over many aggregates and several workers (`--tasks`, `--workers`); not in `all`.
    Load,
    /// The worker commits and dies before it can report the commit; the observer finds the commit
    /// in the store and records it.
    UnreportedCommit,
    /// The API commits a create and dies before it can report it; its next life retries the create
    /// with the same idempotency key and reports the original transaction. Not in `all`.
    UnreportedCreate,
    /// The API reports a task's acceptance and dies before reporting its outbox record; the
    /// observer records the record from the store. Not in `all`.
    UnreportedIntent,
}

/// The size of a `load` scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSpec {
    /// Tasks the API creates.
    pub tasks: usize,
    /// Worker processes sharing the durable consumer.
    pub workers: usize,
    /// Aggregates the tasks are spread over (round robin).
    pub aggregates: usize,
    /// Tasks created per second (0: as fast as the store takes them).
    pub rate: u32,
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            tasks: 10_000,
            workers: 4,
            aggregates: 16,
            rate: 0,
        }
    }
}

/// Everything that defines a scenario's run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name, written to every row's `scenario` column.
    pub name: ScenarioName,
    /// Worker processes.
    pub workers: usize,
    /// How the API publishes.
    pub api_mode: ApiMode,
    /// The API's broker address points at a closed port (a real refused connection).
    pub api_broker_down: bool,
    /// Faults armed in the API's first life.
    pub api: Vec<Fault>,
    /// Faults armed in the relay's first life.
    pub relay: Vec<Fault>,
    /// Faults armed in every worker's first life.
    pub worker: Vec<Fault>,
    /// How many times the relay runs until quiet (a second run must find nothing to do).
    pub relay_runs: u32,
    /// An external receiver runs, and workers call it before committing.
    pub external: bool,
    /// Tasks created per second by the API (0: no pacing).
    pub api_rate: u32,
    /// Messages a worker fetches at once.
    pub fetch_batch: usize,
    /// Records the relay publishes at once and marks with one transaction.
    pub relay_batch: usize,
    /// Create requests the API has in flight at once.
    pub api_inflight: usize,
    /// The tasks the API creates.
    pub tasks: Vec<TaskSpec>,
}

impl ScenarioName {
    /// The scenarios `all` runs, in order, less those a backend cannot run; `load`,
    /// `unreported-create` and `unreported-intent` run only when named.
    pub const ALL: [ScenarioName; 12] = [
        ScenarioName::DualWrite,
        ScenarioName::PlaceOrder,
        ScenarioName::RelayIdempotent,
        ScenarioName::AggregateOrder,
        ScenarioName::CrashBeforePublish,
        ScenarioName::RelayCrash,
        ScenarioName::LostPublishAck,
        ScenarioName::LostConsumerAck,
        ScenarioName::CrashAfterAccept,
        ScenarioName::ConcurrentWorkers,
        ScenarioName::ExternalEffect,
        ScenarioName::UnreportedCommit,
    ];

    /// The name written to the trace's `scenario` column.
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioName::DualWrite => "dual-write",
            ScenarioName::PlaceOrder => "place-order",
            ScenarioName::RelayIdempotent => "relay-idempotent",
            ScenarioName::AggregateOrder => "aggregate-order",
            ScenarioName::CrashBeforePublish => "crash-before-publish",
            ScenarioName::RelayCrash => "relay-crash",
            ScenarioName::LostPublishAck => "lost-publish-ack",
            ScenarioName::LostConsumerAck => "lost-consumer-ack",
            ScenarioName::CrashAfterAccept => "crash-after-accept",
            ScenarioName::ConcurrentWorkers => "concurrent-workers",
            ScenarioName::ExternalEffect => "external-effect",
            ScenarioName::Load => "load",
            ScenarioName::UnreportedCommit => "unreported-commit",
            ScenarioName::UnreportedCreate => "unreported-create",
            ScenarioName::UnreportedIntent => "unreported-intent",
        }
    }

    /// Whether the scenario runs on `backend`. The dual write needs a broker the API reaches on
    /// first use (Redis); NATS clients connect up front.
    pub fn runs_on(self, backend: BackendKind) -> bool {
        self != ScenarioName::DualWrite || backend == BackendKind::SqliteRedis
    }

    /// The scenario a command-line name names, whether `all` runs it or not; `None` for an unknown
    /// name.
    pub fn parse(name: &str) -> Option<ScenarioName> {
        Self::ALL
            .into_iter()
            .chain([
                ScenarioName::Load,
                ScenarioName::UnreportedCreate,
                ScenarioName::UnreportedIntent,
            ])
            .find(|n| n.as_str() == name)
    }

    /// The scenarios `all` means on `backend`, in order.
    pub fn all_on(backend: BackendKind) -> Vec<ScenarioName> {
        let mut names: Vec<ScenarioName> = Self::ALL
            .into_iter()
            .filter(|s| s.runs_on(backend))
            .collect();
        if backend == BackendKind::EtcdJetstream {
            // The lab 03 scenarios first.
            let lab = [
                ScenarioName::CrashBeforePublish,
                ScenarioName::LostPublishAck,
                ScenarioName::LostConsumerAck,
            ];
            names.sort_by_key(|n| !lab.contains(n));
        }
        names
    }

    /// The scenario's definition (`load` sizes the `load` scenario and is ignored by the others).
    pub fn scenario(self, load: &LoadSpec) -> Scenario {
        let crash = |point| vec![Fault::Crash { point }];
        let mut s = Scenario {
            name: self,
            workers: 1,
            api_mode: ApiMode::Outbox,
            api_broker_down: false,
            api: Vec::new(),
            relay: Vec::new(),
            worker: Vec::new(),
            relay_runs: 1,
            external: false,
            api_rate: 0,
            fetch_batch: 1,
            relay_batch: 1,
            api_inflight: 1,
            tasks: lab_tasks("account-1", "task.created"),
        };
        match self {
            ScenarioName::DualWrite => {
                s.api_mode = ApiMode::DualWrite;
                s.api_broker_down = true;
                s.tasks.truncate(1);
            }
            ScenarioName::PlaceOrder => {
                let mut failing = lab_tasks("account-1", "task.created")[0].clone();
                failing.task_id = "task-4".into();
                failing.idempotency_key = "key-4".into();
                failing.fail_before_commit = true;
                s.tasks.push(failing);
            }
            ScenarioName::RelayIdempotent => s.relay_runs = 2,
            ScenarioName::AggregateOrder => {
                s.tasks = lab_tasks("order-1", "");
                for (task, kind) in
                    s.tasks
                        .iter_mut()
                        .zip(["order.created", "order.paid", "order.shipped"])
                {
                    task.event_type = kind.to_string();
                }
            }
            ScenarioName::CrashBeforePublish => s.relay = crash(CrashPoint::RelayBeforePublish),
            ScenarioName::RelayCrash => s.relay = crash(CrashPoint::RelayBetweenPublishAndMark),
            ScenarioName::LostPublishAck => s.relay = vec![Fault::LosePublishAck],
            ScenarioName::LostConsumerAck => {
                s.worker = crash(CrashPoint::WorkerBetweenCommitAndAck)
            }
            ScenarioName::UnreportedCommit => {
                s.worker = crash(CrashPoint::WorkerBeforeReportingCommit)
            }
            ScenarioName::CrashAfterAccept => s.api = crash(CrashPoint::ApiBetweenTaskAndOutbox),
            ScenarioName::UnreportedCreate => s.api = crash(CrashPoint::ApiBeforeReportingCreate),
            ScenarioName::UnreportedIntent => s.api = crash(CrashPoint::ApiBeforeReportingIntent),
            ScenarioName::ConcurrentWorkers => {
                s.workers = 2;
                s.worker = vec![Fault::StallBeforeCommit { millis: 300 }];
            }
            ScenarioName::Load => {
                s.workers = load.workers.max(1);
                s.api_rate = load.rate;
                s.fetch_batch = 32;
                s.relay_batch = 64;
                s.api_inflight = 32;
                s.tasks = (0..load.tasks)
                    .map(|i| TaskSpec {
                        task_id: format!("task-{}", i + 1),
                        idempotency_key: format!("key-{}", i + 1),
                        amount: (i % 9) as i64 + 1,
                        aggregate_id: format!("aggregate-{}", i % load.aggregates.max(1)),
                        event_type: "task.created".to_string(),
                        fail_before_commit: false,
                    })
                    .collect();
            }
            ScenarioName::ExternalEffect => {
                s.external = true;
                s.worker = [
                    CrashPoint::WorkerAfterExternalRequest,
                    CrashPoint::WorkerAfterExternalAnswer,
                    CrashPoint::WorkerBetweenCommitAndAck,
                ]
                .into_iter()
                .map(|point| Fault::Crash { point })
                .collect();
            }
        }
        s
    }
}

/// The lab's three tasks: effects 2, 3 and 5 (counter 10), in one aggregate.
pub fn lab_tasks(aggregate: &str, event_type: &str) -> Vec<TaskSpec> {
    [2, 3, 5]
        .iter()
        .enumerate()
        .map(|(i, amount)| TaskSpec {
            task_id: format!("task-{}", i + 1),
            idempotency_key: format!("key-{}", i + 1),
            amount: *amount,
            aggregate_id: aggregate.to_string(),
            event_type: event_type.to_string(),
            fail_before_commit: false,
        })
        .collect()
}
