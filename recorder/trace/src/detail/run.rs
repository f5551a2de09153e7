//! The details of a run's frame: how a scenario was set up (`run_start`), how it ended
//! (`run_end`), and the recorder's configuration in the file metadata (`outbox_trace.run`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::lenient::{self, detail_struct, Lenient};
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
        /// The faults of a systematic search's schedule (`recorder explore`): tried, reported,
        /// not judged as named faults are.
        pub searched: Vec<String> = lenient::texts,
        /// The systematic search the scenario belongs to (`recorder explore`): what identifies
        /// it, its shard, and the list of schedules it enumerated.
        pub search: Option<SearchMark>,
        /// The scenario this one tries again because it could not run (its `run_end.reason`
        /// says [`COULD_NOT_RUN`]): that one is left out of the combined verdict.
        pub retry_of: Option<String>,
        /// The kinds the recorder reads from the wire (a `[steps]` mapping): rows of these kinds
        /// with `source: "wire"` are the steps judged; the service's own reports of them
        /// (`source: "span"`) are compared with them, not judged.
        pub wire_steps: Vec<String> = lenient::texts,
    }
}

detail_struct! {
    /// `run_start.detail.search`: which search a scenario of `recorder explore` belongs to.
    /// `--resume` continues only a trace of the same search; the shards of one search share
    /// `id` and should share `plan`.
    pub struct SearchMark {
        /// A digest of the system file and the options that decide what runs (tasks, deadline,
        /// pause length, `--only`, `--depth`, the shard count), 16 hex digits.
        pub id: Option<String>,
        /// `K/N`: this trace ran the schedules `i` with `i % N == K - 1`.
        pub shard: Option<String>,
        /// A digest of the whole list of schedules, before sharding (absent on the calm run,
        /// which comes before the list).
        pub plan: Option<String>,
        /// How many schedules the whole list holds.
        pub schedules: Option<u64>,
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
        /// Spans that named a kind but lacked a column it requires, by kind: they gave no row.
        pub refused: BTreeMap<String, Refused>,
        /// Spans that mapped to no kind at all.
        pub unmapped: Option<Unmapped>,
        /// Spans received again with a trace id and span id already taken (an exporter's retry):
        /// each copy after the first gave no row.
        pub duplicate_spans: Option<u64>,
        /// Every fault the scenario named, searched or drew, and how often it fired.
        pub faults: Vec<FaultTried>,
        /// What the chaos draw armed as the roles reported their steps, with each entry's
        /// fired count.
        pub chaos: Option<ChaosArmed>,
        /// What each role reported, by role: the shape the recorder learned.
        pub shape: BTreeMap<String, RoleShape>,
        /// The bytes each role's processes passed to and from each service through the
        /// recorder's proxies (`recorder run --system`), one entry per pair that passed any.
        pub wire: Vec<WireTraffic>,
    }
}

detail_struct! {
    /// One entry of `run_end.detail.wire`: what one role's processes passed through the proxies
    /// to one service, in the whole scenario.
    pub struct WireTraffic {
        /// The role.
        pub role: String,
        /// The service.
        pub service: String,
        /// Bytes from the role's processes toward the service.
        pub request_bytes: u64,
        /// Bytes from the service toward the role's processes.
        pub reply_bytes: u64,
    }
}

detail_struct! {
    /// One entry of `run_end.detail.faults`: a fault and whether it fired.
    pub struct FaultTried {
        /// The fault, in its one-line form (`kill worker after effect_committed`).
        pub spec: String,
        /// How many times it fired.
        pub fired: u64,
        /// When it first fired, in milliseconds from the scenario's first task.
        pub first_ms: Option<u64>,
        /// Why it never fired, when it did not (`worker reported no outbox_marked`).
        pub why: Option<String>,
        /// What `spec` says, as data: a reader takes the fault's parts from here rather than
        /// parsing the text (absent from traces written before it, and from other producers).
        pub form: Option<FaultForm>,
    }
}

