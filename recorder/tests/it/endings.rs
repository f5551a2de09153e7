//! How a run ends, every way it can: Ctrl-C to the terminal's whole process group and SIGTERM
//! each stop it with its code within seconds, the trace joined, nothing left running or on disk;
//! a failed run leaves the previous trace as it was; a second recorder on the same `--out` is
//! refused; a full disk keeps what was recorded for the next run, whose salvage never overwrites.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use outbox_trace::{read_trace, Kind, Step};

use crate::common;

/// `recorder run` with `args`, its temporary directories under `tmp`, in a process group of its
/// own (as a shell puts a foreground job), with an `OUTBOX_TRACE_*` variable holding a secret.
fn start(tmp: &Path, out: &Path, args: &[&str]) -> Child {
    std::os::unix::process::CommandExt::process_group(
        Command::new(assert_cmd::cargo::cargo_bin("recorder"))
            .args(["run", "--quiet", "--out"])
            .arg(out)
            .args(args)
            .env("TMPDIR", tmp)
            .env("OUTBOX_TRACE_REDIS", "redis://:hunter2@127.0.0.1:1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
        0,
    )
    .spawn()
    .unwrap()
}

/// Waits until the journal has closed a segment in `parts`.
fn wait_for_segment(child: &mut Child, parts: &Path) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if !segments(parts).is_empty() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut said = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut err, &mut said);
            }
            panic!("the recorder ended ({status}) before a segment: {said}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no segment appeared in {}", parts.display());
}

fn segments(parts: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(parts)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "parquet"));
    files
}

/// The processes whose parent is `pid`, as (pid, name): the command name, or `actor` for a
/// `recorder actor` (started through `/proc/self/exe`).
fn children(pid: u32) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        if ppid == Some(pid.to_string().as_str()) {
            let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
            let is_actor = cmdline.split(|b| *b == 0).nth(1) == Some(b"actor".as_slice());
            let name = if is_actor {
                "actor"
            } else {
                &stat[open + 1..close]
            };
            found.push((child, name.to_string()));
        }
    }
    found
}

/// True while `pid` runs (a zombie waiting to be reaped by init does not count).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let state = s[s.rfind(')')? + 1..]
                .split_whitespace()
                .next()?
                .to_string();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Sends `signal` the way it comes in real life, waits for the recorder and checks every ending
/// promise: the code within 5 s of the signal (the actors are stopped at once and share one 1 s
/// grace; the services are killed; the run ends in under a second on a quiet machine); the trace
/// joined with its run closed as interrupted; no service or actor of the run left; nothing left
/// in the temp dir or beside `--out` but the trace.
fn ends_cleanly(send: impl FnOnce(&Child), code: i32) {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out_dir = dir.path().join("out");
    let out = out_dir.join("run.parquet");
    let mut child = start(&tmp, &out, &["--tasks", "200000", "--workers", "2"]);
    wait_for_segment(&mut child, &out_dir.join("run.parquet.parts"));
    let started = Instant::now();
    let mut spawned = Vec::new();
    while started.elapsed() < Duration::from_secs(30) {
        spawned = children(child.id());
        if ["etcd", "nats-server", "actor"]
            .iter()
            .all(|name| spawned.iter().any(|(_, comm)| comm == name))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for (pid, comm) in &spawned {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let text = String::from_utf8_lossy(&environ);
        assert!(
            !text.contains("OUTBOX_TRACE_") && !text.contains("hunter2"),
            "{comm} ({pid}) inherited the recorder's variables"
        );
    }

    // A second recorder on the same --out is refused at once, naming the first; the first's
    // segments are untouched.
    let before = segments(&out_dir.join("run.parquet.parts")).len();
    let second = Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .args([
            "run",
            "--quiet",
            "--scenario",
            "crash-before-publish",
            "--out",
        ])
        .arg(&out)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains(&format!("pid {}", child.id())), "{said}");
    assert!(segments(&out_dir.join("run.parquet.parts")).len() >= before);

    let signalled = Instant::now();
    send(&child);
    let output = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    // A bound against a hang, not a speed: the actors stop at once, the services within
    // seconds even on a loaded machine.
    assert!(
        took < Duration::from_secs(20),
        "ended {took:?} after the signal"
    );

    let trace = read_trace(&out).expect("the trace is joined and readable");
    let end = trace
        .events
        .iter()
        .rfind(|e| e.kind == Kind::RunEnd)
        .expect("the interrupted scenario is closed");
    let Ok(Step::RunEnd(end)) = Step::try_from(end) else {
        panic!("a complete run_end: {end:?}");
    };
    assert_eq!(end.recovered, Some(false));
    assert_eq!(end.reason.as_deref(), Some("interrupted"));
    for name in ["etcd", "nats-server", "actor"] {
        assert!(
            spawned.iter().any(|(_, n)| n == name),
            "{name} seen running: {spawned:?}"
        );
    }
    for (pid, comm) in &spawned {
        assert!(!running(*pid), "{comm} ({pid}) outlived the recorder");
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left in the temp dir: {left:?}");
    let beside: Vec<_> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside, ["run.parquet"], "only the trace is left beside it");
}

