//! What the recorder started dies with it, even under SIGKILL, where no code of the recorder
//! runs. `PDEATHSIG` reaches only a direct child (a role's shell), not what that child started in
//! the background, and a subreaper's orphans go to init when the subreaper dies. So:
//!
//! - every child carries [`MARK`] in its environment, naming the run's `--out` (set by
//!   [`spawn`](super::spawn) on every command it makes), and what it starts inherits it;
//! - a small watchdog process (the recorder's own binary, `recorder watchdog OUT`, in a process
//!   group of its own and deaf to terminal signals) waits on a pipe the recorder holds; when the
//!   recorder dies, however it dies, the pipe closes and the watchdog kills every process that
//!   carries the mark, then exits;
//! - the next run on the same `--out`, once it holds the lock, kills what carries the mark too:
//!   whatever an earlier run left (its watchdog killed as well) stops before anything starts.
//!
//! A process that clears its environment (`env -i`) drops the mark; that is the limit.

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use nix::sys::signal::{kill, signal, SigHandler, Signal};
use nix::unistd::Pid;

use super::mark::{MARK, MARKED};

/// The mark of a run writing `out`.
fn mark_of(out: &Path) -> String {
    // The file, not its spelling: its directory with every symlink resolved (the file itself
    // may not exist yet).
    let resolved = match (out.parent(), out.file_name()) {
        (Some(parent), Some(name)) => {
            let parent = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            std::fs::canonicalize(parent).ok().map(|p| p.join(name))
        }
        _ => None,
    };
    resolved
        .or_else(|| std::path::absolute(out).ok())
        .unwrap_or_else(|| out.to_path_buf())
        .display()
        .to_string()
}

/// A running watchdog: the recorder's death closes its pipe. A run that ends by itself has
/// stopped everything already: dropping the watchdog stops it and waits for it, so it outlives
/// the run by nothing.
pub struct Watchdog {
    _pipe: ChildStdin,
    child: Child,
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the watchdog of a run writing `out`, and marks every child started from now on.
pub fn start(out: &Path) -> std::io::Result<Watchdog> {
    let mark = MARKED.get_or_init(|| mark_of(out)).clone();
    let mut command = Command::new(std::env::current_exe()?);
    for var in super::spawn::secret_vars() {
        command.env_remove(var);
    }
    let mut child = command
        .arg("watchdog")
        .arg(&mark)
        .env_remove(MARK)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: a terminal's Ctrl-C is the recorder's to handle.
        .process_group(0)
        .spawn()?;
    let pipe = child.stdin.take().expect("a piped standard input");
    super::mark::set_watchdog(child.id() as i32);
    Ok(Watchdog { _pipe: pipe, child })
}

/// Kills every process (but this one) that carries the mark of `out`; returns how many. Called
/// by a run on `out` before it starts anything: what an earlier run left stops here.
pub fn stop_leftovers(out: &Path) -> usize {
    stop_marked(&mark_of(out))
}

/// `recorder watchdog MARK`: waits until standard input closes (the recorder is gone), then
/// kills every process that carries `mark`.
pub fn watchdog_main(mark: &str) -> i32 {
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: ignoring a signal installs no handler code.
        unsafe {
            let _ = signal(sig, SigHandler::SigIgn);
        }
    }
    let mut sink = [0u8; 64];
    while let Ok(n) = std::io::stdin().read(&mut sink) {
        if n == 0 {
            break;
        }
    }
    stop_marked(mark);
    0
}

/// Kills every process but this one whose environment holds `MARK=mark`.
fn stop_marked(mark: &str) -> usize {
    let me = std::process::id() as i32;
    let wanted = format!("{MARK}={mark}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == wanted.as_bytes())
            && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
        {
            killed += 1;
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spellings_of_one_file_give_one_mark() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let by_link = mark_of(&dir.path().join("link/t.parquet"));
        assert_eq!(by_link, mark_of(&real.join("t.parquet")));
        assert_eq!(
            by_link,
            mark_of(&dir.path().join("real/../link/./t.parquet"))
        );
        assert_ne!(by_link, mark_of(&real.join("u.parquet")));
    }

    #[test]
    fn only_processes_that_carry_the_mark_are_stopped() {
        let mark = format!("/tmp/watchdog-test-{}.parquet", std::process::id());
        let spawn = |value: &str| {
            Command::new("sleep")
                .arg("30")
                .env(MARK, value)
                .spawn()
                .unwrap()
        };
        let (mut marked, mut other) = (spawn(&mark), spawn("/elsewhere.parquet"));
        // Until it has exec'd, a child's environment is still the test's own.
        let wanted = format!("{MARK}={mark}");
        let carries = || {
            std::fs::read(format!("/proc/{}/environ", marked.id()))
                .is_ok_and(|e| e.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !carries() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(stop_marked(&mark), 1);
        assert!(
            marked.wait().unwrap().code().is_none(),
            "killed by a signal"
        );
        assert!(
            other.try_wait().unwrap().is_none(),
            "the other run's process runs on"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
