//! The CI recipe in `examples/ci/`: the GitHub Actions workflow and the GitLab CI job both run
//! `outbox-check.sh` with the same line, and that line, run here on the Python example (with a
//! planted bug and a small search), fails the build, writes a JUnit file with the failure and
//! the HTML report; on the reference it passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::output_text;

fn ci_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ci")
}

/// The line of a recipe file that runs the check, without its YAML dressing.
fn check_line(file: &str) -> String {
    let text = std::fs::read_to_string(ci_dir().join(file)).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("./outbox-check.sh"))
        .unwrap_or_else(|| panic!("{file} runs no ./outbox-check.sh"));
    let at = line.find("./outbox-check.sh").unwrap();
    line[at..].trim().to_string()
}

/// The Python example in `dir` with the recipe's script beside its system file.
fn team_repository(dir: &Path) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    std::fs::copy(
        ci_dir().join("outbox-check.sh"),
        dir.join("outbox-check.sh"),
    )
    .unwrap();
}

/// Runs the recipe's line in `dir` with `extra` flags, the test's binaries first on the PATH.
fn run(dir: &Path, line: &str, extra: &[&str]) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("recorder");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let words: Vec<&str> = line.split_whitespace().collect();
    Command::new(words[0])
        .args(&words[1..])
        .args(extra)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn the_ci_recipe_fails_the_build_on_a_violation_and_leaves_junit_and_the_report() {
    let line = check_line("github-actions.yml");
    assert_eq!(
        line,
        check_line("gitlab-ci.yml"),
        "both recipes run the same check"
    );
    let small = [
        "--tasks",
        "6",
        "--only",
        "kill worker after effect_committed",
    ];
    let dir = tempfile::tempdir().unwrap();
    team_repository(dir.path());
    let mut bug = small.to_vec();
    bug.extend(["--env", "BUG=no-dedup"]);
    let output = run(dir.path(), &line, &bug);
    assert_eq!(output.status.code(), Some(1), "{}", output_text(&output));
    let out = dir.path().join("outbox-check");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("single-effect"),
        "the report names the failed invariant"
    );
    assert!(out.join("search.json").exists());

    let dir = tempfile::tempdir().unwrap();
    team_repository(dir.path());
    let output = run(dir.path(), &line, &small);
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let junit = std::fs::read_to_string(dir.path().join("outbox-check/junit.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
}
