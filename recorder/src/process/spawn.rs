//! Starting a child process: the one place the recorder sets up how its children run.
//!
//! Every child (an actor life, a local etcd, nats-server or redis-server, a process of a user's
//! system) is made by [`command`] and started by [`spawn`] (or [`std_command`] and [`spawn_std`]
//! for a caller that waits for its child without an async runtime). [`command`] gives the child:
//!
//! - a process group of its own, so a terminal's Ctrl-C (SIGINT to the whole foreground group)
//!   reaches only the recorder, which stops its children itself and records how they ended;
//! - `PDEATHSIG` SIGKILL, so a recorder killed outright (SIGKILL, a crash) takes them with it;
//! - the run's mark ([`mark::MARK`](super::mark::MARK)), which its own children inherit,
//!   so the watchdog can stop them all if the recorder is killed outright;
//! - none of the recorder's own `OUTBOX_TRACE_*` variables ([`secret_vars`]), which may hold a
//!   password or a token: what a child needs comes to it some other way (an actor's endpoints in
//!   its spec on a pipe) or in the environment the caller adds on purpose, after this.
//!
//! The kernel sends `PDEATHSIG` when the *thread* that forked the child ends, not the process.
//! The threads of a tokio runtime do end before the runtime does: after `block_in_place` hands a
//! worker's place to another thread, the old one goes back to the blocking pool, which lets it go
//! after ten idle seconds. So [`spawn`] forks on one thread of its own that lives as long as the
//! recorder, never on the caller's.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt as _;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

/// The soft limit on open files the recorder started with, when [`raise_open_files`] raised it:
/// what its children get back.
static OPEN_FILES_SOFT: OnceLock<libc::rlim_t> = OnceLock::new();

/// Raises the recorder's soft limit on open files to the hard limit: every role's connection
/// through a proxy is two descriptors, and the common soft limit of 1024 is soon reached. Its
/// children start with the soft limit it had. Returns the limit now in force.
pub fn raise_open_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let soft = limit.rlim_cur;
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                let _ = OPEN_FILES_SOFT.set(soft);
                return raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

/// The prefix of the recorder's own environment variables (`OUTBOX_TRACE_ETCD`, ...).
pub const VAR_PREFIX: &str = "OUTBOX_TRACE_";

/// The names of this process's `OUTBOX_TRACE_*` variables: what a child's environment must not
/// carry, since they may hold a password or a token.
pub fn secret_vars() -> Vec<OsString> {
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| name.as_encoded_bytes().starts_with(VAR_PREFIX.as_bytes()))
        .collect()
}

/// A command for `program` in a process group of its own, with `PDEATHSIG` SIGKILL and without
/// the recorder's secret variables: the caller adds arguments, standard streams, directory and
/// environment, then starts it with [`spawn`] (not `Command::spawn`, which would tie the child's
/// life to the calling thread).
pub fn command(program: impl AsRef<OsStr>) -> tokio::process::Command {
    std_command(program).into()
}

