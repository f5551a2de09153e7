//! One OS process the recorder runs and watches (a service, a role's life, a command run to its end), in
//! a process group of its own so a terminal's Ctrl-C reaches only the recorder, with
//! `PDEATHSIG` so it dies with the recorder however the recorder ends. Its output goes to a log
//! file; the last lines are kept for error messages, and its standard output may be watched line
//! by line.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, watch};

use super::spawn;

/// How long a process's output is still read after the process itself ended.
const OUTPUT_AFTER_EXIT: Duration = Duration::from_millis(250);

/// Output lines kept for error messages.
const TAIL: usize = 12;

/// The bytes of one output line held (for the last lines and a watched line's answer); the rest
/// of a longer line goes to the log only.
const LONGEST_KEPT: usize = 8 * 1024;

/// How a process ended: its exit code, or 128 + the signal that killed it.
pub type Status = i32;

/// A process that could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program is not on `PATH` (or not at the path given).
    #[error("{what}: command `{program}` not found")]
    NotFound {
        /// What the process is (`role api`, `service redis`, `setup`).
        what: String,
        /// The program.
        program: String,
    },
    /// Anything else the OS refused.
    #[error("{what}: cannot start `{program}`: {source}")]
    Io {
        /// What the process is.
        what: String,
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What to start.
pub struct Launch<'a> {
    /// What the process is, for messages (`role api`, `service redis`).
    pub what: String,
    /// Program and arguments, placeholders already expanded.
    pub argv: &'a [String],
    /// Environment added to the recorder's own (secrets removed).
    pub env: &'a [(String, String)],
    /// The working directory.
    pub cwd: &'a Path,
    /// Where its output goes.
    pub log: PathBuf,
    /// Keep its standard input open as a pipe (else it reads nothing).
    pub stdin: bool,
    /// Send every line of its standard output here too.
    pub watch_stdout: Option<mpsc::UnboundedSender<String>>,
}

/// A running (or ended) process.
pub struct Child {
    what: String,
    pid: i32,
    stdin: Option<ChildStdin>,
    exit: watch::Receiver<Option<Status>>,
    tail: Arc<Mutex<VecDeque<String>>>,
}

impl Child {
    /// Starts the process.
    pub fn spawn(launch: Launch<'_>) -> Result<Child, SpawnError> {
        let program = launch.argv.first().cloned().unwrap_or_default();
        // Its own process group and `PDEATHSIG`; the recorder's `OUTBOX_TRACE_*` variables are
        // removed before the system's environment is added.
        let mut command = spawn::command(&program);
        command
            .args(&launch.argv[1..])
            .current_dir(launch.cwd)
            .stdin(if launch.stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .envs(launch.env.iter().map(|(k, v)| (k, v)));
        let mut child = spawn::spawn(command).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => SpawnError::NotFound {
                what: launch.what.clone(),
                program: program.clone(),
            },
            _ => SpawnError::Io {
                what: launch.what.clone(),
                program: program.clone(),
                source,
            },
        })?;
        let pid = child.id().map_or(0, |p| p as i32);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&launch.log)
            .ok()
            .map(|f| Arc::new(Mutex::new(f)));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let pumps = [
            stdout.map(|s| pump(s, tail.clone(), log.clone(), launch.watch_stdout.clone())),
            stderr.map(|s| pump(s, tail.clone(), log.clone(), None)),
        ];
        let (tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            // Its output is read to its end, unless something it left behind (a daemon that
            // kept its standard output) holds the pipe open: the process itself is gone, so
            // what is already written is read for a moment and the rest is not waited for.
            for mut p in pumps.into_iter().flatten() {
                if tokio::time::timeout(OUTPUT_AFTER_EXIT, &mut p)
                    .await
                    .is_err()
                {
                    p.abort();
                }
            }
            let code = match status {
                Ok(s) => s
                    .code()
                    .or_else(|| std::os::unix::process::ExitStatusExt::signal(&s).map(|n| 128 + n))
                    .unwrap_or(-1),
                Err(_) => -1,
            };
            let _ = tx.send(Some(code));
        });
        Ok(Child {
            what: launch.what,
            pid,
            stdin,
            exit,
            tail,
        })
    }

    /// What the process is, for messages.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Its process id, which is also its process group's, while it runs.
    pub fn group(&self) -> Option<i32> {
        (self.pid > 0 && self.exited().is_none()).then_some(self.pid)
    }

    /// The exit status, if it has ended (and its output is read).
    pub fn exited(&self) -> Option<Status> {
        *self.exit.borrow()
    }

    /// Waits until the process has ended and its output is read.
    pub async fn wait(&mut self) -> Status {
        let mut rx = self.exit.clone();
        loop {
            if let Some(status) = *rx.borrow_and_update() {
                return status;
            }
            if rx.changed().await.is_err() {
                return (*rx.borrow()).unwrap_or(-1);
            }
        }
    }

    /// A future that ends with the process, independent of `self`.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Status>> {
        self.exit.clone()
    }

    /// Sends `signal` to the process's whole group.
    pub fn signal(&self, signal: Signal) {
        if self.pid > 0 && self.exited().is_none() {
            let _ = killpg(Pid::from_raw(self.pid), signal);
        }
    }

    /// SIGKILL to the group, and waits for the end.
    pub async fn kill(&mut self) -> Status {
        self.signal(Signal::SIGKILL);
        self.wait().await
    }

    /// Closes its standard input and sends SIGTERM; [`Child::exited`] tells when it is gone.
    pub fn terminate(&mut self) {
        drop(self.stdin.take());
        self.signal(Signal::SIGCONT);
        self.signal(Signal::SIGTERM);
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the end.
    pub async fn stop(&mut self, grace: Duration) -> Status {
        drop(self.stdin.take());
        self.signal(Signal::SIGTERM);
        match tokio::time::timeout(grace, self.wait()).await {
            Ok(status) => status,
            Err(_) => self.kill().await,
        }
    }

    /// Hands over the process's standard input, to be written by another task.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Writes one line to the process's standard input.
    pub async fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("standard input is closed"))?;
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await
    }

    /// The last lines of its output, joined for a one-line message.
    pub fn last_lines(&self) -> String {
        let tail = self.tail.lock().expect("tail lock");
        if tail.is_empty() {
            return "no output".to_string();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        // Quoted in error lines: credentials are masked as in the trace.
        format!(
            "last output: {}",
            crate::process::mask::mask_secrets(&lines.join(" | "))
        )
    }
}

