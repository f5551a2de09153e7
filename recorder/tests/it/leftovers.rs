//! Whatever a run started dies with the recorder, even under `kill -9`: a role's shell that left a
//! background child (which `PDEATHSIG` does not reach) is stopped by the run's watchdog; and the
//! next run on the same `--out` stops what an earlier one left.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::common::output_text;
use crate::system::{marked, none_left};

fn recorder() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
}

/// A system whose only role is a shell that leaves a background sleeper and becomes another.
fn shell_wrapped(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("system.toml");
    std::fs::write(
        &path,
        r#"
name = "wrapped"
[roles.api]
command = ["sh", "-c", "sleep 47 & exec sleep 31"]
[tasks]
command = ["true"]
count = 1
[quiet]
command = ["false"]
"#,
    )
    .unwrap();
    path
}

#[test]
fn kill_9_of_the_recorder_stops_a_role_s_background_children_too() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("OUTBOX_TEST_MARK=wrapped-{}", std::process::id());
    let (name, value) = mark.split_once('=').unwrap();
    let mut child = recorder()
        .args(["run", "--quiet", "--system"])
        .arg(shell_wrapped(dir.path()))
        .arg("--out")
        .arg(dir.path().join("run.parquet"))
        .args(["--deadline", "60s"])
        .env(name, value)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // The recorder, its watchdog, the role's shell (now `sleep 31`) and its `sleep 47`.
    while marked(&mark).len() < 4 {
        assert!(started.elapsed() < Duration::from_secs(20), "never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    none_left(&mark);
}

#[test]
fn the_next_run_on_the_same_out_stops_what_an_earlier_one_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    // A process an earlier run on this --out left: it carries that run's mark.
    let mut left = Command::new("sleep")
        .arg("60")
        .env("OUTBOX_RECORDER_OUT", std::path::absolute(&out).unwrap())
        .spawn()
        .unwrap();
    let tiny = dir.path().join("system.toml");
    std::fs::write(
        &tiny,
        "name = \"tiny\"\n[roles.api]\ncommand = [\"sleep\", \"30\"]\n[tasks]\ncommand = [\"true\"]\ncount = 1\n",
    )
    .unwrap();
    let output = recorder()
        .args(["run", "--quiet", "--system"])
        .arg(&tiny)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("stopped 1 process(es) an earlier run on this --out left running"),
        "{stderr}"
    );
    let status = left.wait().unwrap();
    assert!(status.code().is_none(), "killed by a signal: {status:?}");
}
