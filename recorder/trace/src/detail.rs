//! The `detail` column, typed: one struct per kind that carries a detail object, decoded once.
//!
//! `detail` is JSON text in the file. Writers build these structs and serialize them; readers
//! decode them with [`Detail::parse`]. Decoding is lenient, as a reader of other producers' files
//! must be: an integer may be a JSON number or a decimal string, a value of the wrong type reads
//! as absent, and keys this contract does not name are kept in `other`. Nothing outside this
//! module looks a `detail` key up by its name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Kind;

/// The JSON key of a detail field: `detail_key!(Observed.counter)` is the [`DetailKey`]
/// `counter`.
///
/// The detail structs serialize every field under its own name (no serde renames; a test holds
/// that), so the key is the field's name; naming a field the struct does not have fails to
/// compile. Code that spells a key outside this crate (the SQL the analyzer writes) takes a
/// [`DetailKey`], which only this macro makes, so renaming a field breaks the build, not a query.
#[macro_export]
macro_rules! detail_key {
    ($detail:ident . $field:ident) => {{
        let _check = |d: &$crate::detail::$detail| {
            let _ = &d.$field;
        };
        $crate::detail::DetailKey::of_field(stringify!($field))
    }};
}

/// A key of a `detail` object, named by [`detail_key!`] after a field of the detail types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DetailKey(&'static str);

impl DetailKey {
    /// For [`detail_key!`] only, which has checked that the field exists.
    #[doc(hidden)]
    pub const fn of_field(name: &'static str) -> Self {
        DetailKey(name)
    }

    /// The key as written in the JSON text.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for DetailKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// `run_start.detail`: how the scenario was set up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStart {
    /// The protocol variant (`reference`, `ack-before-commit`, ...).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol: Option<String>,
    /// The consumer's AckWait in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub ack_wait_ms: Option<i64>,
    /// Worker processes.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub workers: Option<i64>,
    /// Tasks the API creates.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks: Option<i64>,
    /// The effect counter's value before the first commit: one number, or one per
    /// `counter_key`.
    #[serde(
        default,
        deserialize_with = "lenient::counter",
        skip_serializing_if = "Option::is_none"
    )]
    pub counter_start: Option<CounterValue>,
    /// The kinds the producer reports: where a kind is listed, its absence is evidence. Names
    /// this contract does not define are kept (readers ignore them).
    #[serde(
        default,
        deserialize_with = "lenient::string_list",
        skip_serializing_if = "Option::is_none"
    )]
    pub records: Option<Vec<String>>,
    /// The configuration of a user's own system (`recorder run --system`), secrets masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// The scripted faults, one text each (a fault spec, or a structured fault as JSON text).
    #[serde(
        default,
        deserialize_with = "lenient::texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub faults: Vec<String>,
    /// The chaos plan, when the run injected random faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chaos: Option<Value>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A counter's value in a detail: one number for the run's one counter, or one number per
/// `counter_key` (stock per item). Written as a JSON number or a JSON object of numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CounterValue {
    /// The run's one counter.
    One(i64),
    /// One counter per `counter_key`.
    ByKey(BTreeMap<String, i64>),
}

impl CounterValue {
    /// The value of the one counter; `None` when the value is given per key.
    pub fn one(&self) -> Option<i64> {
        match self {
            CounterValue::One(n) => Some(*n),
            CounterValue::ByKey(_) => None,
        }
    }

    /// The value of the counter `key` names (`None` = the run's one counter), if this value
    /// gives it: a number gives only the one counter, an object only keyed ones.
    pub fn of_key(&self, key: Option<&str>) -> Option<i64> {
        match (self, key) {
            (CounterValue::One(n), None) => Some(*n),
            (CounterValue::ByKey(map), Some(k)) => map.get(k).copied(),
            _ => None,
        }
    }

    /// Decodes a JSON value leniently: a number or decimal string is one counter, an object
    /// counters by key (entries that are not integers left out); anything else is `None`.
    pub fn from_json(v: &Value) -> Option<CounterValue> {
        match v {
            Value::Object(map) => Some(CounterValue::ByKey(
                map.iter()
                    .filter_map(|(k, v)| lenient::int_of(v).map(|n| (k.clone(), n)))
                    .collect(),
            )),
            other => lenient::int_of(other).map(CounterValue::One),
        }
    }
}

