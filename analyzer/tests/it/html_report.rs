//! The HTML report in a real browser: `analyzer report --html` on a broken recording, a valid one
//! and a generated trace, each opened in Debian's headless Chromium by `html_report.py`
//! (Playwright for Python). The browser tests fail, not skip, when Chromium or Playwright is
//! missing: `scripts/deps.sh` installs both. Screenshots are kept under `target/tmp/html-report/`.
//! Also: the file is self-contained and `report -o DIR` writes it beside the rest; bad input exits 2.

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;
use outbox_analyzer::report::page::{self, EVENTFUL};
use outbox_analyzer::views::chain;
use outbox_analyzer::views::scene::Scenes;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn analyzer(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("analyzer")
        .expect("binary")
        .args(args)
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What the browser should find: violation 1's event, how many violations, a task whose chain
/// the page must draw itself (one not drawn in advance, when there is one), and the coverage
/// matrix's linked cells and FAIL cells.
struct Expect {
    violations: usize,
    event: Option<String>,
    task: String,
    coverage: (usize, usize),
}

fn expectations(trace: &Path) -> Expect {
    let scenes = Scenes::load(&[trace.to_path_buf()]).expect("load");
    let violations = chain::violations(&scenes);
    let drawn = page::eventful(&scenes, EVENTFUL);
    let pick = |in_advance: bool| {
        scenes.scenes().zip(&drawn).find_map(|(s, d)| {
            let index = s.history.indices();
            let t = index.by_task.ids().find(|t| d.contains(t) == in_advance)?;
            Some(s.names.name(t).to_string())
        })
    };
    let task = pick(false).or_else(|| pick(true));
    let first: std::collections::BTreeMap<usize, usize> = violations
        .iter()
        .rev()
        .map(|v| (v.scene, v.number))
        .collect();
    let matrix = outbox_analyzer::views::coverage::matrix(&scenes, &first);
    let cells = matrix.rows.iter().flat_map(|r| r.cells.iter().flatten());
    let fail = |c: &&outbox_analyzer::views::coverage::Cell| {
        c.state == outbox_analyzer::views::coverage::State::Violation
    };
    Expect {
        violations: violations.len(),
        event: violations.first().and_then(|v| v.event.clone()),
        task: task.expect("the trace has a task"),
        coverage: (cells.clone().count(), cells.filter(fail).count()),
    }
}

/// Writes the report of `trace` with `--html` and checks it in the browser.
fn in_browser(trace: &Path, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join(format!("{name}.html"));
    let (code, out, err) = analyzer(&[
        "report",
        trace.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("report.html") || out.contains(".html"),
        "{out}"
    );
    let e = expect_browser(&html, &expectations(trace), name);
    assert!(e.status.success(), "{}", String::from_utf8_lossy(&e.stderr));
}

fn expect_browser(html: &Path, e: &Expect, name: &str) -> std::process::Output {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/html_report.py");
    let mut cmd = Process::new("python3");
    cmd.arg(&script)
        .arg(html)
        .args(["--task", &e.task])
        .arg("--screenshot")
        .arg(shots.join(format!("{name}.png")));
    cmd.args(["--coverage", &e.coverage.0.to_string()])
        .args(["--coverage-fail", &e.coverage.1.to_string()]);
    if let Some(event) = &e.event {
        cmd.args(["--violations", &e.violations.to_string(), "--event", event]);
    } else {
        assert_eq!(e.violations, 0, "violation 1 names no event");
    }
    let out = cmd
        .output()
        .expect("python3 must be installed (scripts/deps.sh)");
    assert!(
        out.status.code() != Some(2),
        "the browser test cannot run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn broken_recording_in_a_browser() {
    let trace = fixture("pyarrow_ack_before_commit.parquet");
    let e = expectations(&trace);
    assert!(
        e.violations > 0 && e.event.is_some(),
        "the fixture is broken"
    );
    in_browser(&trace, "broken");
}

/// An explore trace of the Python example without dedup (kills of the worker and a pause of
/// Redis, made by `recorder explore`): the page shows its coverage matrix, FAIL where a schedule
/// broke an invariant, each cell a link to what it found.
#[test]
fn explore_trace_shows_its_coverage_matrix_in_a_browser() {
    let trace = fixture("explore_no_dedup.parquet");
    let e = expectations(&trace);
    assert_eq!(
        e.coverage,
        (4, 2),
        "kill after acked, delivered, effect_committed; pause redis"
    );
    in_browser(&trace, "explore");
    // `report -o DIR` draws the same matrix as SVG.
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = analyzer(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let svg = std::fs::read_to_string(dir.path().join("coverage.svg")).unwrap();
    assert_eq!(svg.matches(">FAIL<").count(), 2, "{svg}");
    assert!(svg.contains("worker · effect_committed"), "{svg}");
}

#[test]
fn valid_recording_in_a_browser() {
    let trace = fixture("etcd_reference.parquet");
    assert_eq!(expectations(&trace).violations, 0, "the fixture is valid");
    in_browser(&trace, "valid");
}

#[test]
fn generated_trace_in_a_browser() {
    // Enough tasks that most chains are drawn by the page, not in advance.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("synth.parquet");
    let (_, tasks) = outbox_analyzer::model::synth::write(&trace, 30_000).expect("write");
    assert!(tasks > 2 * EVENTFUL as u64);
    let e = expectations(&trace);
    assert_ne!(e.task, "t-1000", "the crashing task is drawn in advance");
    in_browser(&trace, "synthetic");
}

#[test]
fn report_dir_gets_a_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixture("pyarrow_ack_before_commit.parquet");
    let (code, out, err) = analyzer(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for needle in [
        "<script src",
        "<link rel=\"stylesheet",
        "http://",
        "https://",
        "@import",
    ] {
        let hits: Vec<&str> = html
            .match_indices(needle)
            .map(|(at, _)| &html[at..(at + 60).min(html.len())])
            // The SVG namespace is a name, not a request.
            .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
            .collect();
        assert!(hits.is_empty(), "the page refers to {hits:?}");
    }
    // The same bytes as --html.
    let single = dir.path().join("single.html");
    let (code, ..) = analyzer(&[
        "report",
        trace.to_str().unwrap(),
        "--html",
        single.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(std::fs::read_to_string(single).unwrap(), html);
}

#[test]
fn bad_input_and_unwritable_output_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let missing = dir.path().join("missing.parquet");
    let (code, _, err) = analyzer(&[
        "report",
        missing.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!html.exists());

    let trace = fixture("etcd_reference.parquet");
    let nowhere = dir.path().join("no/such/dir/r.html");
    let (code, _, err) = analyzer(&[
        "report",
        trace.to_str().unwrap(),
        "--html",
        nowhere.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("r.html"), "{err}");
}

#[test]
fn rows_beyond_the_cap_are_left_out_and_counted() {
    let trace = fixture("etcd_reference.parquet");
    let traces = vec![trace];
    let scenes = Scenes::load(&traces).expect("load");
    let sizes: Vec<usize> = scenes.scenes().map(|s| s.history.rows.len()).collect();
    assert!(sizes.len() > 2);
    let cap = sizes[0] + sizes[1];
    let eventful = page::eventful(&scenes, EVENTFUL);
    let built = page::build_capped(&scenes, &traces, &eventful, cap).expect("page");
    assert_eq!(built.caps.rows_embedded, cap);
    assert_eq!(built.caps.rows_total, sizes.iter().sum::<usize>());
    let html = outbox_analyzer::report::html::to_html(&built).expect("html");
    for i in 0..sizes.len() {
        let element = format!("<script id=\"rows-{i}\"");
        assert_eq!(html.contains(&element), i < 2, "scenario {i}");
    }
    // Every scenario keeps its chains drawn in advance.
    for i in 0..sizes.len() {
        assert!(built.drawn.iter().any(|d| d.scene == i), "scenario {i}");
    }
}

/// Copies at equal offsets in two partitions: the page pairs a redelivery with its own
/// partition's delivery and labels positions `pP:N`, as the analyzer draws them.
#[test]
fn partitioned_trace_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let events = crate::partitions::kafka_second_copy_acked_early();
    let trace = crate::common::write(dir.path(), "kafka.parquet", &events);
    assert_eq!(expectations(&trace).violations, 1);
    in_browser(&trace, "partitioned");
}
