//! A system run, resolved from the command line and the system file before anything starts.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::file::System;
use crate::fault::spec::Nemesis;
use crate::process::mask::{is_secret_name, mask_header_list, mask_secrets};

/// Everything `recorder run --system` needs.
#[derive(Debug, Clone)]
pub struct SystemConfig {
    /// The system file, read and checked.
    pub system: System,
    /// The scenarios to run, in order, with their own faults.
    pub scenarios: Vec<(String, Vec<Nemesis>)>,
    /// `--fault`: added to every scenario.
    pub faults: Vec<Nemesis>,
    /// `--env`: added to every process's environment.
    pub env: Vec<(String, String)>,
    /// Tasks per scenario (`--tasks`, else the file's `tasks.count`).
    pub tasks: u32,
    /// `--chaos` seed and window.
    pub chaos: Option<(u64, Duration)>,
    /// How long one scenario may take to become quiet.
    pub deadline: Duration,
    /// The Parquet trace.
    pub out: PathBuf,
    /// The same trace as OTLP JSON Lines.
    pub otlp: Option<PathBuf>,
    /// The lab's JSON.
    pub report: Option<PathBuf>,
    /// Print progress lines.
    pub progress: bool,
}

impl SystemConfig {
    /// The system's configuration as `run_start.detail.system` shows it: the file's content,
    /// with every credential masked (see [`crate::process::mask`]): a URL's password, a secret
    /// parameter, a setting or header named as a secret, every value of a `*_HEADERS` list.
    pub fn shown(&self) -> Value {
        let mut value = serde_json::to_value(&self.system.file).unwrap_or(Value::Null);
        mask(&mut value);
        value
    }
}

/// Masks the credentials in every string of `value`, and the whole value of a setting or header
/// whose name is a secret's.
fn mask(value: &mut Value) {
    match value {
        Value::String(s) => *s = mask_secrets(s),
        Value::Array(items) => items.iter_mut().for_each(mask),
        Value::Object(map) => {
            for (name, v) in map.iter_mut() {
                match v {
                    Value::String(s) if is_secret_name(name) => *s = "***".to_string(),
                    Value::String(s) if name.to_ascii_uppercase().ends_with("_HEADERS") => {
                        *s = mask_header_list(s)
                    }
                    _ => mask(v),
                }
            }
        }
        _ => {}
    }
}
