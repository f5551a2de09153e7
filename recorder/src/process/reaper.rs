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

/// How often adopted orphans that exited are reaped.
const REAP_ADOPTED_EVERY: Duration = Duration::from_secs(1);

/// Makes this process adopt its orphaned descendants (`PR_SET_CHILD_SUBREAPER`), and reaps those
/// that exit, every [`REAP_ADOPTED_EVERY`], on a thread of its own: a daemon's parent that exits
/// (`epmd -daemon`, a double fork) is adopted, and would stay a zombie until the recorder's end.
pub fn adopt_orphans() -> std::io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(std::io::Error::from)?;
    static REAPER: std::sync::Once = std::sync::Once::new();
    REAPER.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("orphan-reaper".into())
            .spawn(|| loop {
                std::thread::sleep(REAP_ADOPTED_EVERY);
                reap_adopted();
            });
    });
    Ok(())
}

/// Reaps every zombie child of this process that it did not start itself (an adopted orphan
/// that exited); returns how many. A child it started is left to its owner, who waits for it.
pub fn reap_adopted() -> usize {
    let me = std::process::id() as i32;
    // Held throughout: no child is started (and registered) meanwhile.
    let mut own = super::spawn::own_children();
    let adopted: Vec<i32> = processes()
        .into_iter()
        .filter(|&(pid, ppid)| ppid == me && !own.contains(pid) && state(pid) == Some('Z'))
        .map(|(pid, _)| pid)
        .collect();
    for &pid in &adopted {
        let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
    }
    own.retain_alive();
    adopted.len()
}

/// The state letter of process `pid` (`R`, `S`, `Z`, ...).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
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

    #[test]
    fn an_adopted_orphan_that_exited_is_reaped_and_a_child_of_our_own_is_not() {
        adopt_orphans().unwrap();
        // A double fork: the middle shell exits at once, its child (a short sleep) is adopted
        // and exits later, a zombie of this process until reaped.
        let mut sh = std::process::Command::new("sh");
        sh.args(["-c", "(sleep 0.2 &) ; exit 0"]);
        let status = crate::process::spawn::spawn_std(sh)
            .unwrap()
            .wait()
            .unwrap();
        assert!(status.success());
        let own = crate::process::spawn::spawn_std(std::process::Command::new("true")).unwrap();
        let me = std::process::id() as i32;
        let zombie = |pid: i32| state(pid) == Some('Z');
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        // The reaper thread takes the orphan's zombie away; our own child's stays ours.
        loop {
            let adopted_zombies = processes()
                .into_iter()
                .filter(|&(pid, ppid)| ppid == me && pid != own.id() as i32 && zombie(pid))
                .count();
            if adopted_zombies == 0 && zombie(own.id() as i32) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "an adopted zombie was left"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut own = own;
        assert!(
            own.wait().unwrap().success(),
            "its owner still waits for it"
        );
    }
}
