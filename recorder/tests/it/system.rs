//! `recorder run --system`: a user's own service (the Python example, traced with the standard
//! OpenTelemetry SDK and OTLP exporter) under the recorder's faults. The reference is valid under
//! every scripted fault; each planted bug is caught by the fault meant for it; a bad file or flag
//! is one line and exit 2; a command that does not exist is one line and exit 4; Ctrl-C and
//! kill -9 of the recorder leave no process behind.

use crate::common::{self, output_text, rows};

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use outbox_analyzer::check::{analyse, Report, RunVerdict, Verdict};
use outbox_trace::{Kind, Step};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system.toml")
}

/// Runs the example with `args`; returns the output and the trace path.
fn run_example(dir: &Path, args: &[&str]) -> (std::process::Output, PathBuf) {
    common::record_system(dir, &example(), args)
}

fn recorder() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
}

fn failed(report: &Report) -> Vec<(String, &'static str)> {
    report
        .scenarios
        .iter()
        .flat_map(|s| {
            let name = report
                .loaded
                .names
                .name(report.loaded.histories[s.history].scenario)
                .to_string();
            s.outcomes
                .iter()
                .filter(|o| o.verdict == Verdict::Fail)
                .map(move |o| (name.clone(), o.invariant.id()))
        })
        .collect()
}

#[test]
fn the_example_is_valid_under_every_scripted_fault() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(dir.path(), &["--scenario", "all"]);
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(
        report.verdict,
        RunVerdict::Valid,
        "failed: {:?}\n{}",
        failed(&report),
        output_text(&output)
    );
    let events = outbox_trace::read_trace(&out).unwrap().events;
    assert!(events.iter().all(|e| e.backend.starts_with("system:")));
    // Every scripted kill landed on a held export: its crash row is announced and names the step.
    let crashes = rows(&events, Kind::Crash);
    assert!(crashes.len() >= 2, "{crashes:?}");
    let points: Vec<(String, Option<bool>)> = crashes
        .iter()
        .map(|e| match common::step(e) {
            Step::Crash { crash, .. } => (crash.point.into(), crash.announced),
            _ => unreachable!(),
        })
        .collect();
    assert!(
        points.contains(&("worker:after-effect_committed".to_string(), Some(true))),
        "{points:?}"
    );
    assert!(
        points.contains(&("relay:after-publish_acked".to_string(), Some(true))),
        "{points:?}"
    );
    // Each kill is followed by the next life, and the pause is recorded.
    assert!(rows(&events, Kind::Restart).len() >= crashes.len());
    assert!(rows(&events, Kind::Fault)
        .iter()
        .any(|e| { matches!(common::step(e), Step::Fault(f) if f.fault == "pause") }));
    // Every scenario ends recovered, with every task answered, and the store read back.
    for end in rows(&events, Kind::RunEnd) {
        let Step::RunEnd(end) = common::step(end) else {
            unreachable!()
        };
        assert_eq!(end.recovered, Some(true), "{end:?}");
        assert_eq!(end.tasks_answered, end.tasks_sent, "{end:?}");
        assert_eq!(end.tasks_unanswered, Some(0), "{end:?}");
    }
    assert_eq!(
        rows(&events, Kind::Observed).len(),
        rows(&events, Kind::RunStart).len()
    );
    // The wire scenarios: the lost publish reply and the lost ACK leave the rows they cause.
    let of = |scenario: &str, kind: Kind| {
        rows(&events, kind)
            .into_iter()
            .filter(|e| e.scenario == scenario)
            .count()
    };
    assert!(of("publish-reply-lost", Kind::PublishUnacked) > 0);
    assert!(of("publish-reply-lost", Kind::DuplicateSuppressed) > 0);
    assert!(of("ack-lost", Kind::Redelivered) > 0);
    assert!(of("ack-lost", Kind::DuplicateSuppressed) > 0);
}