impl From<i64> for CounterValue {
    fn from(n: i64) -> Self {
        CounterValue::One(n)
    }
}

/// `crash.detail`: where the actor died.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Crash {
    /// The named crash point (`before-publish`, `after-commit-before-ack`, `killed`, `error`, ...).
    #[serde(default, deserialize_with = "lenient::string_or_empty")]
    pub point: String,
    /// The error that ended the life, for point `error`.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<String>,
    /// The exit status of a process that exited on its own (point `exit`).
    #[serde(
        default,
        deserialize_with = "lenient::int32",
        skip_serializing_if = "Option::is_none"
    )]
    pub status: Option<i32>,
    /// True when nothing of the life that ended can be missing from the trace (the recorder held
    /// the export that carried its last step); false when rows may be lost (a timed kill, an
    /// asynchronous exporter, an exit): such a life counts as one without its crash row.
    #[serde(
        default,
        deserialize_with = "lenient::boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub announced: Option<bool>,
    /// The `store_rev` of a commit the actor made and died before reporting, so the trace still
    /// names the commit that its next life or the observer will find in the store.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub committed_rev: Option<i64>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `fault.detail`: what was done to a dependency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// The fault's name (`broker-restart`, `store-restart`, ...).
    #[serde(default, deserialize_with = "lenient::string_or_empty")]
    pub fault: String,
    /// The program of the service hit (`etcd`, `nats-server`, `redis-server`).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub service: Option<String>,
    /// The member hit, by the name its producer gave it (`nats-server-1`, say).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub member: Option<String>,
    /// The signal that stopped the service (`SIGKILL` for a restart).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub signal: Option<String>,
    /// How long the service was down, in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub down_ms: Option<i64>,
    /// What the fault was aimed at, by the name its producer gave it (a service of a `--system`
    /// file, say).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub target: Option<String>,
    /// How long the fault lasted (a `pause`), in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_ms: Option<u64>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `observed.detail`: the ground truth read back from the real systems.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// Tasks in the store.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks: Option<i64>,
    /// Tasks in the store marked done.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks_done: Option<i64>,
    /// Messages the broker holds (or held): copies published.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub stream_messages: Option<i64>,
    /// The effect counter as stored (one number, or one per `counter_key`); the `counter` figure
    /// prefers it to the last commit's.
    #[serde(
        default,
        deserialize_with = "lenient::counter",
        skip_serializing_if = "Option::is_none"
    )]
    pub counter: Option<CounterValue>,
    /// Effect results stored.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub results: Option<i64>,
    /// A synonym of `results` some producers use.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub processed: Option<i64>,
    /// Dedup keys stored.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub dedup_keys: Option<i64>,
    /// Outbox records not yet published.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub outbox_pending: Option<i64>,
    /// Outbox records marked published.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub outbox_published: Option<i64>,
    /// Payments the external receiver made.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_payments: Option<i64>,
    /// Idempotency keys the external receiver holds.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_keys: Option<i64>,
    /// Dual-write lab: rows in `orders`.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub orders: Option<i64>,
    /// Dual-write lab: rows in `outbox`.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub outbox: Option<i64>,
    /// Dual-write lab: messages appended to the broker's log.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub enqueued: Option<i64>,
    /// Dual-write lab: distinct events processed.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub processed_unique: Option<i64>,
    /// Dual-write lab: whether every aggregate was consumed in `seq` order.
    #[serde(
        default,
        deserialize_with = "lenient::boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub order_ok: Option<bool>,
    /// Dual-write lab: events published more than once, with their copies (absent where the
    /// backend does not count copies per event; empty when it found none).
    #[serde(
        default,
        deserialize_with = "lenient::counts",
        skip_serializing_if = "Option::is_none"
    )]
    pub duplicates: Option<BTreeMap<String, i64>>,
    /// When during the scenario this was read (absent: at the end).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub phase: Option<String>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Observed {
    /// Effect results: `results`, or its synonym `processed`.
    pub fn results(&self) -> Option<i64> {
        self.results.or(self.processed)
    }
}

