//! `analyzer timeline`: the binned data, a golden SVG of a small hand-built run, a 100,000-event
//! run whose picture stays small, and the command's outputs and exit codes.

use std::path::{Path, PathBuf};

use crate::common::{ev, lab, write, Set};
use assert_cmd::Command;
use outbox_analyzer::render::{self, timeline::MAX_LABELS};
use outbox_analyzer::views::scene::Scenes;
use outbox_analyzer::views::timeline::{self, Mark, Timeline};
use outbox_trace::{Event, Kind};

/// The lab scenario followed by a relay crash scenario, 10 ms between rows on one clock.
fn two_scenarios() -> Vec<Event> {
    let mut v = lab();
    let mut second = vec![
        ev(Kind::RunStart, "recorder"),
        ev(Kind::TaskAccepted, "api")
            .task("t-9")
            .event("evt-9")
            .rev(90),
        ev(Kind::IntentRecorded, "api")
            .task("t-9")
            .event("evt-9")
            .rev(90),
        ev(Kind::PublishAttempt, "relay").event("evt-9").attempt(1),
        ev(Kind::Crash, "relay").detail(r#"{"point":"relay:before-publish"}"#),
        ev(Kind::Restart, "relay").inc(1),
        ev(Kind::RunEnd, "recorder").detail(r#"{"recovered":false}"#),
    ];
    for e in &mut second {
        e.scenario = "relay-crash".into();
    }
    v.append(&mut second);
    for (i, e) in v.iter_mut().enumerate() {
        e.ts_ns = i as i64 * 10_000_000;
    }
    v
}

fn load(events: &[Event]) -> (tempfile::TempDir, PathBuf, Scenes) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "t.parquet", events);
    let scenes = Scenes::load(std::slice::from_ref(&path)).expect("load");
    (dir, path, scenes)
}

fn whole_run(scenes: &Scenes, buckets: usize) -> Timeline {
    let chosen = timeline::select(scenes, None, None).expect("select");
    timeline::timeline(&chosen, buckets).expect("timeline")
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create)",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "{name} differs from its golden file; rerun with UPDATE_GOLDEN=1 if the change is intended"
    );
}

#[test]
fn buckets_count_every_row_and_markers_name_crash_and_fault() {
    let events = two_scenarios();
    let (_dir, _path, scenes) = load(&events);
    let t = whole_run(&scenes, 10);
    assert_eq!(t.events, events.len());
    assert_eq!(t.buckets(), 10);
    let names: Vec<&str> = t.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lost-consumer-ack", "relay-crash"]);
    let acked = t.series.iter().find(|s| s.kind == Kind::Acked).unwrap();
    assert_eq!(acked.total, 4);
    assert_eq!(acked.counts.iter().sum::<u32>(), 4);
    assert!(t
        .series
        .iter()
        .all(|s| s.kind != Kind::RunStart && s.kind != Kind::Crash));
    let marks: Vec<(Mark, &str)> = t
        .markers
        .iter()
        .map(|m| (m.mark, m.label.as_str()))
        .collect();
    assert_eq!(
        marks,
        [
            (Mark::Fault, "faults: drop-consumer-ack"),
            (Mark::Crash, "relay#0 at relay:before-publish"),
        ]
    );
    // Only the second scenario.
    let chosen = timeline::select(&scenes, None, Some("relay-crash")).unwrap();
    let one = timeline::timeline(&chosen, 10).unwrap();
    assert_eq!((one.events, one.markers.len()), (7, 1));
    assert!(matches!(
        timeline::select(&scenes, None, Some("nope")),
        Err(timeline::TimelineError::NoScenario(_))
    ));
}

#[test]
fn timeline_of_a_small_run_is_pinned() {
    let (_dir, _path, scenes) = load(&two_scenarios());
    let t = whole_run(&scenes, 20);
    let svg = render::svg::to_svg(&render::timeline::timeline_figure(&t)).expect("svg");
    golden("timeline-lab.svg", &svg);
}