#[test]
fn ctrl_c_to_the_process_group_keeps_the_trace_and_leaves_nothing_behind() {
    ends_cleanly(
        |child| killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap(),
        130,
    );
}

#[test]
fn sigterm_keeps_the_trace_and_leaves_nothing_behind() {
    ends_cleanly(
        |child| kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap(),
        143,
    );
}

#[test]
fn a_failed_run_leaves_the_previous_trace_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::trace_path(dir.path());
    let previous: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    std::fs::write(&out, &previous).unwrap();
    let output = assert_cmd::Command::cargo_bin("recorder")
        .unwrap()
        .args(["run", "--quiet", "--scenario", "crash-before-publish"])
        .args(["--etcd", "http://127.0.0.1:1", "--out"])
        .arg(&out)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), previous);
    assert!(!dir.path().join("run.parquet.parts").exists());
    assert!(!dir.path().join("run.parquet.lock").exists());
    // Log lines to a pipe carry no colour codes.
    assert!(!stderr.contains('\u{1b}'), "colour codes in {stderr}");
}

#[test]
fn an_unusable_out_or_a_flag_of_the_other_backend_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |args: &[&str], out: &Path, says: &str| {
        let started = Instant::now();
        let output = assert_cmd::Command::cargo_bin("recorder")
            .unwrap()
            .args(["run", "--quiet", "--scenario", "crash-before-publish"])
            .args(args)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "refused at once"
        );
    };
    let out = dir.path().join("run.parquet");
    refused(&[], dir.path(), "is a directory");
    refused(&[], Path::new("/dev/null"), "is not a regular file");
    refused(&[], Path::new("/proc/run.parquet"), "cannot write in /proc");
    refused(
        &["--redis", "redis://127.0.0.1:6379"],
        &out,
        "--redis is for --backend sqlite-redis",
    );
    refused(&["--db", "x"], &out, "--db is for --backend sqlite-redis");
    refused(
        &[
            "--backend",
            "sqlite-redis",
            "--etcd",
            "http://127.0.0.1:2379",
        ],
        &out,
        "--etcd is for --backend etcd-jetstream",
    );
    assert!(!out.exists());
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_named_and_keeps_the_segments_for_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let disk_path = dir.path().join("disk");
    let Some(disk) = Tmpfs::mount(&disk_path, "16m") else {
        eprintln!("skipped: this machine does not allow mounting a tmpfs");
        return;
    };
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = disk.0.join("run.parquet");
    let parts = disk.0.join("run.parquet.parts");
    // An earlier salvage, which the next one must not overwrite.
    std::fs::write(disk.0.join("run.interrupted.parquet"), b"earlier").unwrap();
    let mut child = start(&tmp, &out, &["--tasks", "200000", "--workers", "2"]);
    wait_for_segment(&mut child, &parts);
    // Fill the disk.
    let mut filler = std::fs::File::create(disk.0.join("filler")).unwrap();
    let block = vec![7u8; 64 * 1024];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    drop(filler);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("no space left on {} (tmpfs)", disk.0.display())),
        "{stderr}"
    );
    assert!(last.contains("run.parquet.parts"), "{last}");
    assert!(!out.exists(), "no partial trace in place of --out");
    let kept = segments(&parts);
    assert!(!kept.is_empty(), "segments kept in {}", parts.display());
    let mut rows = 0;
    for segment in &kept {
        rows += read_trace(segment)
            .expect("each kept segment is readable")
            .events
            .len();
    }
    let strays: Vec<_> = std::fs::read_dir(&parts)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".parquet"))
        .collect();
    assert!(strays.is_empty(), "half-written files left: {strays:?}");

    // With space again, the next run joins them under a new name and then records.
    std::fs::remove_file(disk.0.join("filler")).unwrap();
    let next = assert_cmd::Command::cargo_bin("recorder")
        .unwrap()
        .args([
            "run",
            "--quiet",
            "--scenario",
            "crash-before-publish",
            "--out",
        ])
        .arg(&out)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&next.stderr);
    assert!(next.status.success(), "{said}");
    assert!(said.contains("run.interrupted-2.parquet"), "{said}");
    assert_eq!(
        std::fs::read(disk.0.join("run.interrupted.parquet")).unwrap(),
        b"earlier"
    );
    let salvaged = read_trace(&disk.0.join("run.interrupted-2.parquet")).unwrap();
    assert_eq!(salvaged.events.len(), rows, "every kept row, once");
    assert!(read_trace(&out).is_ok());
    assert!(!parts.exists());
}