detail_struct! {
    /// `run_end.detail.faults[].form`: a fault's parts. A fault follows a step (`after`, `nth`,
    /// `by`) or a time (`at_ms`), never both.
    pub struct FaultForm {
        /// What it does, as the text writes it: `kill`, `pause`, `restart`, `drop replies`,
        /// `drop requests`, `cut`, `partition`, `lose commit-reply`, `lose puback`,
        /// `lose produce-ack`.
        pub verb: String,
        /// The process it acts on, or whose connection it acts on: a role or an actor.
        pub target: Option<String>,
        /// The service it acts on, or the one at the other end of the connection.
        pub service: Option<String>,
        /// The step kind it follows.
        pub after: Option<String>,
        /// Which such step it follows (1-based).
        pub nth: Option<u64>,
        /// Whose step a service's fault follows (any process's when absent).
        pub by: Option<String>,
        /// When it is set off, in milliseconds from the scenario's first task.
        pub at_ms: Option<u64>,
        /// How long after the answer to that step it begins (a pause), in milliseconds.
        pub delay_ms: Option<u64>,
        /// How long it holds (a pause, dropped bytes, a partition), in milliseconds.
        pub hold_ms: Option<u64>,
        /// A pause only while another process of the role runs on (`unless alone`).
        pub unless_alone: Option<bool>,
    }
}

