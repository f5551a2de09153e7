//! The exit codes of the `analyzer` binary, the contract scripts rely on.

use crate::check::RunVerdict;

/// The process outcome: the exit codes `--help` documents, which scripts rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: valid.
    Valid = 0,
    /// 1: invalid.
    Invalid = 1,
    /// 2: bad input or usage.
    BadInput = 2,
    /// 3: unknown.
    Unknown = 3,
    /// 4: nothing to draw or compare (no such scenario, task, event or violation).
    NotFound = 4,
}

impl From<RunVerdict> for Exit {
    fn from(v: RunVerdict) -> Self {
        match v {
            RunVerdict::Valid => Exit::Valid,
            RunVerdict::Invalid => Exit::Invalid,
            RunVerdict::Unknown => Exit::Unknown,
        }
    }
}
