//! One row of a trace: what an actor did, with the identities the invariants need.

use serde::{Deserialize, Serialize};

use crate::Kind;

/// One event, exactly the columns of `outbox-trace/1`.
///
/// Optional fields are `None` where the kind does not use them; [`Kind::required_fields`] says which
/// ones a kind needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The recording this row belongs to; `seq` is unique within it.
    pub run_id: String,
    /// The scenario within the run; the analyzer checks each `(run_id, scenario)` on its own.
    pub scenario: String,
    /// Strictly increasing within a run: the order in which the recorder received the event.
    pub seq: u64,
    /// Nanoseconds since the run started, from a monotonic clock shared by all actors.
    pub ts_ns: i64,
    /// `etcd-jetstream`, `sqlite-redis`, or another producer's name.
    pub backend: String,
    /// Who did it: `api`, `relay`, `worker`, `faults`, `recorder`, `observer`, maybe with a suffix.
    pub actor: String,
    /// 0 for an actor's first life; +1 after every crash and restart.
    pub incarnation: u32,
    /// What happened; it decides which optional fields the row must carry.
    pub kind: Kind,
    /// The business entity the event acts on: the task whose effect must happen exactly once.
    pub task_id: Option<String>,
    /// The stable identity of the published event, the same on every copy and delivery.
    pub event_id: Option<String>,
    /// Ordering group: an aggregate's events are published in `aggregate_seq` order.
    pub aggregate_id: Option<String>,
    /// Position inside the aggregate, assigned at commit.
    pub aggregate_seq: Option<u64>,
    /// Publish attempt (1-based) or broker delivery count (1-based).
    pub attempt: Option<u32>,
    /// The broker's position for this copy (a JetStream stream sequence, or the number the Redis
    /// publish script gave it); two copies of one event have two positions.
    pub broker_seq: Option<u64>,
    /// The partition `broker_seq` counts in, for a broker that orders per partition (Kafka: an
    /// offset is a position within its partition); `None` = the broker's one sequence. An
    /// optional column: a file without it reads as all null.
    pub partition: Option<i32>,
    /// The store transaction this event reports; equal values were committed atomically together.
    pub store_rev: Option<i64>,
    /// The size of the effect: what the task adds to the counter when its effect commits.
    pub amount: Option<i64>,
    /// The effect counter's value right after this commit.
    pub counter: Option<i64>,
    /// Which counter `counter` and `amount` belong to, for a service with one counter per key
    /// (stock per item); `None` = the run's one counter. An optional column: a file without it
    /// reads as all null.
    pub counter_key: Option<String>,
    /// A JSON object with what the columns do not hold; the `detail` module types its keys.
    pub detail: Option<String>,
}

impl Event {
    /// An event of `kind` with empty identity columns and every optional field `None`, for the
    /// caller to fill in.
    pub fn new(kind: Kind) -> Self {
        Event {
            run_id: String::new(),
            scenario: String::new(),
            seq: 0,
            ts_ns: 0,
            backend: String::new(),
            actor: String::new(),
            incarnation: 0,
            kind,
            task_id: None,
            event_id: None,
            aggregate_id: None,
            aggregate_seq: None,
            attempt: None,
            broker_seq: None,
            partition: None,
            store_rev: None,
            amount: None,
            counter: None,
            counter_key: None,
            detail: None,
        }
    }

    /// The `detail` column parsed as JSON (`Null` when absent or not JSON).
    pub fn detail_json(&self) -> serde_json::Value {
        self.detail
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// The required fields of this event's kind that are missing.
    pub fn missing_fields(&self) -> Vec<crate::Field> {
        self.kind
            .required_fields()
            .iter()
            .copied()
            .filter(|&f| !self.has(f))
            .collect()
    }

    /// The fields identifying this event's step that are missing ([`crate::Field::identifies`]):
    /// an event lacking one is no step.
    pub fn missing_identity(&self) -> Vec<crate::Field> {
        self.kind
            .identifying_fields()
            .filter(|&f| !self.has(f))
            .collect()
    }

    /// Whether the event carries `field`.
    pub fn has(&self, field: crate::Field) -> bool {
        use crate::Field::*;
        match field {
            TaskId => self.task_id.is_some(),
            EventId => self.event_id.is_some(),
            StoreRev => self.store_rev.is_some(),
            Attempt => self.attempt.is_some(),
            BrokerSeq => self.broker_seq.is_some(),
            Amount => self.amount.is_some(),
            Counter => self.counter.is_some(),
            Detail => self.detail.is_some(),
        }
    }
}
