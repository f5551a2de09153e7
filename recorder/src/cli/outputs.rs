//! What a command line may not do to the files and processes around it, checked before anything
//! runs: an output that is an input or another output (by any spelling or symlink), one that
//! exists and is not a regular file, a symlink where the run's lock goes, and an environment that
//! sets the recorder's own `OUTBOX_RECORDER_*` variables (the mark by which a run's watchdog and
//! the next run on the same `--out` find its processes).

use std::path::{Path, PathBuf};

use outbox_trace::output::{check, Inputs, OutputError};

use crate::journal::output::sibling;
use crate::system::file::System;

/// The prefix of the variables the recorder sets on its children itself.
pub const OWN_PREFIX: &str = "OUTBOX_RECORDER_";

/// What a command line may not do, refused before anything runs (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// An output that would overwrite an input or another output, or is not a regular file.
    #[error(transparent)]
    Clobber(#[from] OutputError),
    /// A symlink where the run's lock goes: taking the lock would write through it.
    #[error("{}: is a symlink where the run's lock goes; remove it", .0.display())]
    LockLink(PathBuf),
    /// A variable the recorder sets on its children itself.
    #[error("{place}: `{key}` is the recorder's own variable (OUTBOX_RECORDER_*); remove it")]
    OwnVariable {
        /// Where it was given (`--env`, `[env]`, `roles.<role>.env`).
        place: String,
        /// The key.
        key: String,
    },
}

/// Refuses `out` and the other outputs (each with its flag) if one is an input or names the same
/// file as another, if one other than `--out` exists and is not a regular file (`--out`'s own
/// refusal says more of it), or if `<out>.lock` is a symlink.
pub fn outputs_apart(
    out: &Path,
    others: &[(&str, Option<&Path>)],
    inputs: &[&Path],
) -> Result<(), Refused> {
    let usable_out = std::fs::metadata(out).map_or(true, |m| m.is_file());
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    if usable_out {
        outputs.push(("--out", out));
    }
    outputs.extend(
        others
            .iter()
            .filter_map(|&(flag, path)| Some((flag, path?))),
    );
    check(&outputs, &Inputs::new(inputs))?;
    let lock = sibling(out, ".lock");
    if std::fs::symlink_metadata(&lock).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Refused::LockLink(lock));
    }
    Ok(())
}

/// Refuses an `OUTBOX_RECORDER_*` key in `--env`, the system file's `[env]` or a role's `env`: a
/// process given another run's mark would be killed by that run's watchdog, and one that drops
/// its own would outlive this run.
pub fn own_variables_refused(system: &System, env: &[(String, String)]) -> Result<(), Refused> {
    let given = env.iter().map(|(k, _)| ("--env".to_string(), k));
    let file = system.file.env.keys().map(|k| ("[env]".to_string(), k));
    let roles = system
        .file
        .roles
        .iter()
        .flat_map(|(r, spec)| spec.env.keys().map(move |k| (format!("roles.{r}.env"), k)));
    match given
        .chain(file)
        .chain(roles)
        .find(|(_, k)| k.starts_with(OWN_PREFIX))
    {
        Some((place, key)) => Err(Refused::OwnVariable {
            place,
            key: key.clone(),
        }),
        None => Ok(()),
    }
}
