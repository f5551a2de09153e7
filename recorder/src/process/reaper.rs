//! Nothing a run started outlives its scenario: the recorder becomes a child subreaper, so a
//! process that detaches from its parent (a daemon started by a role's shell, `setsid` and all)
//! is adopted by the recorder rather than by init, and at the end of a scenario everything that
//! still descends from the recorder is killed and reaped.
//!
//! Only processes the scenario no longer needs are swept: a caller sweeps after it stopped (and
//! waited for) every process it started itself, so what is left are the strays.
//!
//! Scenarios that run at once each sweep their own. A descendant belongs to a scenario by its
//! [`SCENARIO_MARK`], else by the process group it was started in (a process that dropped its
//! environment, `env -i`, `sudo`, `su -`, keeps its group), else by its parent. One that no
//! scenario can claim (an orphan that dropped both its environment and its group) is swept with
//! the scenario that ends when no other scenario holds processes, and at the end of the run.

use std::collections::HashMap;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

use super::groups::{forget_groups, group_owners};
use super::mark::SCENARIO_MARK;

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
        .filter(|p| p.ppid == me && !own.contains(p.pid) && state(p.pid) == Some('Z'))
        .map(|p| p.pid)
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
    owned_descendants()
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// Every process that descends from this one but the watchdog, with the scenario it belongs to
/// (its mark, else its process group's, else its parent's), if any.
fn owned_descendants() -> Vec<(i32, Option<String>)> {
    let me = std::process::id() as i32;
    let groups = group_owners();
    let mut children: HashMap<i32, Vec<Proc>> = HashMap::new();
    for process in processes() {
        children.entry(process.ppid).or_default().push(process);
    }
    let mut found = Vec::new();
    let mut next: Vec<(i32, Option<String>)> = vec![(me, None)];
    while let Some((parent, parent_owner)) = next.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if super::mark::is_watchdog(child.pid) {
                continue;
            }
            let owner = scenario_of(child.pid)
                .or_else(|| groups.get(&child.pgid).cloned())
                .or_else(|| parent_owner.clone());
            found.push((child.pid, owner.clone()));
            next.push((child.pid, owner));
        }
    }
    found
}

/// One process as `/proc/PID/stat` tells it.
struct Proc {
    pid: i32,
    ppid: i32,
    pgid: i32,
}

/// Every process in `/proc`.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so read after
        // the last `)`.
        let mut after = stat[stat.rfind(')')? + 1..].split_whitespace().skip(1);
        let ppid = after.next()?.parse().ok()?;
        let pgid = after.next()?.parse().ok()?;
        Some(Proc { pid, ppid, pgid })
    })
    .collect()
}

/// The scenario named by process `pid`'s [`SCENARIO_MARK`], if its environment holds one.
fn scenario_of(pid: i32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{SCENARIO_MARK}=");
    env.split(|b| *b == 0)
        .find_map(|v| v.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Kills every process that still descends from this one and reaps those that end up as its
/// children; returns how many were killed. With `scenario`, only that scenario's (see the
/// module's docs), and those no scenario can claim when no other scenario holds processes.
pub async fn sweep(scenario: Option<&str>) -> usize {
    let mut owned = owned_descendants();
    let others_live = forget_groups(scenario);
    if let Some(scenario) = scenario {
        owned.retain(|(_, owner)| match owner {
            Some(owner) => owner == scenario,
            None => !others_live,
        });
    }
    let strays: Vec<i32> = owned.into_iter().map(|(pid, _)| pid).collect();
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

    /// Starts, for scenario `scenario`, a shell that leaves `sleep SECONDS` behind, started as
    /// `how` (`env -i`, `setsid env -i`) and exits; returns once the sleeper runs, with its pid.
    fn leave_sleeper(scenario: &str, how: &str, seconds: &str) -> i32 {
        let mut sh = crate::process::spawn::std_command("sh");
        sh.env(SCENARIO_MARK, scenario).args([
            "-c",
            &format!("({how} sleep {seconds} >/dev/null 2>&1 &) ; exit 0"),
        ]);
        let status = crate::process::spawn::spawn_std(sh)
            .unwrap()
            .wait()
            .unwrap();
        assert!(status.success());
        let wanted = format!("sleep\0{seconds}\0");
        for _ in 0..200 {
            let found = descendants().into_iter().find(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
            });
            if let Some(pid) = found {
                return pid;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the sleeper never ran");
    }

    fn alive(pid: i32) -> bool {
        kill(Pid::from_raw(pid), None).is_ok() && state(pid) != Some('Z')
    }

    #[tokio::test]
    async fn a_process_that_dropped_its_environment_is_swept_with_its_scenario_only() {
        adopt_orphans().unwrap();
        let mine = leave_sleeper("scenario-a", "env -i", "31.25");
        let theirs = leave_sleeper("scenario-b", "env -i", "31.5");
        assert!(scenario_of(mine).is_none(), "env -i dropped the mark");
        assert!(sweep(Some("scenario-a")).await >= 1);
        assert!(!alive(mine), "scenario-a's sleeper is gone");
        assert!(
            alive(theirs),
            "scenario-b's sleeper is not scenario-a's to stop"
        );
        sweep(Some("scenario-b")).await;
        assert!(!alive(theirs));
    }

    #[tokio::test]
    async fn a_process_no_scenario_can_claim_waits_for_the_last_scenario_or_the_run() {
        adopt_orphans().unwrap();
        let ownerless = leave_sleeper("scenario-c", "setsid env -i", "32.25");
        let other = leave_sleeper("scenario-d", "", "32.5");
        sweep(Some("scenario-c")).await;
        assert!(
            alive(ownerless),
            "scenario-d still runs: it may be scenario-d's"
        );
        sweep(Some("scenario-d")).await;
        assert!(!alive(ownerless), "the last scenario sweeps it");
        assert!(!alive(other));
        let late = leave_sleeper("scenario-e", "setsid env -i", "32.75");
        let _ = leave_sleeper("scenario-f", "", "33.25");
        sweep(None).await;
        assert!(!alive(late), "the run's end sweeps it");
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
                .filter(|p| p.ppid == me && p.pid != own.id() as i32 && zombie(p.pid))
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
