//! The command line as clap reads it: the commands, their arguments and their `--help` texts.
//! Nothing here runs anything; `commands` does.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use outbox_trace::{detail_key, Kind};

use crate::render::Format;

/// Exit codes, as documented in `--help`.
const EXIT_CODES: &str = "\
Exit codes:
  0  every invariant passed in every scenario (valid)
  1  at least one invariant failed (invalid)
  2  bad input or usage: unreadable file, neither Parquet nor JSON Lines, truncated, empty,
     missing column,
     wrong type, null in a required column, other schema version, duplicate seq, bad arguments
  3  nothing failed, but at least one invariant could not be decided (unknown)";

/// Checks outbox-trace/1 recordings (Parquet, JSON Lines or OTLP JSON Lines, told by content).
#[derive(Debug, Parser)]
#[command(name = "analyzer", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands: one per thing the analyzer can say about a recording.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check every (run_id, scenario) of the given traces against the outbox invariants.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Draw one task's, event's or violation's chain as a sequence diagram.
    #[command(after_help = CHAIN_EXIT_CODES)]
    Chain(ChainArgs),
    /// Draw the atomic boundaries (what each transaction held; the ACKs outside them).
    #[command(after_help = CHAIN_EXIT_CODES)]
    Boundaries(BoundariesArgs),
    /// Write the lab report: lab.json, chains, boundaries, invariant tables, report.md, ADR facts.
    #[command(after_help = REPORT_EXIT_CODES)]
    Report(ReportArgs),
    /// Compare runs side by side: verdicts, counts, counter, duration, latency per shared scenario.
    #[command(after_help = COMPARE_EXIT_CODES)]
    Compare(CompareArgs),
    /// Name the first step where two runs' chains part ways, task by task.
    #[command(after_help = DIFF_EXIT_CODES)]
    Diff(DiffArgs),
    /// Draw events per kind over time for a whole run, crashes and faults marked (SVG or PNG).
    #[command(after_help = timeline_help())]
    Timeline(TimelineArgs),
    /// Convert a trace in any accepted encoding (JSON Lines, OTLP JSON Lines, Parquet) to Parquet.
    #[command(after_help = IMPORT_HELP)]
    Import(ImportArgs),
    /// Print the invariants as one SQL statement for DuckDB, DataFusion or Spark.
    #[command(after_help = SQL_HELP)]
    Sql(SqlArgs),
}

/// What `analyzer sql` prints, and its exit codes.
const SQL_HELP: &str = "\
The statement reads a table or view named `trace` with the contract's columns (or, with --source,
the path itself: a file, a glob or a partitioned directory; DuckDB and Spark only) and returns one
row per (run_id, scenario, invariant): run_id, scenario, invariant, verdict (pass, fail, unknown),
violations (integer), reason (why it failed with skipped rows or is unknown, a pass's note, or
null), scenario_verdict (valid, invalid, unknown: the scenario's, which a named fault that never
fired makes unknown) and unfired_named (how many such faults). The verdicts are those of
`analyzer check`. With --witnesses N a second statement follows,
after a line `;`: up to N witness rows per failing invariant.

Exit codes:
  0  printed
  2  bad usage (unknown dialect or invariant, --source with a dialect that cannot read a path)";

/// Arguments of `analyzer sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The engine to print for.
    #[arg(long, value_enum)]
    pub dialect: crate::sql::Dialect,
    /// Only this invariant (repeatable; default: all), by its contract id.
    #[arg(long = "invariant", value_name = "NAME", value_parser = parse_invariant)]
    pub invariants: Vec<crate::check::Invariant>,
    /// Read this path (file, glob or directory) instead of the table `trace`.
    #[arg(long, value_name = "PATH")]
    pub source: Option<String>,
    /// Also print a statement listing up to N witness rows per failing invariant.
    #[arg(long, value_name = "N")]
    pub witnesses: Option<usize>,
    /// Read the optional column `counter_key` and check each counter on its own (tables
    /// written before the column lack it; without this flag the statement does not read it).
    #[arg(long)]
    pub counter_key: bool,
    /// Read the optional column `partition` and take a copy's position within its partition
    /// (tables written before the column lack it; without this flag the statement does not read
    /// it, and positions form one sequence).
    #[arg(long)]
    pub partition: bool,
}

