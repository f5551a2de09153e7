//! What identifies a search (`recorder explore`), and how its schedules are spread over shards:
//! a digest of the system file and the options that decide what runs (`--resume` continues only
//! a trace of the same search), a digest of the list of schedules (the shards of one search
//! compare theirs), and the plan file `--write-plan` writes and `--plan` reads: the list, one spec a line.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// A 64-bit FNV-1a digest of `text`, as 16 hex digits: stable across builds and machines.
pub fn digest(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The digest of a list of schedules.
pub fn plan_digest(specs: &[String]) -> String {
    digest(&specs.join("\n"))
}

/// What decides which schedules a search runs and how, besides the shard's number.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    /// The system file as run_start shows it (secrets masked).
    pub shown: &'a serde_json::Value,
    /// `--env` over the file's.
    pub env: &'a [(String, String)],
    /// Tasks per scenario.
    pub tasks: u32,
    /// `--deadline`.
    pub deadline: Duration,
    /// `--pause-for`.
    pub pause_for: Duration,
    /// `--only`.
    pub only: &'a [String],
    /// `--depth 2`'s seed and budget.
    pub pairs: Option<(u64, Duration)>,
    /// The shard count (1 unsharded).
    pub shards: u32,
    /// The list given with `--plan`.
    pub plan: Option<&'a [String]>,
}

/// The search's identity: a digest of `settings`.
pub fn search_id(settings: &Settings<'_>) -> String {
    let mut text = serde_json::to_string(settings.shown).unwrap_or_default();
    for (k, v) in settings.env {
        let _ = write!(text, "\nenv {k}={v}");
    }
    let _ = write!(
        text,
        "\ntasks {}\ndeadline {:?}\npause {:?}\nshards {}",
        settings.tasks, settings.deadline, settings.pause_for, settings.shards
    );
    for w in settings.only {
        let _ = write!(text, "\nonly {w}");
    }
    if let Some((seed, budget)) = settings.pairs {
        let _ = write!(text, "\npairs {seed} {budget:?}");
    }
    if let Some(plan) = settings.plan {
        let _ = write!(text, "\nplan {}", plan_digest(plan));
    }
    digest(&text)
}

/// A plan file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Not readable.
    #[error("--plan {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// No schedule in it.
    #[error("--plan {0}: no schedule in it (one fault spec a line, as --write-plan writes)")]
    Empty(String),
    /// Not writable.
    #[error("--write-plan {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Reads a plan file: one fault spec a line; blank lines and `#` lines are skipped.
pub fn read_plan(path: &Path) -> Result<Vec<String>, PlanError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
        path: shown.clone(),
        source,
    })?;
    let specs: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if specs.is_empty() {
        return Err(PlanError::Empty(shown));
    }
    Ok(specs)
}

/// Writes `specs` as a plan file, with a first line naming its digest.
pub fn write_plan(path: &Path, specs: &[String]) -> Result<(), PlanError> {
    let mut text = format!(
        "# recorder explore plan {} ({} schedules)\n",
        plan_digest(specs),
        specs.len()
    );
    for s in specs {
        text.push_str(s);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|source| PlanError::Write {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_file_reads_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.txt");
        let specs = vec![
            "kill worker after acked".to_string(),
            "restart redis after acked 4".into(),
        ];
        write_plan(&path, &specs).unwrap();
        assert_eq!(read_plan(&path).unwrap(), specs);
        std::fs::write(&path, "# nothing\n\n").unwrap();
        assert!(matches!(read_plan(&path), Err(PlanError::Empty(_))));
        assert_ne!(plan_digest(&specs), plan_digest(&specs[..1]));
        assert_eq!(digest(""), "cbf29ce484222325");
    }
}
