//! The command line as clap defines it: the bench's flags, the parts it can run and the range of
//! chaos seeds; and where the recorder binary and the repository's examples are found.

use std::path::{Path, PathBuf};

use clap::Parser;

/// Measure the figures the README quotes: pipeline throughput against raw etcd and JetStream
/// rates, tracing overhead, memory and trace size, chaos runs, the broken variants' detection
/// rates, the example services under chaos, and the OTLP receiver's intake.
#[derive(Debug, Parser)]
#[command(name = "outbox-bench", version, about, after_help = EXIT_CODES)]
pub struct BenchArgs {
    /// Tasks of the pipeline, overhead and chaos runs.
    #[arg(long, default_value_t = 10_000)]
    pub tasks: usize,
    /// Tasks of the memory run.
    #[arg(long, default_value_t = 100_000)]
    pub big_tasks: usize,
    /// Chaos seeds of the chaos and detection parts: `N` for 1 to N, or a range `A-B`.
    #[arg(long, default_value = "20")]
    pub seeds: Seeds,
    /// Recordings of the chaos and detection parts run at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub jobs: u32,
    /// Where the traces, the log and results.json go.
    #[arg(long, default_value = "bench")]
    pub out: PathBuf,
    /// The examples of the `system` and `explore` parts (repeatable; default: all).
    #[arg(long = "example", value_name = "EXAMPLE",
          value_parser = clap::builder::PossibleValuesParser::new(["otel-python", "node-postgres"]))]
    pub examples: Vec<String>,
    /// Only these parts (default: all), comma-separated.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub parts: Vec<BenchPart>,
    /// The `recorder` binary every recording is made with (default: `recorder` next to this
    /// binary, where `cargo build -p outbox-recorder` of the same profile puts it).
    #[arg(long, value_name = "PATH")]
    pub recorder: Option<PathBuf>,
    /// The repository's checkout, whose `examples/` the `system` part runs (default: the current
    /// directory, or the nearest directory above it that holds `examples/`).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// The exit codes, as `--help` lists them.
const EXIT_CODES: &str = "\
Exit codes:
  0    every part asked for ran
  1    a part failed (an error is printed)
  2    bad command line
  4    a service is missing or unreachable";

impl BenchArgs {
    /// The recorder binary: `--recorder`, else `recorder` next to this binary (the same
    /// `cargo build`'s output directory).
    pub fn recorder(&self) -> anyhow::Result<PathBuf> {
        if let Some(given) = &self.recorder {
            anyhow::ensure!(
                given.is_file(),
                "--recorder {}: no such file",
                given.display()
            );
            return Ok(given.clone());
        }
        let beside = std::env::current_exe()?.with_file_name("recorder");
        anyhow::ensure!(
            beside.is_file(),
            "no recorder binary at {}: build it with `cargo build --release -p outbox-recorder` \
             (the same profile as this binary), or give --recorder PATH",
            beside.display()
        );
        Ok(beside)
    }

    /// The repository's root, where the examples' system files are: `--root`, else the current
    /// directory or the nearest directory above it that holds `examples/`.
    pub fn root(&self) -> anyhow::Result<PathBuf> {
        if let Some(root) = &self.root {
            return Ok(root.clone());
        }
        let here = std::env::current_dir()?;
        here.ancestors()
            .find(|dir| dir.join("examples").is_dir())
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "no examples/ in {} or above it: run from the repository, or give --root DIR",
                    here.display()
                )
            })
    }
}

/// A range of chaos seeds: `20` is 1 to 20, `21-40` is 21 to 40.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeds {
    /// The first seed: at least 1, and never above `last`.
    pub first: u64,
    /// The last seed (inclusive).
    pub last: u64,
}

impl Seeds {
    /// The seeds, in order.
    pub fn iter(self) -> std::ops::RangeInclusive<u64> {
        self.first..=self.last
    }
}

impl std::str::FromStr for Seeds {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let number = |t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{s}` is not N or A-B (seeds are whole numbers)"))
        };
        let seeds = match s.split_once('-') {
            Some((a, b)) => Seeds {
                first: number(a)?,
                last: number(b)?,
            },
            None => Seeds {
                first: 1,
                last: number(s)?,
            },
        };
        if seeds.first == 0 || seeds.first > seeds.last {
            return Err(format!("`{s}` holds no seed (seeds count from 1)"));
        }
        Ok(seeds)
    }
}

/// A part of `outbox-bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchPart {
    /// Throughput against the raw etcd and JetStream rates.
    Pipeline,
    /// Tracing on against tracing off.
    Overhead,
    /// Peak memory and bytes per event of a large run.
    Memory,
    /// Chaos runs of the reference protocol on each backend and the cluster, checked.
    Chaos,
    /// Detection rates of the broken variants under chaos.
    Detection,
    /// The example service under `--system --chaos`: reference valid, bugs caught.
    System,
    /// `recorder explore` on the example services: schedules, time, which found each bug.
    Explore,
    /// Spans per second from the OTLP receiver's socket into a trace.
    Intake,
}

impl BenchPart {
    /// Every part, in the order they run.
    pub const ALL: [BenchPart; 8] = [
        BenchPart::Pipeline,
        BenchPart::Overhead,
        BenchPart::Memory,
        BenchPart::Chaos,
        BenchPart::Detection,
        BenchPart::System,
        BenchPart::Explore,
        BenchPart::Intake,
    ];

    /// The part's name, as `--parts` spells it.
    pub fn name(self) -> &'static str {
        match self {
            BenchPart::Pipeline => "pipeline",
            BenchPart::Overhead => "overhead",
            BenchPart::Memory => "memory",
            BenchPart::Chaos => "chaos",
            BenchPart::Detection => "detection",
            BenchPart::System => "system",
            BenchPart::Explore => "explore",
            BenchPart::Intake => "intake",
        }
    }

    /// Whether the part records with the recorder binary (the others run in this process).
    pub fn records(self) -> bool {
        self != BenchPart::Intake
    }
}

#[cfg(test)]
mod tests {
    use super::Seeds;

    #[test]
    fn seeds_are_a_count_or_a_range() {
        let seeds = |s: &str| s.parse::<Seeds>().map(|s| (s.first, s.last));
        assert_eq!(seeds("20"), Ok((1, 20)));
        assert_eq!(seeds("21-40"), Ok((21, 40)));
        assert!(seeds("0").is_err());
        assert!(seeds("40-21").is_err());
        assert!(seeds("x").is_err());
        assert!(seeds("0-3").is_err());
    }
}
