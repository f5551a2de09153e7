//! Traces that are large in one dimension: many scenarios of one row each, many violations in
//! one scenario, one event delivered to many actor lives, more scenarios than the HTML report
//! embeds. Each must be judged with the right counts; nothing here is timed (the book's
//! reliability section gives the memory and time measured on such traces).

use outbox_analyzer::check::{check_paths, Finding, RunVerdict, Verdict, EXAMPLES};
use outbox_analyzer::report::page::{self, EVENTFUL, MAX_SCENARIOS};
use outbox_analyzer::views::scene::Scenes;
use outbox_trace::{Event, Kind};

use crate::common::*;

/// `n` scenarios, each of one `run_start` row.
fn one_row_scenarios(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let mut e = ev(Kind::RunStart, "recorder");
            e.scenario = format!("s{i}");
            e
        })
        .collect()
}

#[test]
fn every_one_of_many_one_row_scenarios_is_judged() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "many.parquet", &one_row_scenarios(100_000));
    let report = check_paths(&[path]).expect("check");
    assert_eq!(report.scenarios.len(), 100_000);
    assert_eq!(report.loaded.histories.len(), 100_000);
    for (i, s) in report.scenarios.iter().enumerate() {
        assert_eq!(s.history, i);
        assert_eq!(s.verdict, RunVerdict::Unknown, "scenario {i}");
        assert!(s.outcomes.iter().all(|o| o.violations.is_empty()));
    }
    let last = &report.loaded.histories[99_999];
    assert_eq!(report.loaded.names.name(last.scenario), "s99999");
}

/// Acks before their commits, `n` of them, each a violation of `ack-after-commit`; one event
/// committed and acked in order shows the scenario reports commits.
fn acks_before_commits(n: usize) -> Vec<Event> {
    let mut v = vec![ev(Kind::RunStart, "recorder")];
    for i in 0..n {
        let e = format!("e{i}");
        v.push(
            ev(Kind::Delivered, "worker")
                .event(&e)
                .attempt(1)
                .broker(i as u64 + 1),
        );
        v.push(ev(Kind::Acked, "worker").event(&e).broker(i as u64 + 1));
    }
    v.push(
        ev(Kind::Delivered, "worker")
            .event("ok")
            .attempt(1)
            .broker(n as u64 + 1),
    );
    v.push(
        ev(Kind::EffectCommitted, "worker")
            .event("ok")
            .task("t")
            .rev(1)
            .amount(1, 1),
    );
    v.push(ev(Kind::Acked, "worker").event("ok").broker(n as u64 + 1));
    v
}

#[test]
fn violations_beyond_the_examples_are_counted() {
    let n = 50_000;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "acks.parquet", &acks_before_commits(n));
    let report = check_paths(&[path]).expect("check");
    let o = outcome(&report, "ack-after-commit");
    assert_eq!(o.verdict, Verdict::Fail);
    assert_eq!(o.violations.len(), EXAMPLES);
    assert_eq!(o.more, n - EXAMPLES);
    // The examples are the earliest: the acks of e0, e1, e2.
    let names = &report.loaded.names;
    let events: Vec<&str> = o
        .violations
        .iter()
        .map(|v| names.name(v.event.unwrap()))
        .collect();
    assert_eq!(events, ["e0", "e1", "e2"]);
}

/// One event delivered to `lives` lives of one worker, each committing then acking, but the
/// last, which acks first.
fn one_event_many_lives(lives: u32) -> Vec<Event> {
    let mut v = vec![ev(Kind::RunStart, "recorder")];
    for i in 0..lives {
        let d = ev(Kind::Delivered, "worker")
            .event("e")
            .attempt(i + 1)
            .broker(1)
            .inc(i);
        let c = ev(Kind::EffectCommitted, "worker")
            .event("e")
            .task("t")
            .rev(1)
            .amount(1, 1);
        let a = ev(Kind::Acked, "worker").event("e").broker(1).inc(i);
        if i + 1 == lives {
            v.extend([d, a, c.inc(i)]);
        } else {
            v.extend([d, c.inc(i), a]);
        }
    }
    v
}

#[test]
fn one_event_delivered_to_many_lives_is_judged_per_life() {
    let lives = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "lives.parquet", &one_event_many_lives(lives));
    let report = check_paths(&[path]).expect("check");
    let o = outcome(&report, "ack-after-commit");
    assert_eq!(o.verdict, Verdict::Fail, "{o:?}");
    assert_eq!((o.violations.len(), o.more), (1, 0));
    let Finding::AckBeforeCommit { ack, .. } = o.violations[0].finding else {
        panic!("{o:?}");
    };
    let ack = report.loaded.histories[0].row(ack);
    assert_eq!((ack.kind, ack.incarnation), (Kind::Acked, lives - 1));
}

#[test]
fn the_html_report_embeds_at_most_its_scenarios_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let n = MAX_SCENARIOS + 5;
    let path = write(dir.path(), "many.parquet", &one_row_scenarios(n));
    let traces = vec![path];
    let scenes = Scenes::load(&traces).expect("load");
    let eventful = page::eventful(&scenes, EVENTFUL);
    let built = page::build(&scenes, &traces, &eventful).expect("page");
    assert_eq!(built.scenarios.len(), MAX_SCENARIOS);
    assert_eq!(built.rows.len(), MAX_SCENARIOS);
    assert_eq!(
        (built.caps.scenarios_embedded, built.caps.scenarios_total),
        (MAX_SCENARIOS, n)
    );
    let html = outbox_analyzer::report::html::to_html(&built).expect("html");
    assert!(html.contains(&format!("\"scenarios_total\":{n}")));
}