impl Drop for Child {
    /// A process is never left behind: whatever drops it (an error, a panic) kills its group.
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
    }
}

/// Reads one output stream to its end: every byte goes to the log as it comes; of each line
/// only its first [`LONGEST_KEPT`] bytes are held, for the last lines and for `watch`, so a
/// line without an end holds no more memory than that.
fn pump(
    stream: impl AsyncRead + Unpin + Send + 'static,
    tail: Arc<Mutex<VecDeque<String>>>,
    log: Option<Arc<Mutex<std::fs::File>>>,
    watch: Option<mpsc::UnboundedSender<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::with_capacity(64 * 1024, stream);
        let mut line = Vec::new();
        loop {
            let bytes = match reader.fill_buf().await {
                Ok(b) if !b.is_empty() => b,
                _ => break,
            };
            let n = bytes.len();
            if let Some(log) = &log {
                use std::io::Write as _;
                let _ = log.lock().expect("log lock").write_all(bytes);
            }
            let mut rest = bytes;
            while let Some(at) = rest.iter().position(|&b| b == b'\n') {
                keep(&mut line, &rest[..at]);
                ended(&mut line, &tail, watch.as_ref());
                rest = &rest[at + 1..];
            }
            keep(&mut line, rest);
            reader.consume(n);
        }
        if !line.is_empty() {
            ended(&mut line, &tail, watch.as_ref());
        }
    })
}

/// Adds `bytes` to the line held, up to [`LONGEST_KEPT`].
fn keep(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = LONGEST_KEPT.saturating_sub(line.len());
    line.extend_from_slice(&bytes[..room.min(bytes.len())]);
}

/// A line ended: into the last lines, and to `watch`.
fn ended(
    line: &mut Vec<u8>,
    tail: &Mutex<VecDeque<String>>,
    watch: Option<&mpsc::UnboundedSender<String>>,
) {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    let text = String::from_utf8_lossy(line).into_owned();
    line.clear();
    {
        let mut tail = tail.lock().expect("tail lock");
        if tail.len() == TAIL {
            tail.pop_front();
        }
        tail.push_back(text.chars().take(300).collect());
    }
    if let Some(w) = watch {
        let _ = w.send(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_without_an_end_is_logged_whole_and_held_only_in_part() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let argv: Vec<String> = [
            "sh",
            "-c",
            "head -c 20000000 /dev/zero | tr '\\0' a; echo; echo done",
        ]
        .map(String::from)
        .to_vec();
        let mut child = Child::spawn(Launch {
            what: "role long".into(),
            argv: &argv,
            env: &[],
            cwd: dir.path(),
            log: log.clone(),
            stdin: false,
            watch_stdout: Some(tx),
        })
        .unwrap();
        assert_eq!(child.wait().await, 0);
        let long = rx.recv().await.unwrap();
        assert_eq!(long.len(), LONGEST_KEPT, "only the first bytes are held");
        assert!(long.bytes().all(|b| b == b'a'));
        assert_eq!(rx.recv().await.as_deref(), Some("done"));
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 20_000_000 + 1 + 5);
        assert!(
            child.last_lines().ends_with("| done"),
            "{}",
            child.last_lines()
        );
    }
}