#[test]
fn chaos_alone_is_one_scenario_with_the_seeds_plan_and_the_example_stays_valid() {
    let dir = tempfile::tempdir().unwrap();
    let (output, out) = run_example(dir.path(), &["--chaos", "3", "--chaos-window", "2s"]);
    assert!(output.status.success(), "{}", output_text(&output));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(report.verdict, RunVerdict::Valid, "{:?}", failed(&report));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    assert!(events.iter().all(|e| e.scenario == "chaos"));
    let starts = rows(&events, Kind::RunStart);
    assert_eq!(starts.len(), 1, "one scenario, not the file's four");
    let Step::RunStart(start) = common::step(starts[0]) else {
        unreachable!()
    };
    assert!(
        start.faults.is_empty(),
        "no scripted fault: {:?}",
        start.faults
    );
    let plan = start.chaos.expect("the plan is recorded");
    // The same seed draws the same plan.
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    let (output, out) = run_example(&again, &["--chaos", "3", "--chaos-window", "2s"]);
    assert!(output.status.success(), "{}", output_text(&output));
    let events = outbox_trace::read_trace(&out).unwrap().events;
    let Step::RunStart(start) = common::step(rows(&events, Kind::RunStart)[0]) else {
        unreachable!()
    };
    assert_eq!(start.chaos, Some(plan));
}

/// Runs the example with a bug and one scenario, up to `tries` times (a timed pause may land
/// while the paused worker holds no message); the analyzer must fail `invariant` in one of them,
/// and never call the trace anything but valid or invalid.
fn caught(bug: &str, scenario: &str, invariant: &str, tries: u32) {
    let mut seen = Vec::new();
    for _ in 0..tries {
        let dir = tempfile::tempdir().unwrap();
        let env = format!("BUG={bug}");
        let (output, out) = run_example(dir.path(), &["--scenario", scenario, "--env", &env]);
        assert!(output.status.success(), "{}", output_text(&output));
        let report = analyse(&[out]).expect("the trace keeps the contract");
        assert_ne!(
            report.verdict,
            RunVerdict::Unknown,
            "{bug} in {scenario}: {}",
            output_text(&output)
        );
        let failed = failed(&report);
        if report.verdict == RunVerdict::Invalid {
            assert!(
                failed.iter().any(|(_, id)| *id == invariant),
                "{bug}: expected {invariant}, failed {failed:?}"
            );
            return;
        }
        seen.push(format!("{:?}", report.verdict));
    }
    panic!("{bug} in {scenario} was not caught in {tries} runs: {seen:?}");
}

#[test]
fn a_worker_without_its_dedup_check_is_caught_by_a_kill_after_its_commit() {
    caught("no-dedup", "worker-killed-before-ack", "single-effect", 1);
}

#[test]
fn a_dedup_check_outside_the_commit_is_caught_by_a_pause() {
    caught("dedup-outside-tx", "worker-paused", "single-effect", 1);
}

/// A system file in `dir` with `text`; returns its path.
fn file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("system.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const TINY: &str = r#"
name = "tiny"
[roles.api]
command = ["sleep", "30"]
[tasks]
command = ["true"]
count = 2
"#;

fn run_file(path: &Path, extra: &[&str]) -> std::process::Output {
    let out = path.with_file_name("run.parquet");
    recorder()
        .args(["run", "--quiet", "--system"])
        .arg(path)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn one_line_with_code(output: &std::process::Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].contains(needle), "{needle} in {err}");
}

#[test]
fn a_bad_file_or_flag_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let unknown_key = file(
        dir.path(),
        &format!("{TINY}\n[quiet]\ncomand = [\"true\"]\n"),
    );
    one_line_with_code(&run_file(&unknown_key, &[]), 2, "comand");
    let placeholder = file(dir.path(), &TINY.replace("\"30\"", "\"${seconds}\""));
    one_line_with_code(&run_file(&placeholder, &[]), 2, "${seconds}");
    let tiny = file(dir.path(), TINY);
    one_line_with_code(
        &run_file(&tiny, &["--fault", "kill api after lunch"]),
        2,
        "lunch",
    );
    one_line_with_code(
        &run_file(&tiny, &["--fault", "kill relay at 1s"]),
        2,
        "relay",
    );
    one_line_with_code(
        &run_file(&tiny, &["--fault", "pause wrker after delivered for 1s"]),
        2,
        "wrker",
    );
    let output = run_file(&tiny, &["--backend", "sqlite-redis"]);
    assert_eq!(output.status.code(), Some(2), "{}", output_text(&output));
    one_line_with_code(
        &run_file(&tiny, &["--scenario", "relay-crash"]),
        2,
        "relay-crash",
    );
}

