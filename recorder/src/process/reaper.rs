//! Nothing a run started outlives its scenario: the recorder becomes a child subreaper, so a
//! process that detaches from its parent (a daemon started by a role's shell, `setsid` and all)
//! is adopted by the recorder rather than by init, and at the end of a scenario everything that
//! still descends from the recorder is killed and reaped.
//!
//! Only processes the scenario no longer needs are swept: a caller sweeps after it stopped (and
//! waited for) every process it started itself, so what is left are the strays.

use std::collections::HashMap;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// How long swept processes are given to die and be reaped.
const REAP_FOR: Duration = Duration::from_millis(500);

/// Makes this process adopt its orphaned descendants (`PR_SET_CHILD_SUBREAPER`).
pub fn adopt_orphans() -> std::io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)
}

/// Every process that descends from this one, read from `/proc`, but the run's watchdog (which
/// must outlive every scenario).
pub fn descendants() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (pid, ppid) in processes() {
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = Vec::new();
    let mut next = vec![me];
    while let Some(parent) = next.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            if super::mark::is_watchdog(child) {
                continue;
            }
            found.push(child);
            next.push(child);
        }
    }
    found
}

/// `(pid, ppid)` of every process in `/proc`.
fn processes() -> Vec<(i32, i32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the
        // last `)`.
        let after = &stat[stat.rfind(')')? + 1..];
        let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
        Some((pid, ppid))
    })
    .collect()
}

/// The environment variable that marks what one scenario started (its value names the
/// scenario): scenarios that run at once each sweep their own strays only.
pub const SCENARIO_MARK: &str = "OUTBOX_RECORDER_SCENARIO";

/// Whether process `pid`'s environment holds `SCENARIO_MARK=scenario`.
fn started_by(pid: i32, scenario: &str) -> bool {
    let wanted = format!("{SCENARIO_MARK}={scenario}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == wanted.as_bytes()))
}

/// Kills every process that still descends from this one (with `scenario`, only those that
/// scenario started, by their [`SCENARIO_MARK`]) and reaps those that end up as its children;
/// returns how many were killed.
pub async fn sweep(scenario: Option<&str>) -> usize {
    let mut strays = descendants();
    if let Some(scenario) = scenario {
        strays.retain(|&pid| started_by(pid, scenario));
    }
    for &pid in &strays {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    if strays.is_empty() {
        return 0;
    }
    // A killed process's own children are adopted by this one as their parent dies: reap the
    // strays (only them, never a process someone else waits for) until none is left.
    let until = tokio::time::Instant::now() + REAP_FOR;
    let mut left: Vec<i32> = strays.clone();
    while !left.is_empty() && tokio::time::Instant::now() < until {
        left.retain(|&pid| {
            !matches!(
                waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
                Ok(nix::sys::wait::WaitStatus::Exited(..)
                    | nix::sys::wait::WaitStatus::Signaled(..))
                    | Err(_)
            )
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    strays.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_detached_grandchild_is_found_and_swept() {
        adopt_orphans().unwrap();
        // A shell that starts a detached sleeper and exits at once: the sleeper is orphaned and
        // adopted by this (test) process.
        let status = std::process::Command::new("sh")
            .args(["-c", "(setsid sleep 30 >/dev/null 2>&1 &) ; exit 0"])
            .status()
            .unwrap();
        assert!(status.success());
        let mut found = Vec::new();
        for _ in 0..50 {
            found = descendants();
            if !found.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let sleeper = *found.first().expect("the sleeper is a descendant");
        assert!(sweep(None).await >= 1);
        assert!(
            kill(Pid::from_raw(sleeper), None).is_err(),
            "the sleeper is gone"
        );
    }
}