/// `run_end.detail`: how the scenario ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// Every dependency and actor was back up and attempts went on until quiet. Absent when the
    /// producer did not say, or said it with something other than a boolean.
    #[serde(
        default,
        deserialize_with = "lenient::boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub recovered: Option<bool>,
    /// Why the scenario ended.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<String>,
    /// How long the scenario took, in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub elapsed_ms: Option<u64>,
    /// Tasks handed to the system under test (`recorder run --system`).
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks_sent: Option<u64>,
    /// Tasks the system answered.
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks_answered: Option<u64>,
    /// Tasks sent again after a lost answer.
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks_resent: Option<u64>,
    /// Tasks never answered.
    #[serde(
        default,
        deserialize_with = "lenient::uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub tasks_unanswered: Option<u64>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The detail of a protocol step: why a publish was not ACKed, whether an external call carried
/// its key, which commit a suppressed duplicate found, or that the observer read the step from the
/// store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// Why a publish failed or went unACKed.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<String>,
    /// The injected fault that cost the ACK (`lose-publish-ack`), when one did.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub fault: Option<String>,
    /// The broker reported the copy as a duplicate it dropped.
    #[serde(
        default,
        deserialize_with = "lenient::boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub broker_duplicate: Option<bool>,
    /// Whether an external request carried the idempotency key.
    #[serde(
        default,
        deserialize_with = "lenient::boolean",
        skip_serializing_if = "Option::is_none"
    )]
    pub idempotency_key: Option<bool>,
    /// `store` when the observer read this step back from the store after its actor died.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub seen_in: Option<String>,
    /// Why the observer had to read it.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub why: Option<String>,
    /// `duplicate_suppressed`: the `store_rev` of the commit that wrote the dedup key found.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub committed_rev: Option<i64>,
    /// `duplicate_suppressed`: the counter right after that commit.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub counter_after: Option<i64>,
    /// `duplicate_suppressed`: the size of the effect not applied again.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub amount: Option<i64>,
    /// Keys this contract does not name.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl Note {
    /// Whether the note says nothing (a row with such a note has no `detail`).
    pub fn is_empty(&self) -> bool {
        *self == Note::default()
    }

    /// Whether the observer read this step from the store (`seen_in: "store"`).
    pub fn seen_in_store(&self) -> bool {
        self.seen_in.as_deref() == Some("store")
    }
}

/// A decoded `detail`, by the kind of its row.
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// Of `run_start`.
    RunStart(RunStart),
    /// Of `crash`.
    Crash(Crash),
    /// Of `fault`.
    Fault(Fault),
    /// Of `observed`.
    Observed(Observed),
    /// Of `run_end`.
    RunEnd(RunEnd),
    /// Of any other kind.
    Note(Note),
    /// The text is not a JSON object.
    NotAnObject,
}

impl Detail {
    /// Decodes the `detail` text of a row of `kind`. Text that is not a JSON object gives
    /// [`Detail::NotAnObject`]; it never fails.
    pub fn parse(kind: Kind, text: &str) -> Detail {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
            return Detail::NotAnObject;
        };
        let value = Value::Object(map);
        let typed = match kind {
            Kind::RunStart => serde_json::from_value(value).map(Detail::RunStart),
            Kind::Crash => serde_json::from_value(value).map(Detail::Crash),
            Kind::Fault => serde_json::from_value(value).map(Detail::Fault),
            Kind::Observed => serde_json::from_value(value).map(Detail::Observed),
            Kind::RunEnd => serde_json::from_value(value).map(Detail::RunEnd),
            _ => serde_json::from_value(value).map(Detail::Note),
        };
        // The lenient fields accept any JSON value, so an object always decodes.
        typed.unwrap_or(Detail::NotAnObject)
    }

    /// The JSON text of this detail; `null` for [`Detail::NotAnObject`].
    pub fn to_json(&self) -> String {
        let text = match self {
            Detail::RunStart(d) => serde_json::to_string(d),
            Detail::Crash(d) => serde_json::to_string(d),
            Detail::Fault(d) => serde_json::to_string(d),
            Detail::Observed(d) => serde_json::to_string(d),
            Detail::RunEnd(d) => serde_json::to_string(d),
            Detail::Note(d) => serde_json::to_string(d),
            Detail::NotAnObject => Ok("null".to_string()),
        };
        // Maps with string keys and plain values always serialize.
        text.unwrap_or_else(|_| "{}".to_string())
    }

    /// The run's start detail, if this is one.
    pub fn run_start(&self) -> Option<&RunStart> {
        match self {
            Detail::RunStart(d) => Some(d),
            _ => None,
        }
    }
    /// The crash detail, if this is one.
    pub fn crash(&self) -> Option<&Crash> {
        match self {
            Detail::Crash(d) => Some(d),
            _ => None,
        }
    }
    /// The fault detail, if this is one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            Detail::Fault(d) => Some(d),
            _ => None,
        }
    }
    /// The observed ground truth, if this is one.
    pub fn observed(&self) -> Option<&Observed> {
        match self {
            Detail::Observed(d) => Some(d),
            _ => None,
        }
    }
    /// The run's end detail, if this is one.
    pub fn run_end(&self) -> Option<&RunEnd> {
        match self {
            Detail::RunEnd(d) => Some(d),
            _ => None,
        }
    }
    /// The note of a protocol step, if this is one.
    pub fn note(&self) -> Option<&Note> {
        match self {
            Detail::Note(d) => Some(d),
            _ => None,
        }
    }
}