/// An invariant by its contract id.
fn parse_invariant(s: &str) -> Result<crate::check::Invariant, String> {
    crate::check::Invariant::ALL
        .iter()
        .copied()
        .find(|i| i.id() == s)
        .ok_or_else(|| {
            let ids: Vec<&str> = crate::check::Invariant::ALL
                .iter()
                .map(|i| i.id())
                .collect();
            format!("no invariant `{s}` (one of: {})", ids.join(", "))
        })
}

/// What `analyzer import` reads, and its exit codes.
const IMPORT_HELP: &str = "\
The input's encoding is told by its content, not its name: Parquet (outbox-trace/1), JSON Lines
(one event per line, keys = the contract's column names; plain, gzip or zstd; an optional first
line {\"outbox_trace\": {\"schema_version\": \"1\", \"run\": {...}}}), or OpenTelemetry spans as
OTLP JSON Lines (one TracesData object per line; spans and span events carrying outbox.*
attributes, or following the messaging conventions). The rows are validated as check validates
them and written in order, zstd-compressed, with the run configuration as file metadata. Every
other command reads the same inputs directly; import saves the decoding and fixes the mapping.

Exit codes:
  0  written
  2  bad input or usage (unreadable, empty or invalid trace, duplicate seq, unwritable output)";

/// Arguments of `analyzer import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The trace to convert (Parquet, JSON Lines or OTLP JSON Lines; plain, gzip or zstd).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// The Parquet file to write.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}

/// How `analyzer timeline` cuts time, and its exit codes.
/// The timeline's `--help` text.
fn timeline_help() -> String {
    format!(
        "\
The timeline covers one run (the first in the file unless --run names one): all its scenarios on
the run's shared clock, each scenario's start marked by a grey rule, or only --scenario. Time from
the first to the last row is cut into --buckets equal buckets; each kind gets a line of rows per
bucket ({}, {}, {} and {} rows are left out). Every crash (red) and fault
(purple) is a vertical rule; the first 12 are numbered and explained under the plot (actor#incarnation
and detail.{}, or detail.{}), the rest are counted. The output's size does not grow with the
number of events. The -o extension picks the format: .png, else SVG (standard output without -o).
The same input gives the same bytes.

Exit codes:
  0  written
  2  bad input or usage (unreadable trace, bad arguments, unwritable output)
  4  nothing to draw: no such run or scenario, or no events",
        Kind::RunStart,
        Kind::RunEnd,
        Kind::Observed,
        Kind::Restart,
        detail_key!(Crash.point),
        detail_key!(Fault.fault)
    )
}

/// Arguments of `analyzer timeline`.
#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// Trace file (outbox-trace/1: Parquet, JSON Lines or OTLP JSON Lines).
    #[arg(value_name = "TRACE")]
    pub path: PathBuf,
    /// Draw only this scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Draw this run (default: the first in the file).
    #[arg(long)]
    pub run: Option<String>,
    /// The number of time buckets (1 to 2000).
    #[arg(long, default_value_t = crate::views::timeline::BUCKETS as u16, value_parser = clap::value_parser!(u16).range(1..=2000))]
    pub buckets: u16,
    /// Output file: .svg or .png (default: SVG on standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Exit codes of `analyzer compare`.
const COMPARE_EXIT_CODES: &str = "\
Exit codes:
  0  the comparison was written (verdicts are in it)
  2  bad input or usage (unreadable trace, bad arguments, unwritable plot)
  4  the runs share no scenario";

/// Exit codes of `analyzer diff`.
const DIFF_EXIT_CODES: &str = "\
Exit codes:
  0  no divergence: every aligned task took the same steps
  1  the runs diverge (the first diverging step is named)
  2  bad input or usage
  4  nothing to align: no shared scenario";

/// Arguments of `analyzer compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Trace files (outbox-trace/1: Parquet, JSON Lines or OTLP JSON Lines); each file is a run (or each run id, if a file holds several).
    #[arg(value_name = "TRACE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Compare only this scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also draw grouped bars of the counts and latencies (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Arguments of `analyzer diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first run (the reference).
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The second run.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Diff only this scenario (default: every shared scenario).
    #[arg(long)]
    pub scenario: Option<String>,
    /// text (default) or svg/png: the two chains side by side with the divergence marked.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Output file (default: standard output; PNG needs a file).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Exit codes of `analyzer report`.
const REPORT_EXIT_CODES: &str = "\
The directory gets lab.json, report.md, a chain and boundaries diagram per scenario, and
report.html: one self-contained page (no network access, nothing fetched) with the scenarios'
verdicts and figures, every kept violation (numbered as `chain --violation N`) with its witness
chain, a filter that draws any task's, event's or aggregate's chain, and the run's timeline with
crashes and faults, zoomable. --html FILE writes only that page.

Exit codes:
  0  the report was written (whatever the verdicts; they are in it)
  2  bad input or usage (unreadable trace, bad arguments, unwritable directory)";

/// Arguments of `analyzer report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace files (outbox-trace/1: Parquet, JSON Lines or OTLP JSON Lines).
    #[arg(value_name = "TRACE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Output directory (created if needed).
    #[arg(short, long, value_name = "DIR", default_value = "report")]
    pub output: PathBuf,
    /// Write only the self-contained HTML report, to this file (no directory).
    #[arg(long, value_name = "FILE", conflicts_with = "output")]
    pub html: Option<PathBuf>,
    /// Also write the lab's deliverable templates in report.md (the ADR's decision, to
    /// complete by hand).
    #[arg(long, conflicts_with = "html")]
    pub lab: bool,
}

/// Arguments of `analyzer boundaries`.
#[derive(Debug, Args)]
pub struct BoundariesArgs {
    /// Trace file (outbox-trace/1: Parquet, JSON Lines or OTLP JSON Lines).
    #[arg(value_name = "TRACE")]
    pub path: PathBuf,
    /// The scenario (default: the first with a committed effect).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Output format; by default taken from the -o extension (.svg, .png, .mmd), else text.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Output file (default: standard output; PNG needs a file).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Exit codes of the drawing commands.
const CHAIN_EXIT_CODES: &str = "\
Exit codes:
  0  written
  2  bad input or usage (unreadable trace, bad arguments, PNG without -o, unwritable output)
  4  nothing to draw: no such scenario, task, event or violation, or a task in several scenarios";

/// Arguments of `analyzer chain`.
#[derive(Debug, Args)]
pub struct ChainArgs {
    /// Trace file (outbox-trace/1: Parquet, JSON Lines or OTLP JSON Lines).
    #[arg(value_name = "TRACE")]
    pub path: PathBuf,
    /// The scenario to look in (needed when the task or event occurs in several).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Draw this task's chain.
    #[arg(long, conflicts_with_all = ["event", "violation"])]
    pub task: Option<String>,
    /// Draw this event's chain.
    #[arg(long, conflicts_with = "violation")]
    pub event: Option<String>,
    /// Draw the witness of the N-th violation `analyzer check` finds (1-based).
    #[arg(long, value_name = "N")]
    pub violation: Option<usize>,
    /// Output format; by default taken from the -o extension (.svg, .png, .mmd), else text.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Output file (default: standard output; PNG needs a file).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of `analyzer check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Trace files (Parquet, JSON Lines or OTLP JSON Lines, outbox-trace/1).
    #[arg(value_name = "TRACE", required = true)]
    pub paths: Vec<PathBuf>,
    /// Print the report as JSON (see the documented shape) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the verdicts as JUnit XML to FILE: a test suite per scenario, a test case per
    /// invariant (FAIL a failure with its witness chain, unknown skipped with its reason).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Leave this invariant out of the verdict and the exit code (repeatable), by its contract
    /// id; its line reads `<invariant> skipped`.
    #[arg(long = "skip", value_name = "INVARIANT", value_parser = parse_invariant)]
    pub skip: Vec<crate::check::Invariant>,
    /// No progress line (one shows on a terminal while a file takes more than a second to read).
    #[arg(long, short)]
    pub quiet: bool,
}
