//! The system file's tables and keys, as serde reads and writes them: the services, the
//! environment, the commands, the roles and the tasks (the named scenarios and their faults are
//! [`ScenarioSpec`], beside the checks that parse them).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fault::duration::{parse_duration, show_duration};
use crate::fault::protocols::Wire;
use crate::system::template::Template;

/// The whole file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SystemFile {
    /// The system's name: the trace's `backend` column is `system:<name>`.
    pub name: String,
    /// The kinds the service reports (`run_start.detail.records`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<String>>,
    /// `run_start.detail.counter_start`: a number, or a table by counter key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_start: Option<serde_json::Value>,
    /// Services started before the roles, each in a directory of its own.
    #[serde(default)]
    pub services: BTreeMap<String, ServiceSpec>,
    /// Environment for every command of the file.
    #[serde(default)]
    pub env: BTreeMap<String, Template>,
    /// Run once, after the services are ready, before any role starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<CommandSpec>,
    /// Returns the stores to their state right after `setup` (truncate, purge): with it,
    /// `explore` keeps each job slot's services between schedules and runs `reset`, then
    /// `setup`, before each one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<CommandSpec>,
    /// The roles: each instance is one OS process.
    pub roles: BTreeMap<String, RoleSpec>,
    /// How tasks are made and sent.
    pub tasks: TasksSpec,
    /// Exits 0 when nothing is left to move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quiet: Option<CommandSpec>,
    /// Prints one JSON object: the `observed` row's detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<CommandSpec>,
    /// Named scenarios, each with its faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioSpec>,
    /// Steps read from the wire, by kind (see [`crate::system::steps`]).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub steps: crate::system::steps::spec::StepsSpec,
}

/// A command line: program and arguments, each a template.
pub type CommandLine = Vec<Template>;

/// A service the recorder starts, checks and may restart.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSpec {
    /// The command; `${port}` is a free loopback port, `${dir}` the service's own directory.
    pub command: CommandLine,
    /// How to tell the service is ready.
    #[serde(default)]
    pub ready: Ready,
    /// How long it may take to get ready (default 30s).
    #[serde(
        default = "ready_timeout",
        deserialize_with = "duration",
        serialize_with = "show"
    )]
    pub ready_timeout: Duration,
    /// The protocol it speaks on its port (default `tcp`): `postgres`, `nats` and `kafka` let a
    /// wire fault lose one reply (`lose commit-reply`, `lose puback`, `lose produce-ack`).
    #[serde(default)]
    pub wire: Wire,
}

fn ready_timeout() -> Duration {
    Duration::from_secs(30)
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn show<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&show_duration(*d))
}

/// How to tell a service is ready.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Ready {
    /// `${port}` accepts a TCP connection.
    #[default]
    Tcp,
    /// The command exits 0.
    Command(CommandLine),
}

impl<'de> Deserialize<'de> for Ready {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            Command(Vec<Template>),
        }
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "tcp" => Ok(Ready::Tcp),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "ready = \"{w}\": expected \"tcp\" or a command such as [\"redis-cli\", \"-p\", \"${{port}}\", \"ping\"]"
            ))),
            Raw::Command(c) if c.is_empty() => {
                Err(serde::de::Error::custom("ready = []: the command is empty"))
            }
            Raw::Command(c) => Ok(Ready::Command(c)),
        }
    }
}

impl Serialize for Ready {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ready::Tcp => s.serialize_str("tcp"),
            Ready::Command(c) => c.serialize(s),
        }
    }
}

/// A command the recorder runs to completion.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// The command.
    pub command: CommandLine,
}

/// When a role's span export returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Export {
    /// `span.end()` returns after the export is answered (a simple span processor).
    #[default]
    Sync,
    /// The export happens later (a batch processor): a kill may lose spans.
    Async,
}

/// How a role's SDK sends its spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub enum OtlpProtocol {
    /// OTLP/HTTP with protobuf bodies.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP/HTTP with JSON bodies.
    #[serde(rename = "http/json")]
    HttpJson,
    /// OTLP/gRPC.
    #[serde(rename = "grpc")]
    Grpc,
}

impl OtlpProtocol {
    /// The value of `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn env_value(self) -> &'static str {
        match self {
            OtlpProtocol::HttpProtobuf => "http/protobuf",
            OtlpProtocol::HttpJson => "http/json",
            OtlpProtocol::Grpc => "grpc",
        }
    }
}

/// A role: its command and how many processes play it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// The command of each instance.
    pub command: CommandLine,
    /// Processes playing the role.
    #[serde(default = "one")]
    pub instances: u32,
    /// When the role's span export returns.
    #[serde(default)]
    pub export: Export,
    /// Give each instance a free port (`PORT`, `${roles.NAME.port}` for the first).
    #[serde(default)]
    pub port: bool,
    /// How the role sends its spans.
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// The role's own environment: over `[env]`, under `--env`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Template>,
}

fn one() -> u32 {
    1
}

fn default_aggregates() -> u32 {
    4
}

fn default_count() -> u32 {
    40
}

/// The tasks and how they are sent.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSpec {
    /// How many (`--tasks` overrides).
    #[serde(default = "default_count")]
    pub count: u32,
    /// Aggregates the tasks are spread over (`agg-01`, ...).
    #[serde(default = "default_aggregates")]
    pub aggregates: u32,
    /// Write one `line` per task to this role's standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The line `stdin` writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<Template>,
    /// Send each task as an HTTP request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSpec>,
    /// Run this command per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
}

/// One HTTP request per task.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// The method (default POST).
    #[serde(default = "post")]
    pub method: String,
    /// The URL.
    pub url: Template,
    /// The body, if any (sent as JSON when it parses as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Template>,
    /// Extra headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Template>,
}

fn post() -> String {
    "POST".into()
}

/// A named scenario and its faults.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The scenario column.
    pub name: String,
    /// Fault specs, as `--fault` takes them.
    #[serde(default)]
    pub faults: Vec<String>,
}
