//! The details of a run's frame: how a scenario was set up (`run_start`), how it ended
//! (`run_end`), and the recorder's configuration in the file metadata (`outbox_trace.run`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::lenient::{self, detail_struct};
use super::CounterValue;

detail_struct! {
    /// `run_start.detail`: how the scenario was set up.
    pub struct RunStart {
        /// The protocol variant (`reference`, `ack-before-commit`, ...).
        pub protocol: Option<String>,
        /// The consumer's AckWait in milliseconds.
        pub ack_wait_ms: Option<i64>,
        /// Worker processes.
        pub workers: Option<i64>,
        /// Tasks the API creates.
        pub tasks: Option<i64>,
        /// The effect counter's value before the first commit: one number, or one per
        /// `counter_key`.
        pub counter_start: Option<CounterValue>,
        /// The kinds the producer reports: where a kind is listed, its absence is evidence. Names
        /// this contract does not define are kept (readers ignore them).
        pub records: Option<Vec<String>>,
        /// The configuration of a user's own system (`recorder run --system`), secrets masked.
        pub system: Option<Value>,
        /// The scripted faults, one text each (a fault spec, or a structured fault as JSON text).
        pub faults: Vec<String> = lenient::texts,
        /// The chaos plan, when the run injected random faults.
        pub chaos: Option<Value>,
    }
}

detail_struct! {
    /// `run_end.detail`: how the scenario ended.
    pub struct RunEnd {
        /// Every dependency and actor was back up and attempts went on until quiet. Absent when the
        /// producer did not say, or said it with something other than a boolean.
        pub recovered: Option<bool>,
        /// Why the scenario ended.
        pub reason: Option<String>,
        /// How long the scenario took, in milliseconds.
        pub elapsed_ms: Option<u64>,
        /// Tasks handed to the system under test (`recorder run --system`).
        pub tasks_sent: Option<u64>,
        /// Tasks the system answered.
        pub tasks_answered: Option<u64>,
        /// Tasks sent again after a lost answer.
        pub tasks_resent: Option<u64>,
        /// Tasks never answered.
        pub tasks_unanswered: Option<u64>,
    }
}

detail_struct! {
    /// The recorder's configuration in the `outbox_trace.run` file metadata: the parts a reader
    /// uses.
    pub struct RunConfig {
        /// The backend's command-line name (`etcd-jetstream`, `sqlite-redis`).
        pub backend: Option<String>,
        /// The protocol variant every scenario of the run used (`reference`,
        /// `ack-before-commit`, ...).
        pub protocol: Option<String>,
        /// The crate version of the recorder that wrote the file.
        pub recorder: Option<String>,
        /// The scenarios the run was asked for, in order.
        pub scenarios: Vec<String>,
        /// Each service by name (`etcd`, `nats`, `redis`, `db`): `local` when the recorder started
        /// it, else its address with any credentials masked.
        pub endpoints: BTreeMap<String, String>,
        /// The consumer's AckWait in milliseconds.
        pub ack_wait_ms: Option<i64>,
        /// How long the relay waits for a publish ACK, in milliseconds.
        pub publish_timeout_ms: Option<i64>,
        /// Members of each cluster the recorder started (1: one plain service).
        pub cluster: Option<i64>,
        /// Copies of the stream the broker keeps.
        pub replicas: Option<i64>,
    }
}

impl RunConfig {
    /// Decodes the metadata text; `None` when it is not a JSON object.
    pub fn parse(text: &str) -> Option<RunConfig> {
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => serde_json::from_value(v).ok(),
            _ => None,
        }
    }
}
