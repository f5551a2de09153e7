//! `analyzer compare` and `analyzer diff` on hand-built runs: the reference against each broken
//! variant, and two backends on their shared scenarios.

use std::path::{Path, PathBuf};

use crate::common::write;
use crate::variants::{ack_before_commit, crashed_lab, no_dedup};
use outbox_analyzer::check::{Invariant, Verdict};
use outbox_analyzer::views::compare::{self, compare, Measure};
use outbox_analyzer::views::diff::diff;
use outbox_analyzer::views::scene::Scenes;
use outbox_trace::Event;
use outbox_trace::Kind;

fn scenes(dir: &Path, runs: &[(&str, Vec<Event>)]) -> (Vec<PathBuf>, Scenes) {
    let paths: Vec<PathBuf> = runs.iter().map(|(n, ev)| write(dir, n, ev)).collect();
    let s = Scenes::load(&paths).expect("load");
    (paths, s)
}

fn number(c: &compare::Column, m: Measure) -> Option<i64> {
    c.measures.number(m)
}

fn verdict(c: &compare::Column, inv: Invariant) -> Verdict {
    c.measures.verdict(inv).unwrap()
}

#[test]
fn compare_shows_the_failing_invariant_and_the_count_that_differs() {
    let dir = tempfile::tempdir().unwrap();
    for (variant, events, failing, measure) in [
        (
            "abc.parquet",
            ack_before_commit(),
            Invariant::AckAfterCommit,
            Measure::Effects,
        ),
        (
            "nodedup.parquet",
            no_dedup(),
            Invariant::SingleEffect,
            Measure::Effects,
        ),
    ] {
        let (_, s) = scenes(
            dir.path(),
            &[("reference.parquet", crashed_lab()), (variant, events)],
        );
        let c = compare(&s.scenes().collect::<Vec<_>>(), None).expect("compare");
        let cols = &c.shared[0].columns;
        assert_eq!(verdict(&cols[0], failing), Verdict::Pass);
        assert_eq!(verdict(&cols[1], failing), Verdict::Fail, "{variant}");
        assert_ne!(
            number(&cols[0], measure),
            number(&cols[1], measure),
            "{variant}"
        );
        assert!(cols[1].measures.failing.contains(&measure));
        let text = outbox_analyzer::render::compare::compare_text(&c);
        assert!(text.contains("pass -> fail"), "{text}");
        assert!(text.contains(" !"), "{text}");
    }
}

#[test]
fn compare_of_two_backends_uses_shared_scenarios_and_names_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut other = crashed_lab();
    for e in &mut other {
        e.backend = "sqlite-redis".into();
    }
    let mut only = crashed_lab();
    for e in &mut only {
        e.scenario = "dual-write".into();
        e.run_id = "run-1".into();
    }
    other.extend(only.into_iter().map(|mut e| {
        e.backend = "sqlite-redis".into();
        e
    }));
    let (_, s) = scenes(
        dir.path(),
        &[("etcd.parquet", crashed_lab()), ("sqlite.parquet", other)],
    );
    let c = compare(&s.scenes().collect::<Vec<_>>(), None).unwrap();
    assert_eq!(c.shared.len(), 1);
    assert_eq!(c.shared[0].scenario, "lost-consumer-ack");
    assert_eq!(
        c.not_shared,
        vec![("dual-write".to_string(), vec!["sqlite".to_string()])]
    );
    assert!(outbox_analyzer::render::compare::compare_text(&c)
        .contains("not shared: scenario dual-write only in sqlite"));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["shared"][0]["columns"][1]["backend"], "sqlite-redis");
    let svg =
        outbox_analyzer::render::svg::to_svg(&outbox_analyzer::render::compare::compare_figure(&c))
            .unwrap();
    assert!(svg.contains("latency p50 ms") && svg.contains("sqlite"));
}

#[test]
fn latency_percentiles_come_from_accept_to_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = scenes(dir.path(), &[("r.parquet", crashed_lab())]);
    let lat = compare::latencies(&s.scene(0));
    assert_eq!(lat.len(), 3);
    let m = compare::measures(&s.scene(0));
    assert_eq!(m.number(Measure::LatencyMaxMs), lat.last().copied());
    assert!(m.number(Measure::LatencyP50Ms) <= m.number(Measure::LatencyP99Ms));
}

#[test]
fn diff_names_the_ack_before_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = scenes(
        dir.path(),
        &[
            ("a.parquet", crashed_lab()),
            ("b.parquet", ack_before_commit()),
        ],
    );
    let d = diff(&s.scene(0), &s.scene(1));
    let first = d.first.expect("divergence");
    assert_eq!(first.task_a, "t-2");
    assert_eq!(first.lane, "worker");
    assert_eq!(first.a.as_ref().unwrap().kind, Kind::EffectCommitted);
    assert_eq!(first.b.as_ref().unwrap().kind, Kind::Acked);
    assert!(first.describe().contains("the ACK came before the commit"));
}

#[test]
fn diff_names_the_second_effect_of_no_dedup() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = scenes(
        dir.path(),
        &[("a.parquet", crashed_lab()), ("b.parquet", no_dedup())],
    );
    let d = diff(&s.scene(0), &s.scene(1));
    let first = d.first.expect("divergence");
    assert_eq!(first.after, Some(Kind::Redelivered));
    assert_eq!(first.a.as_ref().unwrap().kind, Kind::DuplicateSuppressed);
    assert_eq!(first.b.as_ref().unwrap().kind, Kind::EffectCommitted);
    assert!(d.tasks.iter().filter(|(_, _, x)| x.is_some()).count() == 1);
}

#[test]
fn diff_of_a_run_with_itself_finds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_, s) = scenes(
        dir.path(),
        &[("a.parquet", crashed_lab()), ("b.parquet", crashed_lab())],
    );
    assert!(diff(&s.scene(0), &s.scene(1)).first.is_none());
}
