//! Services kept between scenarios (`[reset]`) on the Python example: with `[reset]` one Redis
//! serves every scenario of `run --scenario all` (a restarted one too), reset before each but the
//! first; without, each scenario starts its own; a reset that fails gets fresh services in a fresh
//! directory, and the scenario still runs. Every start of Redis writes its directory to a file,
//! so the test counts the services that were started, not what the recorder says.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, RunVerdict};

use crate::common::{self, output_text};

/// The example copied into `dir`, its Redis writing each start's directory to `starts.txt`, its
/// reset writing a line to `resets.txt`, `reset` replacing the example's `[reset]` command
/// (`None`: no `[reset]`), and three of its scenarios.
fn example(dir: &Path, reset: Option<&str>) -> PathBuf {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python");
    for entry in std::fs::read_dir(&example).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let path = dir.join("outbox-system.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let starts = dir.join("starts.txt");
    let redis = format!(
        r#"command = ["sh", "-c", "echo \"$0\" >> {}; exec redis-server --port \"$1\" --bind 127.0.0.1 --dir \"$0\" --save '' --appendonly yes --appendfsync always", "${{dir}}", "${{port}}"]"#,
        starts.display()
    );
    let mut text: String = text
        .lines()
        .map(
            |line| match line.starts_with("command = [\"redis-server\"") {
                true => redis.clone(),
                false if line.starts_with("           \"--save\"") => String::new(),
                false => line.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("\n");
    let own_reset =
        "[reset]\ncommand = [\"redis-cli\", \"-p\", \"${services.redis.port}\", \"flushall\"]\n";
    assert!(
        text.contains(own_reset),
        "the example resets with redis-cli"
    );
    let reset = reset.map_or_else(String::new, |sh| {
        format!("[reset]\ncommand = [\"sh\", \"-c\", {sh:?}, \"${{services.redis.port}}\"]\n")
    });
    text = text.replace(own_reset, &reset);
    let scenarios = text.find("[[scenarios]]").unwrap();
    text.truncate(scenarios);
    text.push_str(
        "[[scenarios]]\nname = \"killed\"\nfaults = [\"kill worker after effect_committed 2\"]\n\n\
         [[scenarios]]\nname = \"redis-restarted\"\nfaults = [\"restart redis after delivered 3\"]\n\n\
         [[scenarios]]\nname = \"calm\"\nfaults = []\n",
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs every scenario; the directories Redis started in (each once), and how many resets ran.
fn run_all(dir: &Path, reset: Option<&str>) -> (BTreeSet<String>, usize, String) {
    let system = example(dir, reset);
    let (output, out) = common::record_system(dir, &system, &["--scenario", "all", "--tasks", "8"]);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let report = analyse(std::slice::from_ref(&out)).expect("the trace keeps the contract");
    assert_eq!(report.scenarios.len(), 3, "{text}");
    assert_eq!(report.verdict, RunVerdict::Valid, "{text}");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    let starts = read("starts.txt").lines().map(str::to_string).collect();
    let resets = read("resets.txt").lines().count();
    (starts, resets, text)
}

const RESET: &str = "echo reset >> resets.txt && redis-cli -p \"$0\" flushall";

#[test]
fn with_reset_one_redis_serves_every_scenario_and_is_reset_before_each_but_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, resets, text) = run_all(dir.path(), Some(RESET));
    // One directory: the restart fault started Redis again on the same one.
    assert_eq!(starts.len(), 1, "{starts:?}\n{text}");
    assert_eq!(resets, 2, "{text}");
}

#[test]
fn without_reset_each_scenario_starts_its_own_services() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, resets, text) = run_all(dir.path(), None);
    assert_eq!(starts.len(), 3, "{starts:?}\n{text}");
    assert_eq!(resets, 0);
}

#[test]
fn a_reset_that_fails_gets_fresh_services_and_the_scenario_runs() {
    let dir = tempfile::tempdir().unwrap();
    // The first reset fails; the second (after the second scenario) passes.
    let failing = format!(
        "if [ ! -e failed-once ]; then touch failed-once; echo no >&2; exit 3; fi; {RESET}"
    );
    let (starts, resets, text) = run_all(dir.path(), Some(&failing));
    assert_eq!(starts.len(), 2, "{starts:?}\n{text}");
    assert_eq!(resets, 1, "{text}");
    assert!(
        text.contains("services kept between scenarios start anew (reset exited with status 3"),
        "{text}"
    );
}