/// Counts past the stated limits and commands no process can be given are refused before
/// anything starts.
#[test]
fn limits_and_unusable_commands_are_exit_2_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let many = file(
        dir.path(),
        &TINY.replace(
            "command = [\"sleep\", \"30\"]",
            "command = [\"sleep\", \"30\"]\ninstances = 10000",
        ),
    );
    one_line_with_code(&run_file(&many, &[]), 2, "1 to 64");
    let none = file(dir.path(), &TINY.replace("count = 2", "count = 0"));
    one_line_with_code(&run_file(&none, &[]), 2, "tasks.count");
    let blank = file(dir.path(), &TINY.replace("[\"sleep\", \"30\"]", "[\"\"]"));
    one_line_with_code(&run_file(&blank, &[]), 2, "the program is empty");
    let nul = file(dir.path(), &format!("{TINY}\n[env]\nA = \"x\\u0000y\"\n"));
    one_line_with_code(&run_file(&nul, &[]), 2, "NUL");
    let key = file(dir.path(), &format!("{TINY}\n[env]\n\"A=B\" = \"x\"\n"));
    one_line_with_code(&run_file(&key, &[]), 2, "A=B");
}

#[test]
fn a_malformed_counter_start_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["[1, 2]", "\"zero\"", "1.5", "{ balance = \"x\" }"] {
        let path = file(
            dir.path(),
            &TINY.replace(
                "name = \"tiny\"",
                &format!("name = \"tiny\"\ncounter_start = {bad}"),
            ),
        );
        one_line_with_code(&run_file(&path, &[]), 2, "counter_start");
    }
}

#[test]
fn a_command_that_does_not_exist_is_one_line_and_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let missing = file(
        dir.path(),
        &TINY.replace("\"sleep\", \"30\"", "\"no-such-program-0x7e\""),
    );
    one_line_with_code(&run_file(&missing, &[]), 4, "no-such-program-0x7e");
    let never_ready = file(
        dir.path(),
        &format!(
            "{TINY}\n[services.db]\ncommand = [\"sh\", \"-c\", \"echo starting up; sleep 60\"]\n\
             ready = [\"false\"]\nready_timeout = \"1s\"\n"
        ),
    );
    one_line_with_code(&run_file(&never_ready, &[]), 4, "starting up");
}

