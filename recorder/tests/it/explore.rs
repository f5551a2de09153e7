//! `recorder explore`: with no scenario written, a calm run learns what each role of the Python
//! example reports, and the schedules enumerated from it find a planted bug, naming the invariant;
//! `analyzer check` of the same trace gives the same verdict; `--shape` prints the shape; a bad
//! flag is one line and exit 2.

use std::path::Path;
use std::process::Command;

use crate::common::output_text;

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system.toml")
}

fn explore(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .arg("explore")
        .arg("--system")
        .arg(example())
        .arg("--out")
        .arg(dir.join("explore.parquet"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_worker_without_dedup_is_found_with_no_scenario_written() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("search.json");
    let output = explore(
        dir.path(),
        &[
            "--tasks",
            "6",
            "--env",
            "BUG=no-dedup",
            "--only",
            "kill worker",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    assert!(
        stdout.contains("kill worker after effect_committed: fired 1, invalid: FAIL single-effect"),
        "{stdout}"
    );
    assert!(stdout.contains("calm: valid"), "{stdout}");
    let search: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schedules = search["schedules"].as_array().unwrap();
    assert!(schedules.len() >= 3, "{search}");
    assert!(schedules
        .iter()
        .all(|s| s["fault"].as_str().unwrap().starts_with("kill worker")));
    assert_eq!(search["verdict"], "invalid");
    // The trace says the same to `analyzer check`: the schedules' faults are searched, so none
    // that did not fire makes anything unknown.
    let check = Command::new(assert_cmd::cargo::cargo_bin("analyzer"))
        .arg("check")
        .arg(dir.path().join("explore.parquet"))
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1), "{}", output_text(&check));
}

#[test]
fn the_shape_of_the_example_is_what_its_roles_report() {
    let dir = tempfile::tempdir().unwrap();
    let output = explore(dir.path(), &["--tasks", "4", "--shape"]);
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in [
        "worker: exports arrive",
        "  delivered",
        "relay: ",
        "  outbox_marked",
        "calm: valid",
    ] {
        assert!(stdout.contains(line), "{line} in {stdout}");
    }
    assert!(
        !stdout.contains("kill "),
        "--shape runs no schedule: {stdout}"
    );
}

#[test]
fn a_bad_flag_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--jobs", "0"][..], &["--pause-for", "soon"][..]] {
        let output = explore(dir.path(), args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            output_text(&output)
        );
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            err.lines().filter(|l| !l.trim().is_empty()).count() <= 2,
            "{err}"
        );
    }
}

#[test]
fn depth_two_runs_pairs_of_single_faults_after_the_singles() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("search.json");
    let output = explore(
        dir.path(),
        &[
            "--tasks",
            "6",
            "--only",
            "kill worker after effect_committed",
            "--depth",
            "2",
            "--budget",
            "1s",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let search: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let pairs: Vec<&serde_json::Value> = search["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["fault"].as_str().unwrap().contains(" + "))
        .collect();
    assert!(!pairs.is_empty(), "{search}");
    assert!(pairs
        .iter()
        .all(|p| p["scenario"].as_str().unwrap().starts_with("pair-")));
}

#[test]
fn a_lost_publish_reply_on_the_wire_finds_a_worker_that_dedups_on_the_entry_id() {
    let dir = tempfile::tempdir().unwrap();
    let output = explore(
        dir.path(),
        &[
            "--tasks",
            "8",
            "--env",
            "BUG=dedup-on-entry-id",
            "--only",
            "drop replies relay redis after publish_attempt",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("drop replies relay redis after publish_attempt 4: fired 1, invalid: FAIL single-effect"),
        "{stdout}"
    );
}

#[test]
fn fail_fast_stops_at_the_first_invalid_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("search.json");
    let output = explore(
        dir.path(),
        &[
            "--tasks",
            "6",
            "--env",
            "BUG=no-dedup",
            "--only",
            "kill worker",
            "--jobs",
            "1",
            "--fail-fast",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .contains("stopped at the first invalid schedule (kill-worker-after-effect_committed)"),
        "{stderr}"
    );
    let search: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let schedules = search["schedules"].as_array().unwrap();
    let verdicts: Vec<&str> = schedules
        .iter()
        .map(|s| s["verdict"].as_str().unwrap())
        .collect();
    // One at a time, in the order enumerated: everything before the first invalid one ran and
    // was valid, nothing after it ran.
    assert_eq!(verdicts.last(), Some(&"invalid"), "{search}");
    assert!(
        verdicts[..verdicts.len() - 1].iter().all(|v| *v == "valid"),
        "{search}"
    );
    assert!(
        schedules.last().unwrap()["fault"] == "kill worker after effect_committed",
        "{search}"
    );
    assert!(!stderr.contains(" 0 schedule(s) not run"), "{stderr}");
}

/// On a terminal (here a pseudo-terminal that `script` opens) each schedule gets a progress line:
/// done of total, its verdict, the invalid ones so far and the time left; off a terminal, and
/// with `--quiet`, none.
#[test]
fn progress_lines_show_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = assert_cmd::cargo::cargo_bin("recorder");
    let command = |quiet: &str| {
        format!(
            "{} explore --system {} --out {} --tasks 6 --env BUG=no-dedup --only 'kill worker after effect_committed' {quiet} 2>&1",
            recorder.display(),
            example().display(),
            dir.path().join("explore.parquet").display()
        )
    };
    let on_terminal = Command::new("script")
        .args(["-qec", &command(""), "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(
        text.contains("[1/2] kill worker after effect_committed")
            && text.contains("invalid so far"),
        "{text}"
    );
    assert!(text.contains("left"), "{text}");
    let quiet = Command::new("script")
        .args(["-qec", &command("--quiet"), "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&quiet.stdout);
    assert!(!text.contains("invalid so far"), "{text}");
    let piped = explore(
        dir.path(),
        &[
            "--tasks",
            "6",
            "--only",
            "kill worker after effect_committed",
        ],
    );
    assert!(!String::from_utf8_lossy(&piped.stderr).contains("so far"));
}
