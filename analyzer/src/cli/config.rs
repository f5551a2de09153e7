//! Each command's arguments resolved into what it runs on: validated, defaults applied.

use std::path::{Path, PathBuf};

use super::args::{
    BoundariesArgs, ChainArgs, CheckArgs, CompareArgs, DiffArgs, ImportArgs, ReportArgs, SqlArgs,
    TimelineArgs,
};
use crate::render::Format;
use crate::sql::Request;
use crate::views::chain::Selector;

/// How to print a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckFormat {
    /// Text for people.
    Text,
    /// JSON for programs.
    Json,
}

/// A validated `check` configuration.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// The files, in order.
    pub paths: Vec<PathBuf>,
    /// Output format.
    pub format: CheckFormat,
    /// Invariants left out of the verdicts.
    pub skip: Vec<crate::check::Invariant>,
    /// Where to write JUnit XML too.
    pub junit: Option<PathBuf>,
    /// A progress line for a long read (on a terminal, without `--quiet`).
    pub progress: bool,
}

/// The inputs in the order given, each once: one file named twice (by any path that leads to
/// it), or standard input named twice, is one input and one run.
pub fn each_once(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    paths
        .into_iter()
        .filter(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())))
        .collect()
}

impl From<CheckArgs> for CheckConfig {
    fn from(a: CheckArgs) -> Self {
        CheckConfig {
            paths: each_once(a.paths),
            skip: a.skip,
            junit: a.junit,
            progress: !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
            format: if a.json {
                CheckFormat::Json
            } else {
                CheckFormat::Text
            },
        }
    }
}

/// The format asked for, or the one the output file's extension names, or `default`.
pub fn resolve_format(format: Option<Format>, output: Option<&Path>, default: Format) -> Format {
    if let Some(f) = format {
        return f;
    }
    match output
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        Some("mmd" | "mermaid") => Format::Mermaid,
        Some("txt") => Format::Text,
        _ => default,
    }
}

/// A picture-only command's format: PNG when the output's extension says so, else SVG.
fn picture_format(output: Option<&Path>) -> Format {
    match resolve_format(None, output, Format::Svg) {
        Format::Png => Format::Png,
        _ => Format::Svg,
    }
}

/// A resolved `chain`: which chain, in which format, where.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// The trace file, in any accepted encoding.
    pub path: PathBuf,
    /// Only this scenario's chains are candidates.
    pub scenario: Option<String>,
    /// Which chain: the first of `--task`, `--event`, `--violation` given, else the most eventful.
    pub selector: Selector,
    /// `--format`, else the output's extension, else text.
    pub format: Format,
    /// The file to write; standard output when absent.
    pub output: Option<PathBuf>,
}

impl From<ChainArgs> for ChainConfig {
    fn from(a: ChainArgs) -> Self {
        let selector = match (a.task, a.event, a.violation) {
            (Some(t), _, _) => Selector::Task(t),
            (_, Some(e), _) => Selector::Event(e),
            (_, _, Some(n)) => Selector::Violation(n),
            _ => Selector::MostEventful,
        };
        ChainConfig {
            format: resolve_format(a.format, a.output.as_deref(), Format::Text),
            path: a.path,
            scenario: a.scenario,
            selector,
            output: a.output,
        }
    }
}

/// A resolved `boundaries`.
#[derive(Debug, Clone)]
pub struct BoundariesConfig {
    /// The trace file, in any accepted encoding.
    pub path: PathBuf,
    /// Only this scenario; else the first with an effect.
    pub scenario: Option<String>,
    /// `--format`, else the output's extension, else text.
    pub format: Format,
    /// The file to write; standard output when absent.
    pub output: Option<PathBuf>,
}

impl From<BoundariesArgs> for BoundariesConfig {
    fn from(a: BoundariesArgs) -> Self {
        BoundariesConfig {
            format: resolve_format(a.format, a.output.as_deref(), Format::Text),
            path: a.path,
            scenario: a.scenario,
            output: a.output,
        }
    }
}

