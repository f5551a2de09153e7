//! One recording made for a benchmark: `recorder run` as a child process, as a user would start it.

use std::path::PathBuf;

use super::child::{self, Finished};

/// Where the benchmark's recordings go, and the recorder binary that makes them.
pub struct Bench {
    /// The `recorder` binary, run as `recorder run`.
    pub recorder: PathBuf,
    /// The results' directory.
    pub out: PathBuf,
    /// The log every child writes to.
    pub log: PathBuf,
}

impl Bench {
    /// `recorder run` with `args`; the trace at `<out>/<name>.parquet`.
    pub fn record(&self, name: &str, args: &[&str], extra: &[String]) -> anyhow::Result<Recorded> {
        let trace = self.out.join(format!("{name}.parquet"));
        let _ = std::fs::remove_file(&trace);
        let mut all: Vec<String> = vec!["run".into(), "--quiet".into(), "--out".into()];
        all.push(trace.display().to_string());
        all.extend(args.iter().map(|s| s.to_string()));
        all.extend(extra.iter().cloned());
        let finished = child::run(&self.recorder, &all, &self.log)?;
        anyhow::ensure!(
            matches!(finished.code, Some(0 | 3)),
            "recorder {} failed ({:?}); see {}",
            all.join(" "),
            finished.code,
            self.log.display()
        );
        Ok(Recorded { trace, finished })
    }
}

/// A finished recording.
pub struct Recorded {
    /// The trace file, `<out>/<name>.parquet`.
    pub trace: PathBuf,
    /// How the child ended.
    pub finished: Finished,
}
