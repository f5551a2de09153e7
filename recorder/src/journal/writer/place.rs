//! Where a run's trace goes on disk: `--out` or a file of a series beside it, the directory of
//! its segments, and the error of a write that failed there.

use std::path::{Path, PathBuf};

use crate::journal::output::{self, OutputError};

/// Where `Journal::finish` puts the joined trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `--out` itself, replaced only once the new trace is whole.
    Out,
    /// The first free name of the series `<out-stem>.<tag>.parquet`, `<out-stem>.<tag>-2.parquet`.
    Series(&'static str),
}

/// `<out>.parts`, where the segments are.
pub fn parts_dir(out: &Path) -> PathBuf {
    output::sibling(out, ".parts")
}

/// The `n`-th segment in `parts`.
pub fn segment_path(parts: &Path, n: u32) -> PathBuf {
    parts.join(format!("seg-{n:06}.parquet"))
}

/// The error for a failed write of `path`: a full disk is named, with where the rows are kept.
pub(super) fn failed(e: anyhow::Error, path: &Path, kept: &Path) -> OutputError {
    if output::is_no_space(&e) {
        OutputError::NoSpace {
            disk: output::disk_of(path),
            path: path.to_path_buf(),
            kept: kept.to_path_buf(),
        }
    } else {
        OutputError::Write(e)
    }
}
