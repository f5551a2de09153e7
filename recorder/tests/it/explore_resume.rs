//! `recorder explore --resume` and `--shard K/N` on the Python example: a search killed with
//! SIGKILL part-way and resumed ends with the schedules and verdict of an uninterrupted one, each
//! schedule once, the completed ones kept (not run again); a resume of another search is refused
//! with one line and exit 2; two shards run the whole list once between them and `analyzer
//! check` of both (or of their directory) gives one verdict, and says so when their lists differ.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use outbox_trace::{read_trace, Event, Kind};

use crate::common::{output_text, run_start};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/otel-python/outbox-system.toml")
}

/// `recorder explore` of the example's worker kills, six tasks, one schedule at a time.
fn explore(out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("recorder"));
    cmd.arg("explore")
        .arg("--system")
        .arg(example())
        .arg("--out")
        .arg(out)
        .args([
            "--tasks",
            "6",
            "--only",
            "kill worker",
            "--jobs",
            "1",
            "--quiet",
        ])
        .args(args);
    cmd
}

fn analyzer_check(paths: &[&Path]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("analyzer"))
        .arg("check")
        .args(paths)
        .output()
        .unwrap()
}

/// The `(fault, verdict)` of every schedule and the verdict, from `--json`.
fn found(json: &Path) -> (Vec<(String, String)>, String) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let schedules = v["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["fault"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (schedules, v["verdict"].as_str().unwrap().to_string())
}

/// How many times each scenario starts in `events`, with the run that started it.
fn starts(events: &[Event]) -> BTreeMap<String, Vec<String>> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.kind == Kind::RunStart) {
        by.entry(e.scenario.clone())
            .or_default()
            .push(e.run_id.clone());
    }
    by
}

/// Schedules (not the calm run) with a `run_end` in the sealed segments of `parts`.
fn ended(parts: &Path) -> usize {
    let Ok(dir) = std::fs::read_dir(parts) else {
        return 0;
    };
    dir.filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .filter_map(|p| read_trace(&p).ok())
        .flat_map(|t| t.events)
        .filter(|e| e.kind == Kind::RunEnd && !e.scenario.starts_with("calm"))
        .count()
}

#[test]
fn a_search_killed_part_way_and_resumed_runs_each_schedule_once() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.json");
    let output = explore(
        &dir.path().join("whole.parquet"),
        &["--json", whole.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    let uninterrupted = found(&whole);
    assert!(uninterrupted.0.len() >= 4, "{uninterrupted:?}");

    let out = dir.path().join("cut.parquet");
    let mut first = explore(&out, &[]).spawn().unwrap();
    let parts = dir.path().join("cut.parquet.parts");
    let until = Instant::now() + Duration::from_secs(180);
    while ended(&parts) < 2 {
        assert!(Instant::now() < until, "no two schedules ended");
        assert!(
            first.try_wait().unwrap().is_none(),
            "the search ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    first.kill().unwrap();
    first.wait().unwrap();

    let resumed = dir.path().join("resumed.json");
    let output = explore(&out, &["--resume", "--json", resumed.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", output_text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--resume: kept the calm run and"),
        "{}",
        output_text(&output)
    );
    assert_eq!(found(&resumed), uninterrupted);

    // Each scenario once; the kept ones from the killed run, the rest from the resumed one.
    let events = read_trace(&out).unwrap().events;
    let by = starts(&events);
    assert_eq!(by.len(), uninterrupted.0.len() + 1, "{by:?}");
    assert!(by.values().all(|runs| runs.len() == 1), "{by:?}");
    let runs: std::collections::BTreeSet<&String> = by.values().flatten().collect();
    assert_eq!(runs.len(), 2, "kept rows keep their run: {by:?}");
    let calm_run = &by["calm"][0];
    assert!(
        by.values().filter(|r| &r[0] == calm_run).count() >= 3,
        "the calm run and two schedules kept: {by:?}"
    );
    let check = analyzer_check(&[&out]);
    assert_eq!(check.status.code(), Some(0), "{}", output_text(&check));

    // Another search (other options) on the same --out is refused before anything runs.
    let output = explore(&out, &["--resume", "--pause-for", "7s"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", output_text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not this search"), "{stderr}");
}

#[test]
fn two_shards_run_the_list_once_between_them_and_check_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.txt");
    let a = dir.path().join("shard-1.parquet");
    let b = dir.path().join("shard-2.parquet");
    let first = explore(
        &a,
        &["--shard", "1/2", "--write-plan", plan.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", output_text(&first));
    let second = explore(&b, &["--shard", "2/2"]).output().unwrap();
    assert_eq!(second.status.code(), Some(0), "{}", output_text(&second));

    let listed: Vec<String> = std::fs::read_to_string(&plan)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert!(listed.len() >= 4, "{listed:?}");
    let mut ran: Vec<String> = Vec::new();
    for path in [&a, &b] {
        for e in read_trace(path).unwrap().events {
            if e.kind == Kind::RunStart && !e.scenario.starts_with("calm") {
                ran.push(run_start(&e).searched.join(" + "));
            }
        }
    }
    ran.sort();
    let mut want = listed.clone();
    want.sort();
    assert_eq!(ran, want, "each schedule once between the shards");

    // The directory holds the two traces (and the plan): checked as one.
    let check = analyzer_check(&[dir.path()]);
    let text = output_text(&check);
    assert_eq!(check.status.code(), Some(0), "{text}");
    assert!(text.contains("scenario(s)"), "{text}");
    assert!(
        text.contains("calm-1-of-2") && text.contains("calm-2-of-2"),
        "{text}"
    );
    assert!(!text.contains("enumerated different schedules"), "{text}");

    // The second shard as if its calm run had enumerated another list.
    let other = dir.path().join("other.parquet");
    let mut trace = read_trace(&b).unwrap();
    for e in &mut trace.events {
        if let Some(d) = e.detail.as_mut().filter(|_| e.kind == Kind::RunStart) {
            let mut v: serde_json::Value = serde_json::from_str(d).unwrap();
            if v["search"]["plan"].is_string() {
                v["search"]["plan"] = "0000000000000000".into();
                *d = v.to_string();
            }
        }
    }
    let mut writer = outbox_trace::TraceWriter::create(&other, None).unwrap();
    writer.write(&trace.events).unwrap();
    writer.finish().unwrap();
    let check = analyzer_check(&[&a, &other]);
    let text = output_text(&check);
    assert_eq!(check.status.code(), Some(3), "{text}");
    assert!(text.contains("enumerated different schedules"), "{text}");
}
