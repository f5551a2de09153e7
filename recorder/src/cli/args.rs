//! The command line as clap defines it: the subcommands, their flags and the parsers of their
//! values. [`super::config`] resolves `recorder run`'s flags into a validated configuration.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use outbox_trace::{detail_key, Kind};

use crate::backend::connection::BackendKind;
use crate::driver::scenario::ScenarioName;
use crate::protocol::variant::Protocol;

/// The exit codes, as `--help` shows them.
/// The exit codes, as `--help` lists them.
fn exit_codes() -> String {
    format!(
        "\
Exit codes:
  0    every scenario ran and recovered
  1    the run failed (an error is printed)
  2    bad command line
  3    the run finished but a scenario never became quiet ({}.{} is false)
  4    a service is missing or unreachable
  129, 130, 143  ended by SIGHUP, Ctrl-C (SIGINT) or SIGTERM; what was recorded is kept",
        Kind::RunEnd,
        detail_key!(RunEnd.recovered)
    )
}

fn parse_shard(text: &str) -> Result<crate::cli::shard::Shard, String> {
    crate::cli::shard::Shard::parse(text)
}

/// Exit codes of `recorder explore`.
const EXPLORE_EXIT_CODES: &str = "\
Exit codes (as `analyzer check` gives them on the trace):
  0    the calm run and every schedule valid
  1    a violation (or the search failed: an error is printed)
  2    bad command line
  3    no violation, but something could not be decided
  4    a service is missing or unreachable
  129, 130, 143  ended by SIGHUP, Ctrl-C (SIGINT) or SIGTERM; what was recorded is kept";

/// Arguments of `recorder explore`.
#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// The system file (as `recorder run --system` takes it); its `[[scenarios]]` are not used.
    #[arg(long, value_name = "FILE")]
    pub system: PathBuf,
    /// KEY=VALUE added to every process's environment (repeatable), over the file's [env].
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Tasks per scenario (default: the file's `tasks.count`).
    #[arg(long)]
    pub tasks: Option<u32>,
    /// How long one scenario may take to become quiet.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub deadline: Duration,
    /// Schedules run at a time.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// How long a searched pause of a process lasts: longer than the broker's redelivery wait.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub pause_for: Duration,
    /// Run only the calm scenario and print what each role reports (its kinds, counts, the
    /// gaps between its steps, how late its exports arrive).
    #[arg(long)]
    pub shape: bool,
    /// The trace file to write (every schedule is a scenario of it).
    #[arg(long, default_value = "traces/explore.parquet")]
    pub out: PathBuf,
    /// Also write the search as JSON (the calm verdict, the shape, every schedule with its
    /// fault, fired count, verdict and failed invariants).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// 1: every single fault; 2: then pairs of them drawn from --seed, until --budget is spent.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub depth: u8,
    /// The seed pairs are drawn from (--depth 2).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How long pairs are drawn and run (--depth 2).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub budget: Duration,
    /// Only the schedules whose fault spec holds this text (repeatable: any of them), e.g.
    /// `--only 'kill worker'` or `--only redis`.
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Also write the verdicts as JUnit XML (a suite per schedule, a case per invariant).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Stop at the first schedule found invalid: the schedules running finish, no other starts.
    #[arg(long)]
    pub fail_fast: bool,
    /// Continue a search cut short on the same --out: the schedules its trace completed are
    /// kept, the rest run. Refused when that trace is of another search.
    #[arg(long)]
    pub resume: bool,
    /// Run only the K-th of N shares of the schedules (schedule i when i % N == K-1); the N
    /// traces checked together hold every schedule once.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<crate::cli::shard::Shard>,
    /// Run the schedules listed in FILE (as --write-plan writes it) instead of those this run's
    /// calm run enumerates: every shard then shares one list.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Write the list of schedules the calm run enumerated to FILE (with --shape: only that).
    #[arg(long, value_name = "FILE")]
    pub write_plan: Option<PathBuf>,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Records the transactional-outbox protocol against real services, with real faults.
#[derive(Debug, Parser)]
#[command(name = "recorder", version, about, after_help = exit_codes())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands; each variant's doc is its line in `recorder --help`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios and write an outbox-trace/1 Parquet file.
    #[command(after_help = exit_codes())]
    Run(Box<RunArgs>),
    /// Search your own system for the faults it does not survive: a calm run learns which steps
    /// each role reports, then every single fault on those steps runs as a scenario of its own.
    #[command(after_help = EXPLORE_EXIT_CODES)]
    Explore(Box<ExploreArgs>),
    /// List the scenarios, protocol variants and crash points.
    List,
    /// One actor life; started by `recorder run`, reads its spec on standard input.
    #[command(hide = true)]
    Actor,
    /// Kills what a run marked once the run's recorder is gone; started by `recorder run`.
    #[command(hide = true)]
    Watchdog {
        /// The run's mark.
        mark: String,
    },
    /// Serve the example payments receiver (the external effect's idempotency API) until standard
    /// input closes; its events go to standard output as JSON lines.
    Receiver(ReceiverArgs),
}

