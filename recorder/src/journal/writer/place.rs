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

/// For a run that failed: where what it recorded is, when its trace was not joined at `out`
/// (`<out>.parts/` holds segments), as words to add to its error line.
pub fn kept_parts(out: &Path) -> Option<String> {
    let parts = parts_dir(out);
    let segments = std::fs::read_dir(&parts)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("seg-"))
        .count();
    (segments > 0).then(|| {
        format!(
            "what was recorded is kept in {}/ ({segments} Parquet segment{}; the next run \
             with this --out joins them into an .interrupted.parquet trace beside it)",
            parts.display(),
            if segments == 1 { "" } else { "s" },
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_names_the_segments_it_left() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.parquet");
        assert_eq!(kept_parts(&out), None, "no segments, nothing to say");
        std::fs::create_dir(parts_dir(&out)).unwrap();
        std::fs::write(segment_path(&parts_dir(&out), 0), b"x").unwrap();
        let said = kept_parts(&out).unwrap();
        assert!(
            said.contains("t.parquet.parts/ (1 Parquet segment;"),
            "{said}"
        );
    }
}
