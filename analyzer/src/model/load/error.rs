//! Why a file could not be loaded: [`LoadError`], and [`FileError`], which names the file.

use std::path::PathBuf;

use outbox_trace::TraceError;

use crate::model::intern::InternError;

/// Why a file could not be loaded. Displays as one line.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The contract reader rejected the file.
    #[error("{}", one_line(.0))]
    Trace(#[from] TraceError),
    /// A batch did not have the canonical types the reader promises.
    #[error("column `{0}` is not in the canonical type after normalisation")]
    Canonical(&'static str),
    /// A string could not be interned.
    #[error(transparent)]
    Names(#[from] InternError),
    /// A run's rows are not in ascending `seq` order, so the file cannot be checked as it
    /// streams (it is then loaded whole and sorted instead).
    #[error("the rows of a run are not in ascending seq order")]
    NotInSeqOrder,
    /// A row's `detail` holds a field of the wrong type.
    #[error("the row with seq {seq}: {error}")]
    BadDetail {
        /// The row's `seq`.
        seq: u64,
        /// Which field, of which kind.
        error: outbox_trace::detail::BadDetail,
    },
}

impl LoadError {
    /// The error of the row with `seq`, whose detail could not be read.
    pub fn bad_detail(seq: u64) -> impl FnOnce(outbox_trace::detail::BadDetail) -> LoadError {
        move |error| LoadError::BadDetail { seq, error }
    }
}

/// A load error together with the file it concerns: `<path>: <reason>`, one line. The reason is
/// part of the message rather than a chained source, so `{:#}` does not repeat it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", path.display())]
pub struct FileError {
    /// The file that broke the contract, as given.
    pub path: PathBuf,
    /// How the file breaks the contract (the line after the path).
    pub error: LoadError,
}

fn one_line(e: &TraceError) -> String {
    let text = match e {
        // The path is printed by `FileError`; keep only the operating system's reason.
        TraceError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
