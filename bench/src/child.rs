//! Running the recorder as a child process, as a user would, and reading back what a benchmark
//! needs: exit status, wall time and the child's peak memory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

/// How a child process ended.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// Its exit code (`None` if a signal ended it).
    pub code: Option<i32>,
    /// From the child's start to its end, as the parent measured it.
    pub wall: Duration,
    /// The largest resident set of the child and of the processes it waited for, in KiB.
    pub peak_rss_kib: u64,
}

/// Runs `program args`, its output appended to `log`, and waits for it.
pub fn run(program: &Path, args: &[String], log: &Path) -> anyhow::Result<Finished> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let err = out.try_clone()?;
    let started = Instant::now();
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our child, not yet waited for (std's Child is never waited here).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        anyhow::ensure!(
            e.kind() == std::io::ErrorKind::Interrupted,
            "waiting for {}: {e}",
            program.display()
        );
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ok(Finished {
        code,
        wall: started.elapsed(),
        peak_rss_kib: usage.ru_maxrss.max(0) as u64,
    })
}
