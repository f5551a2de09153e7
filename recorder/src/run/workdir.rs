//! A run's temporary directory (the local services' data and logs, the receiver's database): made
//! by [`create`], removed when dropped, which is on every ending the recorder lives through (a
//! normal end, an error, a signal, a panic).
//!
//! Only a SIGKILL (or a crash of the machine) leaves one behind, so each directory holds a file
//! naming its owner, and every [`create`] first removes the `outbox-trace-*` and `outbox-bench-*`
//! directories of the temp dir whose owner is gone. A directory without that file, with one it
//! cannot read, from another PID namespace, or whose owner still runs is left alone.

use std::path::Path;

use tempfile::TempDir;

/// The prefixes of the directories this module makes and sweeps.
const PREFIXES: [&str; 2] = ["outbox-trace-", "outbox-bench-"];
/// The file inside a directory that names its owner.
const OWNER: &str = ".owner";

/// A new `outbox-trace-*` directory for a recording, after removing those of killed recorders.
pub fn create() -> std::io::Result<TempDir> {
    create_with(Purpose::Run)
}

/// What a temporary directory is for: it gives the directory's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A recording (`outbox-trace-*`).
    Run,
    /// `outbox-bench`'s own services (`outbox-bench-*`).
    Bench,
}

/// A new directory for `purpose`, after removing the stale ones of killed recorders.
pub fn create_with(purpose: Purpose) -> std::io::Result<TempDir> {
    let temp = std::env::temp_dir();
    sweep(&temp);
    let prefix = match purpose {
        Purpose::Run => PREFIXES[0],
        Purpose::Bench => PREFIXES[1],
    };
    // Only its owner may enter it: it holds services' data and a system's files.
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&temp)?;
    // Without /proc the owner cannot be told, and the directory is only removed on our own end.
    if let Ok(me) = Owner::me() {
        std::fs::write(dir.path().join(OWNER), me.line())?;
    }
    Ok(dir)
}

/// Removes the directories under `temp` whose owner is dead; returns how many.
pub fn sweep(temp: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        // A real directory, not a link someone planted to make us delete elsewhere.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let Some(owner) = std::fs::read_to_string(path.join(OWNER))
            .ok()
            .and_then(|text| Owner::parse(&text))
        else {
            continue;
        };
        if owner.is_gone() && std::fs::remove_dir_all(&path).is_ok() {
            tracing::info!("removed {} (its recorder was killed)", path.display());
            removed += 1;
        }
    }
    removed
}

/// Who made a directory: the process, when it started (a later process may get the same pid) and
/// its PID namespace (a pid means nothing in another container sharing the temp dir).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid: i32,
    start: u64,
    namespace: String,
}

impl Owner {
    fn me() -> std::io::Result<Owner> {
        let pid = std::process::id() as i32;
        let start = start_time(pid).ok_or_else(|| std::io::Error::other("reading /proc/self"))?;
        Ok(Owner {
            pid,
            start,
            namespace: pid_namespace(),
        })
    }

    fn line(&self) -> String {
        format!("{} {} {}\n", self.pid, self.start, self.namespace)
    }

    fn parse(text: &str) -> Option<Owner> {
        let mut fields = text.split_whitespace();
        let owner = Owner {
            pid: fields.next()?.parse().ok().filter(|p| *p > 0)?,
            start: fields.next()?.parse().ok()?,
            namespace: fields.next()?.to_string(),
        };
        fields.next().is_none().then_some(owner)
    }

    /// True only when the owner surely no longer runs: same PID namespace, and the pid is free
    /// or belongs to a process that started at another time.
    fn is_gone(&self) -> bool {
        self.namespace == pid_namespace() && start_time(self.pid) != Some(self.start)
    }
}

/// The start time of process `pid` in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from the last `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// This process's PID namespace, as `/proc/self/ns/pid` names it (`pid:[4026531836]`).
fn pid_namespace() -> String {
    std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string().replace(char::is_whitespace, "_"))
        .unwrap_or_else(|_| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stale_dir(temp: &Path, name: &str, owner: Option<&str>) -> std::path::PathBuf {
        let dir = temp.join(name);
        std::fs::create_dir_all(dir.join("etcd")).unwrap();
        if let Some(line) = owner {
            std::fs::write(dir.join(OWNER), line).unwrap();
        }
        dir
    }

    #[test]
    fn only_directories_of_dead_owners_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let me = Owner::me().unwrap();
        // A child that has exited: its pid is free (or, if reused, started at another time).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id() as i32;
        child.wait().unwrap();
        let dead = Owner {
            pid: dead_pid,
            start: 1,
            ..me.clone()
        };
        let alive_reused = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        let elsewhere = Owner {
            namespace: "pid:[1]".into(),
            ..dead.clone()
        };
        let gone = stale_dir(temp.path(), "outbox-trace-dead", Some(&dead.line()));
        let bench = stale_dir(temp.path(), "outbox-bench-dead", Some(&dead.line()));
        let reused = stale_dir(
            temp.path(),
            "outbox-trace-reused",
            Some(&alive_reused.line()),
        );
        let live = stale_dir(temp.path(), "outbox-trace-live", Some(&me.line()));
        let unmarked = stale_dir(temp.path(), "outbox-trace-unmarked", None);
        let garbled = stale_dir(temp.path(), "outbox-trace-garbled", Some("12 x"));
        let foreign = stale_dir(temp.path(), "outbox-trace-foreign", Some(&elsewhere.line()));
        let other = stale_dir(temp.path(), "something-else", Some(&dead.line()));
        assert_eq!(sweep(temp.path()), 3);
        for removed in [&gone, &bench, &reused] {
            assert!(!removed.exists(), "{} removed", removed.display());
        }
        for kept in [&live, &unmarked, &garbled, &foreign, &other] {
            assert!(kept.exists(), "{} kept", kept.display());
        }
    }

    #[test]
    fn a_new_directory_is_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        for purpose in [Purpose::Run, Purpose::Bench] {
            let dir = create_with(purpose).unwrap();
            let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", dir.path().display());
        }
    }

    #[test]
    fn a_new_directory_names_its_living_owner() {
        let dir = create().unwrap();
        let owner = Owner::parse(&std::fs::read_to_string(dir.path().join(OWNER)).unwrap());
        assert_eq!(owner, Some(Owner::me().unwrap()));
        assert!(!owner.unwrap().is_gone());
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }
}