impl FaultForm {
    /// Where it acts, as the text names it: the target, the service, or both (`worker redis`).
    pub fn place(&self) -> String {
        [self.target.as_deref(), self.service.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// When it is set off, as the text says it: the step kind it follows, or `at 2s`.
    pub fn when(&self) -> Option<String> {
        match (&self.after, self.at_ms) {
            (Some(kind), _) => Some(kind.clone()),
            (None, Some(ms)) => Some(format!(
                "at {}",
                crate::fault::duration::show_duration(std::time::Duration::from_millis(ms))
            )),
            (None, None) => None,
        }
    }
}

detail_struct! {
    /// `run_end.detail.chaos`: what a chaos draw armed during the scenario.
    pub struct ChaosArmed {
        /// One entry per armed (role, kind) or drawn fault.
        pub armed: Vec<ArmedStep>,
    }
}

detail_struct! {
    /// One entry of `run_end.detail.chaos.armed`.
    pub struct ArmedStep {
        /// The reporting role.
        pub role: String,
        /// The step kind it reported.
        pub kind: String,
        /// The fault armed there, in its one-line form.
        pub fault: String,
        /// How many times it fired.
        pub fired: u64,
    }
}

detail_struct! {
    /// One role of `run_end.detail.shape`: what its processes reported.
    pub struct RoleShape {
        /// Its kinds, with how often and how far apart.
        pub kinds: BTreeMap<String, KindShape>,
        /// The median time from a span's end to its export's arrival, in milliseconds (near 0:
        /// the role exports synchronously).
        pub export_lag_ms: Option<u64>,
        /// The largest such time.
        pub export_lag_max_ms: Option<u64>,
    }
}

detail_struct! {
    /// One kind a role reported.
    pub struct KindShape {
        /// How many spans of it.
        pub count: u64,
        /// The median time from a step of this kind to the same process's next step, in
        /// milliseconds.
        pub gap_median_ms: Option<u64>,
        /// The 90th percentile of that time.
        pub gap_p90_ms: Option<u64>,
    }
}

lenient::objects!(
    SearchMark,
    FaultTried,
    FaultForm,
    ChaosArmed,
    ArmedStep,
    RoleShape,
    KindShape,
    WireTraffic
);

detail_struct! {
    /// One entry of `run_end.detail.refused`: the spans of one kind that gave no row.
    pub struct Refused {
        /// How many spans.
        pub spans: u64,
        /// The required columns they lacked.
        pub missing: Vec<String>,
        /// Why spans were refused for other reasons than missing columns: a kind only the
        /// recorder writes, an export without the token of a process the recorder started (or with
        /// the token of a life that has ended), a span that claims another actor than the
        /// process that sent it; for steps read from the wire, traffic that passed unread (TLS, a
        /// reader past its bounds or thrown off by a fault, a reset that cut off a commit's
        /// answer), a fact heard after its process's end, a fact the proxy gave up telling.
        pub reasons: Vec<String>,
    }
}

detail_struct! {
    /// `run_end.detail.unmapped`: the spans that mapped to no kind.
    pub struct Unmapped {
        /// How many spans.
        pub spans: u64,
        /// Up to five of their names.
        pub names: Vec<String>,
    }
}

/// The key of `run_end.detail.refused` under which spans are counted that carry `outbox.*`
/// attributes but no kind (neither on the span nor on its events): they are refused for want of
/// `kind`, and count as refused spans of every kind.
pub const NO_KIND: &str = "(none)";

/// The `run_end.detail.reason` of a scenario cut short by a signal to the recorder.
pub const INTERRUPTED: &str = "interrupted";

/// The start of `run_end.detail.reason` for a scenario that could not run: its services never
/// got ready, its setup failed, its roles could not start, or no task reached them.
pub const COULD_NOT_RUN: &str = "could not run";

/// Up to how many span names [`Unmapped`] keeps.
pub const UNMAPPED_NAMES: usize = 5;

impl Refused {
    /// Counts one more span refused for `reason` (kept once).
    pub fn add_reason(&mut self, reason: &str) {
        self.spans += 1;
        if !self.reasons.iter().any(|r| r == reason) {
            self.reasons.push(reason.to_string());
        }
    }

    /// Counts one more span lacking `missing` (its columns joined to those already named).
    pub fn add(&mut self, missing: impl IntoIterator<Item = String>) {
        self.spans += 1;
        for m in missing {
            if !self.missing.contains(&m) {
                self.missing.push(m);
            }
        }
    }
}

impl Unmapped {
    /// Counts one more span named `name` (kept if fewer than [`UNMAPPED_NAMES`] distinct names
    /// are).
    pub fn add(&mut self, name: &str) {
        self.spans += 1;
        if self.names.len() < UNMAPPED_NAMES && !self.names.iter().any(|n| n == name) {
            self.names.push(name.to_string());
        }
    }

    /// Adds another count to this one.
    pub fn merge(&mut self, other: &Unmapped) {
        self.spans += other.spans;
        for n in &other.names {
            if self.names.len() < UNMAPPED_NAMES && !self.names.contains(n) {
                self.names.push(n.clone());
            }
        }
    }
}

impl RunEnd {
    /// The faults `start` names (`run_start.detail.faults`) that never fired: each leaves its
    /// scenario untested by it. Searched and drawn faults are reported, not judged, so they are
    /// not among them.
    pub fn named_unfired<'a>(
        &'a self,
        start: &'a RunStart,
    ) -> impl Iterator<Item = &'a FaultTried> + 'a {
        self.faults
            .iter()
            .filter(move |f| f.fired == 0 && start.faults.contains(&f.spec))
    }

    /// Whether the scenario was interrupted (a signal to the recorder): `reason` says
    /// [`INTERRUPTED`].
    pub fn interrupted(&self) -> bool {
        self.reason.as_deref() == Some(INTERRUPTED)
    }

    /// Whether the scenario could not run: `reason` starts with [`COULD_NOT_RUN`].
    pub fn could_not_run(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with(COULD_NOT_RUN))
    }

    /// Whether the producer counted spans it could not map (refused or unmapped).
    pub fn spans_dropped(&self) -> bool {
        self.refused.values().any(|r| r.spans > 0)
            || self.unmapped.as_ref().is_some_and(|u| u.spans > 0)
    }
}

/// An object: the entry; a bare count is a count without columns or names.
impl Lenient for Refused {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::Object(_) => serde_json::from_value(v).ok(),
            other => u64::from_json(other).map(|spans| Refused {
                spans,
                ..Refused::default()
            }),
        }
    }
}

/// An object, or a bare count (then without names).
impl Lenient for Unmapped {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::Object(_) => serde_json::from_value(v).ok(),
            other => u64::from_json(other).map(|spans| Unmapped {
                spans,
                ..Unmapped::default()
            }),
        }
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