/// A run of `rows` rows: the happy path of many tasks, one crash every `rows / crashes` rows and a
/// fault every fifth crash, 100 µs between rows.
fn big_run(rows: usize, crashes: usize) -> Vec<Event> {
    let mut v = vec![ev(Kind::RunStart, "recorder")];
    let mut n = 0;
    let mut incarnation = 0;
    while v.len() < rows - 1 {
        n += 1;
        let (t, e) = (format!("t-{n}"), format!("evt-{n}"));
        v.push(ev(Kind::TaskAccepted, "api").task(&t).event(&e).rev(n));
        v.push(ev(Kind::IntentRecorded, "api").task(&t).event(&e).rev(n));
        v.push(ev(Kind::PublishAttempt, "relay").event(&e).attempt(1));
        v.push(
            ev(Kind::PublishAcked, "relay")
                .event(&e)
                .attempt(1)
                .broker(n as u64),
        );
        v.push(
            ev(Kind::Delivered, "worker")
                .event(&e)
                .attempt(1)
                .broker(n as u64),
        );
        v.push(ev(Kind::Acked, "worker").event(&e).broker(n as u64));
        if n as usize % (rows / crashes / 6) == 0 {
            v.push(
                ev(Kind::Crash, "worker")
                    .inc(incarnation)
                    .detail(r#"{"point":"worker:between-commit-and-ack"}"#),
            );
            incarnation += 1;
            if incarnation % 5 == 0 {
                v.push(ev(Kind::Fault, "faults").detail(r#"{"fault":"broker-restart"}"#));
            }
        }
    }
    v.truncate(rows - 1);
    v.push(ev(Kind::RunEnd, "recorder").detail(r#"{"recovered":true}"#));
    for (i, e) in v.iter_mut().enumerate() {
        e.ts_ns = i as i64 * 100_000;
    }
    v
}

#[test]
fn a_run_of_100000_events_draws_a_small_bounded_picture() {
    let events = big_run(100_000, 40);
    let (dir, path, _scenes) = load(&events);
    let out = dir.path().join("big.svg");
    Command::cargo_bin("analyzer")
        .unwrap()
        .arg("timeline")
        .arg(&path)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(0);
    let svg = std::fs::read_to_string(&out).unwrap();
    assert!(svg.len() < 300_000, "{} bytes", svg.len());
    assert!(
        svg.contains("100000 events"),
        "the subtitle counts every row"
    );
    assert!(svg.contains("worker#0 at worker:between-commit-and-ack"));
    assert!(svg.contains("faults: broker-restart"));
    let crashes = events.iter().filter(|e| e.kind == Kind::Crash).count();
    let faults = events.iter().filter(|e| e.kind == Kind::Fault).count();
    assert!(crashes + faults > MAX_LABELS);
    let labelled_crashes = MAX_LABELS - 2; // the 5th and 10th crash are followed by a fault
    let more = format!(
        "{} more crashes, {} more faults",
        crashes - labelled_crashes,
        faults - 2
    );
    assert!(svg.contains(&more), "expected `{more}`");
    // Binned, not one element per event: one long line per kind, few short ones.
    let lines: Vec<&str> = svg.split("<polyline").skip(1).collect();
    let long = lines
        .iter()
        .filter(|l| l.matches(',').count() >= 100)
        .count();
    assert_eq!(long, 6, "one series per kind");
    assert!(lines.len() < 200, "{} lines", lines.len());
}

#[test]
fn command_writes_svg_and_identical_png_and_says_what_is_missing() {
    let (dir, path, _scenes) = load(&two_scenarios());
    let run = |args: &[&str]| {
        let mut c = Command::cargo_bin("analyzer").unwrap();
        c.arg("timeline").arg(&path).args(args);
        c.assert()
    };
    let svg = run(&[]).code(0).get_output().stdout.clone();
    assert!(svg.starts_with(b"<svg"));
    let (a, b) = (dir.path().join("a.png"), dir.path().join("b.png"));
    run(&["-o", a.to_str().unwrap()]).code(0);
    run(&["-o", b.to_str().unwrap()]).code(0);
    let (a, b) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert!(a.starts_with(b"\x89PNG"));
    assert_eq!(a, b);
    let s1 = dir.path().join("one.svg");
    run(&["--scenario", "relay-crash", "-o", s1.to_str().unwrap()]).code(0);
    let one = std::fs::read_to_string(s1).unwrap();
    assert!(one.contains("relay#0 at relay:before-publish") && !one.contains("drop-consumer-ack"));
    run(&["--scenario", "nope"]).code(4);
    run(&["--run", "nope"]).code(4);
    run(&["--buckets", "0"]).code(2);
    Command::cargo_bin("analyzer")
        .unwrap()
        .args(["timeline", "/nonexistent.parquet"])
        .assert()
        .code(2);
}