/// What `report` writes.
#[derive(Debug, Clone)]
pub enum ReportOutput {
    /// Every deliverable into this directory.
    Directory(PathBuf),
    /// Only the self-contained HTML page, to this file.
    Html(PathBuf),
}

/// A resolved `report`.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// The traces, in order.
    pub paths: Vec<PathBuf>,
    /// `--html` wins over the output directory.
    pub output: ReportOutput,
    /// Whether report.md carries the lab's templates to complete.
    pub lab: bool,
}

impl From<ReportArgs> for ReportConfig {
    fn from(a: ReportArgs) -> Self {
        ReportConfig {
            paths: each_once(a.paths),
            lab: a.lab,
            output: match a.html {
                Some(html) => ReportOutput::Html(html),
                None => ReportOutput::Directory(a.output),
            },
        }
    }
}

/// A resolved `compare`.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// The runs' traces, in column order.
    pub paths: Vec<PathBuf>,
    /// Only this scenario.
    pub scenario: Option<String>,
    /// Print JSON instead of the table.
    pub json: bool,
    /// Also draw the bars to this file, in this format (PNG or SVG, by its extension).
    pub plot: Option<(PathBuf, Format)>,
}

impl From<CompareArgs> for CompareConfig {
    fn from(a: CompareArgs) -> Self {
        CompareConfig {
            paths: a.paths,
            scenario: a.scenario,
            json: a.json,
            plot: a.plot.map(|p| {
                let format = picture_format(Some(&p));
                (p, format)
            }),
        }
    }
}

/// A resolved `diff`.
#[derive(Debug, Clone)]
pub struct DiffConfig {
    /// The first run's trace.
    pub a: PathBuf,
    /// The second run's trace.
    pub b: PathBuf,
    /// Only this scenario.
    pub scenario: Option<String>,
    /// `--format`, else the output's extension, else text.
    pub format: Format,
    /// The file to write; standard output when absent.
    pub output: Option<PathBuf>,
}

impl From<DiffArgs> for DiffConfig {
    fn from(a: DiffArgs) -> Self {
        DiffConfig {
            format: resolve_format(a.format, a.output.as_deref(), Format::Text),
            a: a.a,
            b: a.b,
            scenario: a.scenario,
            output: a.output,
        }
    }
}

/// A resolved `timeline`.
#[derive(Debug, Clone)]
pub struct TimelineConfig {
    /// The trace file, in any accepted encoding.
    pub path: PathBuf,
    /// Only this run; else the file's first.
    pub run: Option<String>,
    /// Only this scenario; else every scenario of the run.
    pub scenario: Option<String>,
    /// Equal time buckets the run is cut into.
    pub buckets: usize,
    /// PNG when the output's extension says so, else SVG.
    pub format: Format,
    /// The file to write; standard output when absent.
    pub output: Option<PathBuf>,
}

impl From<TimelineArgs> for TimelineConfig {
    fn from(a: TimelineArgs) -> Self {
        TimelineConfig {
            format: picture_format(a.output.as_deref()),
            path: a.path,
            run: a.run,
            scenario: a.scenario,
            buckets: usize::from(a.buckets),
            output: a.output,
        }
    }
}

/// A resolved `import`.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// The trace to convert, in any accepted encoding.
    pub input: PathBuf,
    /// The Parquet file to write (renamed into place only when complete).
    pub output: PathBuf,
}

impl From<ImportArgs> for ImportConfig {
    fn from(a: ImportArgs) -> Self {
        ImportConfig {
            input: a.input,
            output: a.output,
        }
    }
}

/// A resolved `sql`: the statement's request, and how many witness rows to list.
#[derive(Debug, Clone)]
pub struct SqlConfig {
    /// The dialect, invariants and source of the statement.
    pub request: Request,
    /// Also print the witness statement, with up to this many rows per failing invariant.
    pub witnesses: Option<usize>,
}

impl From<SqlArgs> for SqlConfig {
    fn from(a: SqlArgs) -> Self {
        SqlConfig {
            request: Request {
                dialect: a.dialect,
                invariants: a.invariants,
                counter_key: a.counter_key,
                partition: a.partition,
                source: a.source,
            },
            witnesses: a.witnesses,
        }
    }
}