/// Processes whose environment holds `mark`.
pub(crate) fn marked(mark: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            if env.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Starts the example in a session of its own (as a terminal would run it), marked.
fn start_marked(dir: &Path, mark: &str) -> std::process::Child {
    start_marked_with(dir, mark, &[])
}

/// The same with `args` added.
fn start_marked_with(dir: &Path, mark: &str, args: &[&str]) -> std::process::Child {
    let mut command = recorder();
    command
        .args(["run", "--quiet", "--system"])
        .arg(example())
        .arg("--out")
        .arg(dir.join("run.parquet"))
        .args(["--tasks", "400", "--env", mark])
        .args(args)
        .env(
            mark.split_once('=').unwrap().0,
            mark.split_once('=').unwrap().1,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = command.spawn().unwrap();
    let started = Instant::now();
    while marked(mark).len() < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the roles never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    child
}

pub(crate) fn none_left(mark: &str) {
    let started = Instant::now();
    while !marked(mark).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "left behind: {:?}",
            marked(mark)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn ctrl_c_to_the_terminal_group_ends_the_run_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("OUTBOX_TEST_MARK=ctrl-c-{}", std::process::id());
    let child = start_marked(dir.path(), &mark);
    let started = Instant::now();
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    none_left(&mark);
    let trace = outbox_trace::read_trace(&dir.path().join("run.parquet")).expect("the trace");
    let end = rows(&trace.events, Kind::RunEnd);
    let Step::RunEnd(end) = common::step(end.last().expect("run_end")) else {
        unreachable!()
    };
    assert_eq!(end.recovered, Some(false));
}

/// Ctrl-C `after` the roles started (on a loaded machine the first delivery may take seconds),
/// while the workers are inside their work (1.5 s between
/// receive and commit): the processes are stopped before the stores are read back, so no commit
/// lands after the `observed` row, `run_end` says `interrupted`, and the analyzer finds nothing
/// invalid in the correct example.
fn ctrl_c_while_workers_commit(after: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!(
        "OUTBOX_TEST_MARK=commit-{}-{}",
        after.as_secs(),
        std::process::id()
    );
    let child = start_marked_with(dir.path(), &mark, &["--env", "WORK_MS=1500"]);
    std::thread::sleep(after);
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    none_left(&mark);
    let out = dir.path().join("run.parquet");
    let trace = outbox_trace::read_trace(&out).expect("the trace");
    // Workers were inside their work when the signal came.
    assert!(
        !rows(&trace.events, Kind::Delivered).is_empty(),
        "no delivery within {after:?}"
    );
    let committed = rows(&trace.events, Kind::EffectCommitted);
    if let Some(observed) = rows(&trace.events, Kind::Observed).first() {
        let late: Vec<u64> = committed
            .iter()
            .map(|e| e.seq)
            .filter(|&seq| seq > observed.seq)
            .collect();
        assert!(
            late.is_empty(),
            "commits after the observed row (seq {}): {late:?}",
            observed.seq
        );
    }
    let end = rows(&trace.events, Kind::RunEnd);
    let end = common::run_end(end.last().expect("run_end"));
    assert_eq!(end.reason.as_deref(), Some("interrupted"));
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_ne!(
        report.verdict,
        RunVerdict::Invalid,
        "failed: {:?}",
        failed(&report)
    );
}

#[test]
fn ctrl_c_at_6s_while_workers_commit_leaves_no_commit_after_the_observed_row() {
    ctrl_c_while_workers_commit(Duration::from_secs(6));
}

#[test]
fn ctrl_c_at_8s_while_workers_commit_leaves_no_commit_after_the_observed_row() {
    ctrl_c_while_workers_commit(Duration::from_secs(8));
}

/// A role's shell that leaves a daemon behind, holding the role's standard output: the run does
/// not wait for the daemon, and the daemon does not outlive the run.
#[test]
fn a_daemon_a_role_leaves_holds_no_run_and_outlives_none() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("OUTBOX_TEST_MARK=daemon-{}", std::process::id());
    let daemon = file(
        dir.path(),
        &TINY.replace(
            "[\"sleep\", \"30\"]",
            "[\"sh\", \"-c\", \"(setsid sleep 46 &); exec sleep 30\"]",
        ),
    );
    let started = Instant::now();
    let output = run_file(&daemon, &["--env", &mark]);
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the run waited for the daemon: {:?}",
        started.elapsed()
    );
    none_left(&mark);
}

/// The processes whose command line is exactly `sleep SECONDS`.
fn sleeping(seconds: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
        })
        .collect()
}

/// A role's shell that leaves daemons with no environment (`env -i`), one in the role's process
/// group and one in a session of its own: neither carries a mark, neither outlives the scenario.
#[test]
fn a_daemon_that_dropped_its_environment_outlives_no_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let (grouped, alone) = (
        format!("47.{}", std::process::id()),
        format!("48.{}", std::process::id()),
    );
    let daemon = file(
        dir.path(),
        &TINY.replace(
            "[\"sleep\", \"30\"]",
            &format!(
                "[\"sh\", \"-c\", \"(env -i sleep {grouped} &); (setsid env -i sleep {alone} &); exec sleep 30\"]"
            ),
        ),
    );
    let output = run_file(&daemon, &[]);
    assert!(output.status.success(), "{}", output_text(&output));
    let started = Instant::now();
    while !(sleeping(&grouped).is_empty() && sleeping(&alone).is_empty()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "left behind: {:?} {:?}",
            sleeping(&grouped),
            sleeping(&alone)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn kill_9_of_the_recorder_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("OUTBOX_TEST_MARK=kill-9-{}", std::process::id());
    let mut child = start_marked(dir.path(), &mark);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).unwrap();
    let _ = child.wait();
    none_left(&mark);
}