/// The recorder's configuration in the `outbox_trace.run` file metadata: the parts a reader uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The backend's command-line name (`etcd-jetstream`, `sqlite-redis`).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub backend: Option<String>,
    /// The protocol variant every scenario of the run used (`reference`, `ack-before-commit`, ...).
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub protocol: Option<String>,
    /// The crate version of the recorder that wrote the file.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "Option::is_none"
    )]
    pub recorder: Option<String>,
    /// The scenarios the run was asked for, in order.
    #[serde(
        default,
        deserialize_with = "lenient::strings",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub scenarios: Vec<String>,
    /// Each service by name (`etcd`, `nats`, `redis`, `db`): `local` when the recorder started
    /// it, else its address with any credentials masked.
    #[serde(
        default,
        deserialize_with = "lenient::string_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub endpoints: BTreeMap<String, String>,
    /// The consumer's AckWait in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub ack_wait_ms: Option<i64>,
    /// How long the relay waits for a publish ACK, in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub publish_timeout_ms: Option<i64>,
    /// Members of each cluster the recorder started (1: one plain service).
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster: Option<i64>,
    /// Copies of the stream the broker keeps.
    #[serde(
        default,
        deserialize_with = "lenient::int",
        skip_serializing_if = "Option::is_none"
    )]
    pub replicas: Option<i64>,
    /// Everything else the producer wrote.
    #[serde(flatten)]
    pub other: Map<String, Value>,
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