/// The same as [`command`], as a `std::process::Command`, for a caller that waits for its child
/// without an async runtime; started with [`spawn_std`].
pub fn std_command(program: impl AsRef<OsStr>) -> std::process::Command {
    let mut command = std::process::Command::new(program);
    command.process_group(0);
    for var in secret_vars() {
        command.env_remove(var);
    }
    // The run's mark: the watchdog stops what carries it if the recorder dies.
    if let Some(mark) = super::mark::mark() {
        command.env(super::mark::MARK, mark);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec. The signal
    // follows the forking thread, which is the spawner thread below: it lives as long as the
    // recorder.
    let soft = OPEN_FILES_SOFT.get().copied();
    unsafe {
        command.pre_exec(move || {
            if let Some(soft) = soft {
                // Async-signal-safe too: the child's soft limit on open files as it was.
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                    limit.rlim_cur = soft;
                    libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
                }
            }
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    command
}

/// Starts `command` (made by [`command`]) on the spawner thread. Call it inside the tokio runtime
/// that is to watch the child (its exit, its pipes), as `Command::spawn` would be; a program that
/// is not there gives an error of kind `NotFound`.
pub fn spawn(mut command: tokio::process::Command) -> std::io::Result<tokio::process::Child> {
    let runtime = tokio::runtime::Handle::try_current().ok();
    // Registered under the lock it was started under: the reaper never sees it unregistered.
    on_spawner_thread(move || {
        let _entered = runtime.as_ref().map(tokio::runtime::Handle::enter);
        let mut own = own_children();
        let child = command.spawn()?;
        if let Some(pid) = child.id() {
            own.insert(pid as i32);
            super::groups::note_group(pid as i32, command.as_std().get_envs());
        }
        Ok(child)
    })
}

/// Starts `command` (made by [`std_command`]) on the spawner thread.
pub fn spawn_std(mut command: std::process::Command) -> std::io::Result<std::process::Child> {
    on_spawner_thread(move || {
        let mut own = own_children();
        let child = command.spawn()?;
        own.insert(child.id() as i32);
        super::groups::note_group(child.id() as i32, command.get_envs());
        Ok(child)
    })
}

/// The children this process started itself (their owners wait for them): a zombie among its
/// children that is not one of them is an adopted orphan, for [`super::reaper`] to reap.
pub fn own_children() -> OwnChildren {
    static OWN: OnceLock<Mutex<std::collections::HashSet<i32>>> = OnceLock::new();
    OwnChildren(
        OWN.get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// The set of [`own_children`], locked.
pub struct OwnChildren(std::sync::MutexGuard<'static, std::collections::HashSet<i32>>);

impl OwnChildren {
    fn insert(&mut self, pid: i32) {
        self.0.insert(pid);
    }

    /// Whether `pid` is a child this process started.
    pub fn contains(&self, pid: i32) -> bool {
        self.0.contains(&pid)
    }

    /// Forgets the children that are gone (their pids may be used again).
    pub fn retain_alive(&mut self) {
        self.0
            .retain(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the one thread that forks every child, and waits for its result.
fn on_spawner_thread<T: Send + 'static>(
    job: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let gone = || std::io::Error::other("the recorder's process spawner thread is gone");
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = mpsc::channel::<Job>();
        // Never joined: it ends with the process. If it could not start, every spawn says so.
        let _ = std::thread::Builder::new()
            .name("process-spawner".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            });
        Mutex::new(jobs)
    });
    let (reply, result) = mpsc::sync_channel(1);
    spawner
        .lock()
        .expect("spawner lock")
        .send(Box::new(move || {
            // A panic (a tokio command started outside a runtime) is the caller's, as it would
            // be without this thread, and leaves the thread serving.
            let _ = reply.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)));
        }))
        .map_err(|_| gone())?;
    match result.recv().map_err(|_| gone())? {
        Ok(spawned) => spawned,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    #[tokio::test]
    async fn a_child_has_its_own_group_and_no_secrets() {
        // A variable no other test reads.
        std::env::set_var("OUTBOX_TRACE_SPAWN_TEST", "hunter2");
        let mut command = command("sh");
        command
            .arg("-c")
            .arg(
                "echo \"pgid=$(cut -d' ' -f5 /proc/$$/stat) pid=$$\"; \
                 echo \"secret=${OUTBOX_TRACE_SPAWN_TEST:-none} mine=$MINE\"",
            )
            .env("MINE", "kept")
            .stdout(Stdio::piped());
        let output = spawn(command).unwrap().wait_with_output().await.unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let mut lines = text.lines();
        let ids = lines.next().unwrap();
        let (pgid, pid) = ids.split_once(' ').unwrap();
        assert_eq!(
            pgid.trim_start_matches("pgid="),
            pid.trim_start_matches("pid=")
        );
        assert_eq!(lines.next().unwrap(), "secret=none mine=kept");
    }

    #[test]
    fn a_missing_program_is_not_found() {
        let err = spawn_std(std_command("/nonexistent/outbox-trace-nothing")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn the_death_signal_is_sigkill() {
        // /proc/PID/status does not show PDEATHSIG; a child reads its own with prctl.
        let mut command = std_command("python3");
        command
            .args([
                "-c",
                "import ctypes; l = ctypes.CDLL(None); s = ctypes.c_int(); \
                 l.prctl(2, ctypes.byref(s)); print(s.value)",
            ])
            .stdout(Stdio::piped());
        let output = spawn_std(command).unwrap().wait_with_output().unwrap();
        assert_eq!(String::from_utf8(output.stdout).unwrap().trim(), "9");
    }

    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        let mut child = std::thread::spawn(|| {
            let mut command = std_command("sleep");
            command.arg("30");
            spawn_std(command)
        })
        .join()
        .unwrap()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let alive = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        assert!(alive, "the child died with the thread that asked for it");
    }
}