/// Records the tiny system once, so `--out` holds a complete trace; returns its bytes.
fn previous_trace(dir: &Path) -> Vec<u8> {
    let tiny = file(dir, TINY);
    let output = run_file(&tiny, &[]);
    assert!(output.status.success(), "{}", output_text(&output));
    std::fs::read(dir.join("run.parquet")).unwrap()
}

#[test]
fn a_hung_setup_obeys_the_deadline_and_keeps_the_previous_trace() {
    let dir = tempfile::tempdir().unwrap();
    let before = previous_trace(dir.path());
    let hung = file(
        dir.path(),
        &format!("{TINY}\n[setup]\ncommand = [\"sleep\", \"40\"]\n"),
    );
    let started = Instant::now();
    let output = run_file(&hung, &["--deadline", "5s"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(4), "{}", output_text(&output));
    assert!(output_text(&output).contains("setup did not finish"));
    assert_eq!(
        std::fs::read(dir.path().join("run.parquet")).unwrap(),
        before
    );
}

#[test]
fn ctrl_c_while_a_ready_check_keeps_failing_ends_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let never_ready = file(
        dir.path(),
        &format!(
            "{TINY}\n[services.db]\ncommand = [\"sleep\", \"60\"]\nready = [\"false\"]\n\
             ready_timeout = \"57s\"\n"
        ),
    );
    let child = recorder()
        .args(["run", "--quiet", "--system"])
        .arg(&never_ready)
        .arg("--out")
        .arg(dir.path().join("run.parquet"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let started = Instant::now();
    killpg(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_task_url_that_refuses_connections_is_exit_4_naming_it_and_keeps_the_previous_trace() {
    let dir = tempfile::tempdir().unwrap();
    let before = previous_trace(dir.path());
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{closed}/tasks");
    let refused = file(
        dir.path(),
        &TINY.replace(
            "command = [\"true\"]\ncount = 2",
            &format!("http = {{ method = \"POST\", url = \"{url}\" }}\ncount = 2"),
        ),
    );
    let started = Instant::now();
    let output = run_file(&refused, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    one_line_with_code(&output, 4, &url);
    assert_eq!(
        std::fs::read(dir.path().join("run.parquet")).unwrap(),
        before
    );
}

#[test]
fn a_role_whose_every_life_exits_at_once_stops_the_run_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    // Never quiet: only the role's ends can end the run.
    let role = TINY.replace(
        "[\"sleep\", \"30\"]",
        "[\"sh\", \"-c\", \"echo no config; exit 3\"]",
    );
    let exiting = file(
        dir.path(),
        &format!("{role}\n[quiet]\ncommand = [\"false\"]\n"),
    );
    let started = Instant::now();
    let output = run_file(&exiting, &[]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(4), "{}", output_text(&output));
    let text = output_text(&output);
    assert!(
        text.contains("api cannot run") && text.contains("no config"),
        "{text}"
    );
}

#[test]
fn a_password_a_failing_setup_printed_is_masked_in_its_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let leaky = file(
        dir.path(),
        &TINY.replace(
            "[tasks]",
            "[setup]\ncommand = [\"sh\", \"-c\", \"echo connecting to postgres://app:hunter2@db/x; exit 1\"]\n[tasks]",
        ),
    );
    let output = run_file(&leaky, &[]);
    one_line_with_code(&output, 4, "postgres://app:***@db/x");
    assert!(!output_text(&output).contains("hunter2"));
}

#[test]
fn a_system_file_larger_than_a_mebibyte_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    // A valid file, padded past the bound with a comment.
    let mut text = TINY.to_string();
    text.push('#');
    text.push_str(&"x".repeat(2 * 1024 * 1024));
    text.push('\n');
    let big = file(dir.path(), &text);
    one_line_with_code(&run_file(&big, &[]), 2, "larger than 1024 KiB");
    assert!(!dir.path().join("run.parquet").exists());
}