/// Deserializers that read a wrong-typed value as absent instead of failing.
mod lenient {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    /// An integer from a JSON number or a decimal string.
    pub fn int_of(v: &Value) -> Option<i64> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_u64().and_then(|u| i64::try_from(u).ok())),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        Ok(int_of(&Value::deserialize(d)?))
    }

    /// A non-negative integer (a negative one reads as absent).
    pub fn uint<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        })
    }

    /// An integer that fits 32 bits (a larger one reads as absent).
    pub fn int32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
        Ok(int_of(&Value::deserialize(d)?).and_then(|n| i32::try_from(n).ok()))
    }

    pub fn counter<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<super::CounterValue>, D::Error> {
        Ok(super::CounterValue::from_json(&Value::deserialize(d)?))
    }

    /// A list of strings (items that are not strings left out); anything else is absent.
    pub fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Array(items) => Some(
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
    }

    /// A list of texts: strings as they are, any other item as its JSON text. An object of lists
    /// (the form older recorders wrote, faults by role) gives the items of every list.
    pub fn texts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        fn item(v: Value, out: &mut Vec<String>) {
            match v {
                Value::String(s) => out.push(s),
                Value::Null => {}
                other => out.push(other.to_string()),
            }
        }
        let mut out = Vec::new();
        match Value::deserialize(d)? {
            Value::Array(items) => items.into_iter().for_each(|v| item(v, &mut out)),
            Value::Object(map) => {
                for (_, v) in map {
                    match v {
                        Value::Array(items) => items.into_iter().for_each(|v| item(v, &mut out)),
                        other => item(other, &mut out),
                    }
                }
            }
            other => item(other, &mut out),
        }
        Ok(out)
    }

    pub fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        Ok(Value::deserialize(d)?.as_bool())
    }

    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Some(s),
            _ => None,
        })
    }

    pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Array(items) => items
                .into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        })
    }

    pub fn string_map<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Object(map) => map
                .into_iter()
                .filter_map(|(k, v)| match v {
                    Value::String(s) => Some((k, s)),
                    _ => None,
                })
                .collect(),
            _ => BTreeMap::new(),
        })
    }

    pub fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(string(d)?.unwrap_or_default())
    }

    pub fn counts<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<BTreeMap<String, i64>>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Object(map) => Some(
                map.into_iter()
                    .filter_map(|(k, v)| int_of(&v).map(|n| (k, n)))
                    .collect(),
            ),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_may_be_strings_and_wrong_types_read_as_absent() {
        let d = Detail::parse(
            Kind::Observed,
            r#"{"counter": "10", "results": 3, "tasks": true, "extra": 1}"#,
        );
        let o = d.observed().unwrap();
        assert_eq!(o.counter, Some(CounterValue::One(10)));
        assert_eq!(o.results(), Some(3));
        assert_eq!(o.tasks, None);
        assert_eq!(o.other.get("extra"), Some(&Value::from(1)));
    }

    #[test]
    fn recovered_must_be_a_boolean() {
        let end = |t| Detail::parse(Kind::RunEnd, t).run_end().unwrap().recovered;
        assert_eq!(end(r#"{"recovered": true}"#), Some(true));
        assert_eq!(end(r#"{"recovered": "yes"}"#), None);
        assert_eq!(end(r#"{}"#), None);
    }

    #[test]
    fn text_that_is_not_an_object_is_said_so() {
        assert_eq!(Detail::parse(Kind::Crash, "not json"), Detail::NotAnObject);
        assert_eq!(Detail::parse(Kind::Crash, "[1]"), Detail::NotAnObject);
    }

    #[test]
    fn a_detail_key_is_the_name_its_field_is_written_under() {
        let observed = Observed {
            counter: Some(10.into()),
            ..Observed::default()
        };
        let json = serde_json::to_value(&observed).unwrap();
        assert_eq!(json[crate::detail_key!(Observed.counter).as_str()], 10);
        let crash = Crash {
            committed_rev: Some(7),
            ..Crash::default()
        };
        let json = serde_json::to_value(&crash).unwrap();
        assert_eq!(json[crate::detail_key!(Crash.committed_rev).as_str()], 7);
        // A rename would make a field's key differ from its name, which the macro spells.
        let source = include_str!("detail.rs");
        let rename = ["serde(", "rename"].concat();
        assert!(
            !source.contains(&format!("#[{rename} ="))
                && !source.contains(&format!("{rename}_all")),
            "a detail field is renamed: detail_key! would name the wrong key"
        );
    }

    #[test]
    fn run_metadata_reads_back_typed_and_leniently() {
        let config = RunConfig {
            backend: Some("sqlite-redis".into()),
            scenarios: vec!["dual-write".into()],
            endpoints: [("redis".to_string(), "local".to_string())].into(),
            ack_wait_ms: Some(2000),
            ..RunConfig::default()
        };
        let text = serde_json::to_string(&config).unwrap();
        assert_eq!(RunConfig::parse(&text), Some(config));
        let odd = RunConfig::parse(r#"{"scenarios": "x", "endpoints": [1], "cluster": "3"}"#)
            .expect("wrong types read as absent, not as an unreadable object");
        assert!(odd.scenarios.is_empty() && odd.endpoints.is_empty());
        assert_eq!(odd.cluster, Some(3));
    }

    #[test]
    fn a_detail_round_trips_through_its_text() {
        let crash = Detail::Crash(Crash {
            point: "after-commit-before-ack".into(),
            ..Crash::default()
        });
        assert_eq!(Detail::parse(Kind::Crash, &crash.to_json()), crash);
        let observed = Detail::Observed(Observed {
            counter: Some(10.into()),
            duplicates: Some([("evt-1".to_string(), 2)].into()),
            ..Observed::default()
        });
        assert_eq!(Detail::parse(Kind::Observed, &observed.to_json()), observed);
    }

    #[test]
    fn a_counter_is_a_number_or_an_object_by_key() {
        let start = |t| {
            Detail::parse(Kind::RunStart, t)
                .run_start()
                .unwrap()
                .counter_start
                .clone()
        };
        assert_eq!(
            start(r#"{"counter_start": "5"}"#),
            Some(CounterValue::One(5))
        );
        let by_key = start(r#"{"counter_start": {"apple": 3, "pear": "4", "plum": "x"}}"#);
        let expected: BTreeMap<String, i64> =
            [("apple".to_string(), 3), ("pear".to_string(), 4)].into();
        assert_eq!(by_key, Some(CounterValue::ByKey(expected)));
        let by_key = by_key.unwrap();
        assert_eq!(by_key.of_key(Some("pear")), Some(4));
        assert_eq!(by_key.of_key(None), None);
        assert_eq!(by_key.one(), None);
        assert_eq!(start(r#"{"counter_start": true}"#), None);
        let observed = Detail::Observed(Observed {
            counter: Some(CounterValue::ByKey([("apple".to_string(), 7)].into())),
            ..Observed::default()
        });
        assert!(observed.to_json().contains(r#""counter":{"apple":7}"#));
        assert_eq!(Detail::parse(Kind::Observed, &observed.to_json()), observed);
    }

    #[test]
    fn the_keys_of_a_system_run_read_back_typed() {
        let start = Detail::parse(
            Kind::RunStart,
            r#"{"records": ["task_accepted", "some_future_kind", 3], "system": {"name": "shop"},
                "faults": ["kill worker after effect_committed", {"fault": "crash"}],
                "chaos": {"seed": 7}}"#,
        );
        let start = start.run_start().unwrap();
        assert_eq!(
            start.records.as_deref(),
            Some(&["task_accepted".to_string(), "some_future_kind".to_string()][..])
        );
        assert_eq!(start.system, Some(serde_json::json!({"name": "shop"})));
        assert_eq!(
            start.faults,
            vec![
                "kill worker after effect_committed".to_string(),
                r#"{"fault":"crash"}"#.to_string()
            ]
        );
        let older = Detail::parse(
            Kind::RunStart,
            r#"{"faults": {"api": [], "relay": [{"fault": "lose-publish-ack"}]}}"#,
        );
        assert_eq!(
            older.run_start().unwrap().faults,
            vec![r#"{"fault":"lose-publish-ack"}"#.to_string()]
        );
        let crash = Detail::parse(
            Kind::Crash,
            r#"{"point": "exit", "status": "3", "announced": false}"#,
        );
        let crash = crash.crash().unwrap();
        assert_eq!((crash.status, crash.announced), (Some(3), Some(false)));
        let status = |t| Detail::parse(Kind::Crash, t).crash().unwrap().status;
        assert_eq!(status(r#"{"status": "exit status: 3"}"#), None);
        assert_eq!(status(r#"{"status": 4294967296}"#), None);
        let end = Detail::parse(
            Kind::RunEnd,
            r#"{"recovered": true, "elapsed_ms": 12, "tasks_sent": "10", "tasks_answered": 9,
                "tasks_resent": 1, "tasks_unanswered": -1}"#,
        );
        let end = end.run_end().unwrap();
        assert_eq!(
            (
                end.elapsed_ms,
                end.tasks_sent,
                end.tasks_answered,
                end.tasks_resent
            ),
            (Some(12), Some(10), Some(9), Some(1))
        );
        assert_eq!(
            end.tasks_unanswered, None,
            "a negative count reads as absent"
        );
        let fault = Detail::parse(
            Kind::Fault,
            r#"{"fault": "pause", "target": "db", "duration_ms": 250}"#,
        );
        let fault = fault.fault().unwrap();
        assert_eq!(
            (fault.target.as_deref(), fault.duration_ms),
            (Some("db"), Some(250))
        );
        assert_eq!(
            crate::detail_key!(RunEnd.tasks_unanswered).as_str(),
            "tasks_unanswered"
        );
        assert_eq!(crate::detail_key!(RunStart.records).as_str(), "records");
        assert_eq!(crate::detail_key!(Crash.announced).as_str(), "announced");
        assert_eq!(
            crate::detail_key!(Fault.duration_ms).as_str(),
            "duration_ms"
        );
    }
}
