//! `analyzer check` streams a file through the rules without holding its rows; every view loads
//! the whole model. Both must reach the same outcomes, word for word, on every committed
//! fixture (valid and broken, in every encoding) and on a large generated trace with violations.

use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, check_paths as check, Report};
use outbox_analyzer::explain;

fn render(report: &Report) -> (String, String) {
    let mut json = Vec::new();
    explain::json::write(report, &mut json).expect("json");
    let mut text = Vec::new();
    explain::text::write(report, &mut text).expect("text");
    (
        String::from_utf8(json).expect("utf-8"),
        String::from_utf8(text).expect("utf-8"),
    )
}

fn same(path: &Path) -> Report {
    let paths = [path.to_path_buf()];
    let whole = analyse(&paths).expect("analyse");
    let streamed = check(&paths).expect("check");
    assert_eq!(render(&streamed), render(&whole), "{}", path.display());
    streamed
}

#[test]
fn every_fixture_gives_the_same_outcomes_streamed_and_whole() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e != "py"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 8, "{fixtures:?}");
    let mut invalid = 0;
    for path in &fixtures {
        let report = same(path);
        invalid += usize::from(report.verdict.as_str() == "invalid");
    }
    assert!(invalid >= 2, "broken fixtures are among them");
}

#[test]
fn a_large_trace_with_violations_gives_the_same_outcomes_streamed_and_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let valid = dir.path().join("valid.parquet");
    outbox_analyzer::model::synth::write(&valid, 90_000).expect("synth");
    let path = dir.path().join("broken.parquet");
    let mut events = outbox_trace::read_trace(&valid).expect("read").events;
    // Break it in several ways: a second commit, an ack with no commit before it, a lost task.
    let commit = events
        .iter()
        .position(|e| e.kind == outbox_trace::Kind::EffectCommitted)
        .expect("a commit");
    let mut twice = events[commit].clone();
    twice.seq = events.iter().map(|e| e.seq).max().expect("rows") + 1;
    let ack = events
        .iter()
        .rposition(|e| e.kind == outbox_trace::Kind::Acked)
        .expect("an ack");
    let early = events[ack].clone();
    events.retain(|e| {
        !(e.kind == outbox_trace::Kind::EffectCommitted && e.event_id == early.event_id)
    });
    events.push(twice);
    let mut w = outbox_trace::TraceWriter::create(&path, None).expect("create");
    w.write(&events).expect("write");
    w.finish().expect("finish");
    let report = same(&path);
    assert_eq!(report.verdict.as_str(), "invalid");

    // The same rows in seven row groups of unequal sizes, some of several batches (a batch is
    // 16,384 rows): two decoders share their columns, and the outcomes are those of the single row
    // group, word for word.
    let grouped = dir.path().join("grouped");
    std::fs::create_dir(&grouped).expect("mkdir");
    let many = grouped.join("broken.parquet");
    let mut w = outbox_trace::TraceWriter::create(&many, None).expect("create");
    let sizes = [3_000, 20_000, 1_000, 35_000, 7_000, 17_000];
    let mut rest = events.as_slice();
    for size in sizes {
        let (group, after) = rest.split_at(size);
        w.write(group).expect("write");
        w.checkpoint().expect("checkpoint");
        rest = after;
    }
    w.write(rest).expect("write");
    w.finish().expect("finish");
    let info = outbox_trace::TraceFile::open(&many)
        .expect("open")
        .info()
        .clone();
    assert_eq!(info.row_groups, sizes.len() + 1);
    let one = render(&report);
    let (json, text) = render(&same(&many));
    let here = |s: &str| s.replace(&many.display().to_string(), &path.display().to_string());
    assert_eq!((here(&json), here(&text)), one);
}
