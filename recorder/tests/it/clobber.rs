//! The recorder's outputs never destroy an input, another output or what a planted symlink
//! leads to, a device or FIFO stays what it is, and no environment a run is given can carry
//! another run's mark: each refused at once with exit 2 and one line.

use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::system::marked;

fn recorder() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
}

/// A system whose only role sleeps: it runs as long as the role lives.
fn tiny(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("system.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"tiny\"\n{extra}[roles.api]\ncommand = [\"sleep\", \"30\"]\n[tasks]\ncommand = [\"true\"]\ncount = 1\n"
        ),
    )
    .unwrap();
    path
}

/// Runs the recorder with `args`; asserts exit 2 with one line that says `says`.
fn refused(args: &[&std::ffi::OsStr], says: &str) {
    let started = Instant::now();
    let output = recorder().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );
}

macro_rules! os {
    ($($a:expr),* $(,)?) => { &[$(std::ffi::OsStr::new($a)),*] };
}

#[test]
fn an_output_that_is_an_input_another_output_or_a_fifo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    std::fs::write(&out, "an earlier trace").unwrap();
    let link = dir.path().join("link.parquet");
    std::os::unix::fs::symlink(&out, &link).unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let system = tiny(dir.path(), "");
    let lab = ["run", "--quiet", "--etcd", "http://127.0.0.1:1", "--out"];
    let (o, l, f, s) = (
        out.as_os_str(),
        link.as_os_str(),
        fifo.as_os_str(),
        system.as_os_str(),
    );
    let lab: Vec<&std::ffi::OsStr> = lab.iter().map(std::ffi::OsStr::new).collect();
    refused(
        &[&lab[..], os![o, "--otlp", f]].concat(),
        "is a FIFO, not a regular file",
    );
    refused(&[&lab[..], os![o, "--report", l]].concat(), "both name");
    refused(
        os!["run", "--system", s, "--out", o, "--otlp", s],
        "is the input",
    );
    refused(
        os!["explore", "--system", s, "--out", o, "--junit", l],
        "both name",
    );
    refused(
        os!["explore", "--system", s, "--out", o, "--json", s],
        "is the input",
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "an earlier trace");
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::read_to_string(&system).unwrap().contains("tiny"));
}

#[test]
fn a_symlink_planted_where_the_lock_goes_leaves_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("run.parquet.lock")).unwrap();
    let lab = ["run", "--quiet", "--etcd", "http://127.0.0.1:1", "--out"];
    let lab: Vec<&std::ffi::OsStr> = lab.iter().map(std::ffi::OsStr::new).collect();
    refused(
        &[&lab[..], os![out.as_os_str()]].concat(),
        "is a symlink where the run's lock goes",
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

#[test]
fn the_recorders_own_variables_cannot_be_set_in_any_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.parquet");
    let o = out.as_os_str();
    let in_file = tiny(dir.path(), "[env]\nOUTBOX_RECORDER_OUT = \"/elsewhere\"\n");
    refused(
        os!["run", "--system", in_file.as_os_str(), "--out", o],
        "[env]: `OUTBOX_RECORDER_OUT`",
    );
    let in_role = dir.path().join("role.toml");
    std::fs::write(
        &in_role,
        "name = \"tiny\"\n[roles.api]\ncommand = [\"sleep\", \"30\"]\nenv = { OUTBOX_RECORDER_SCENARIO = \"x\" }\n[tasks]\ncommand = [\"true\"]\ncount = 1\n",
    )
    .unwrap();
    refused(
        os!["explore", "--system", in_role.as_os_str(), "--out", o],
        "roles.api.env: `OUTBOX_RECORDER_SCENARIO`",
    );
}

/// A run given another `--out`'s mark would have its processes killed by a run on that `--out`
/// (and escape its own watchdog): it is refused before it starts one.
#[test]
fn env_cannot_give_a_run_another_runs_mark() {
    let dir = tempfile::tempdir().unwrap();
    let other = std::path::absolute(dir.path().join("other.parquet")).unwrap();
    let mark = format!("OUTBOX_RECORDER_OUT={}", other.display());
    let system = tiny(dir.path(), "");
    let mut run = recorder()
        .args(["run", "--quiet", "--deadline", "20s", "--system"])
        .arg(&system)
        .arg("--env")
        .arg(&mark)
        .arg("--out")
        .arg(dir.path().join("run.parquet"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut carried = false;
    let status = loop {
        carried |= !marked(&mark).is_empty();
        if let Some(status) = run.try_wait().unwrap() {
            break Some(status);
        }
        if carried || started.elapsed() > Duration::from_secs(8) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if status.is_none() {
        // Only this test's own recorder, by its pid; its watchdog stops what it started.
        let _ = run.kill();
        let _ = run.wait();
    }
    assert!(
        !carried,
        "a process of this run carried the other run's mark"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stderr}");
    assert!(
        stderr.contains("`OUTBOX_RECORDER_OUT` is the recorder's own"),
        "{stderr}"
    );
}