/// Arguments of `recorder receiver`.
#[derive(Debug, Args)]
pub struct ReceiverArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8088")]
    pub listen: String,
    /// The receiver's database file (stored idempotency keys and payments).
    #[arg(long, default_value = "receiver.db")]
    pub db: PathBuf,
    /// How long performing one payment takes, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub slow_ms: u64,
}

/// Arguments of `recorder run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Store and broker to run against.
    #[arg(long, value_enum, default_value = "etcd-jetstream")]
    pub backend: BackendKind,
    /// Scenario to run (repeatable), or `all` (the default; `load` with --tasks). With --system:
    /// a `[[scenarios]]` name of the file, or `all`.
    #[arg(long)]
    pub scenario: Vec<String>,
    /// Run your own system as FILE describes (a TOML system file: services, roles, tasks, quiet,
    /// observe; see "Test your own service" in the README), taking its OpenTelemetry spans in over
    /// OTLP and injecting the faults.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["backend", "protocol", "etcd", "nats", "nats_creds", "redis", "db", "cluster", "replicas", "workers", "rate", "no_trace"])]
    pub system: Option<PathBuf>,
    /// A fault injected in every scenario (repeatable): `kill ROLE after KIND [N]`,
    /// `kill ROLE at DURATION`, `pause ROLE after KIND [N] [+DELAY] for DURATION [unless alone]`,
    /// `pause ROLE at DURATION for DURATION`, `restart SERVICE at DURATION` (the lab's services:
    /// `etcd`, `nats`, `redis`).
    #[arg(long = "fault", value_name = "SPEC")]
    pub faults: Vec<String>,
    /// With --system: KEY=VALUE added to every process's environment (repeatable), over the
    /// file's [env].
    #[arg(long = "env", value_name = "KEY=VALUE", requires = "system", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Run the `load` scenario with this many tasks.
    #[arg(long)]
    pub tasks: Option<usize>,
    /// Worker processes in the `load` scenario.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Aggregates the `load` scenario's tasks are spread over.
    #[arg(long, default_value_t = 16)]
    pub aggregates: usize,
    /// Tasks the `load` scenario's API creates per second (0: as fast as the store takes them).
    #[arg(long, default_value_t = 0)]
    pub rate: u32,
    /// Inject random faults from this seed, armed on the steps the processes report: kills and
    /// pauses of the processes and, where the recorder runs them, restarts and pauses of the
    /// services (in the lab, also crash windows inside its actors). The same seed gives the same
    /// faults.
    #[arg(long)]
    pub chaos: Option<u64>,
    /// What the lab's crash windows under `--chaos` are sized for: each may fire one to six
    /// times per 4 s of it.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub chaos_window: Duration,
    /// Start a cluster of this many etcd members and this many NATS servers (JetStream clustered,
    /// the stream replicated on all of them) instead of one of each: 1, 3 or 5.
    #[arg(long, default_value_t = 1)]
    pub cluster: usize,
    /// Copies of the stream the NATS servers keep (default: the cluster's size). Set it for your
    /// own cluster given with --nats.
    #[arg(long)]
    pub replicas: Option<usize>,
    /// Record only the recorder's own rows (run_start, observed, run_end) and crashes, not the
    /// actors' steps: the same run without tracing, to measure what tracing costs.
    #[arg(long)]
    pub no_trace: bool,
    /// Protocol variant: the reference, or a deliberately broken one.
    #[arg(long, value_enum, default_value = "reference")]
    pub protocol: Protocol,
    /// The trace file to write.
    #[arg(long, default_value = "traces/run.parquet")]
    pub out: PathBuf,
    /// Also write the run as OpenTelemetry spans to this file: OTLP JSON Lines (one `TracesData`
    /// per line), one span per row with `outbox.seq` and every column as `outbox.<column>`, for
    /// Jaeger, Tempo or any OpenTelemetry tool; `analyzer check` reads it like the Parquet file.
    #[arg(long, value_name = "FILE")]
    pub otlp: Option<PathBuf>,
    /// Also write the lab's JSON (per scenario: stream messages, publishes, deliveries,
    /// redeliveries, suppressions, counter, results) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Use this etcd (http://[user:password@]host:port) instead of starting one.
    #[arg(long, env = "OUTBOX_TRACE_ETCD")]
    pub etcd: Option<String>,
    /// Use this NATS server (nats://[user:password@|token@]host:port) instead of starting one.
    #[arg(long, env = "OUTBOX_TRACE_NATS")]
    pub nats: Option<String>,
    /// A NATS credentials file (.creds) for --nats.
    #[arg(long, env = "OUTBOX_TRACE_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,
    /// Use this Redis (redis://[user:password@]host:port) instead of starting one.
    #[arg(long, env = "OUTBOX_TRACE_REDIS")]
    pub redis: Option<String>,
    /// Directory for the SQLite database files, one per scenario (default: the run's output
    /// directory, `<out-dir>/<out-stem>/`).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// The consumer's AckWait, e.g. `2s` or `1500ms`.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub ack_wait: Duration,
    /// How long the relay waits for a publish ACK.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub publish_timeout: Duration,
    /// How long one scenario may take to become quiet before it ends unrecovered.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub deadline: Duration,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `all` or one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioArg {
    /// The scenarios `all` runs: those of `ScenarioName::ALL` the chosen backend can run.
    All,
    /// One scenario by its name, including those `all` leaves out.
    One(ScenarioName),
}

/// `KEY=VALUE`, the key a plain environment variable name and not one of the recorder's own
/// (`OUTBOX_RECORDER_*`, the mark its watchdog finds a run's processes by).
fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, _)) if k.starts_with(super::outputs::OWN_PREFIX) => Err(format!(
            "`{k}` is the recorder's own variable (OUTBOX_RECORDER_*); remove it"
        )),
        Some((_, v)) if v.contains('\0') => Err(format!("`{s}`: a value cannot hold a NUL byte")),
        Some((k, v))
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

/// A built-in scenario's name, or `all`.
pub fn parse_scenario_arg(s: &str) -> Result<ScenarioArg, String> {
    if s == "all" {
        return Ok(ScenarioArg::All);
    }
    ScenarioName::parse(s).map(ScenarioArg::One).ok_or_else(|| {
        let names: Vec<&str> = ScenarioName::ALL.iter().map(|n| n.as_str()).collect();
        format!(
            "unknown scenario `{s}`; expected all, {}, load, unreported-create, unreported-intent",
            names.join(", ")
        )
    })
}

pub use crate::fault::duration::parse_duration;
