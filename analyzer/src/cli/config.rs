//! Each command's arguments resolved into what it runs on: validated, defaults applied.

use std::path::PathBuf;

use super::args::CheckArgs;

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
}

impl From<CheckArgs> for CheckConfig {
    fn from(a: CheckArgs) -> Self {
        CheckConfig {
            paths: a.paths,
            format: if a.json {
                CheckFormat::Json
            } else {
                CheckFormat::Text
            },
        }
    }
}
