//! The dual-write lab on a real SQLite file and a real redis-server: the lab's files, the numbers in
//! the `observed` events, and the analyzer's verdict (every scenario passes but `dual-write`).

use crate::common;

use common::*;
use outbox_analyzer::check::analyse;
use outbox_analyzer::check::Verdict;
use outbox_trace::Kind;

#[test]
fn the_whole_lab_on_sqlite_and_redis() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &["--backend", "sqlite-redis", "--scenario", "all"],
    );
    let lab = dir.path().join("run");
    let read =
        |f: &str| std::fs::read_to_string(lab.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));

    // dual-write: one order saved, nothing published.
    let dual = scenario(&events, "dual-write");
    assert_eq!(observed(&dual).orders, Some(1));
    assert_eq!(observed(&dual).enqueued, Some(0));
    assert_eq!(of(&dual, Kind::PublishFailed).len(), 1);
    assert!(of(&dual, Kind::IntentRecorded).is_empty());
    assert_eq!(
        read("dualwrite.out").lines().next().unwrap(),
        "INCONSISTENT orders=1 published=0"
    );

    // place-order: three orders with three outbox rows; the create that failed before commit left nothing.
    let place = scenario(&events, "place-order");
    assert_eq!(observed(&place).orders, Some(3));
    assert_eq!(observed(&place).outbox, Some(3));
    assert!(place.iter().all(|e| e.task_id.as_deref() != Some("task-4")));
    // Every task and its intent share one store_rev.
    for accepted in of(&place, Kind::TaskAccepted) {
        let intent = of(&place, Kind::IntentRecorded)
            .into_iter()
            .find(|i| i.event_id == accepted.event_id)
            .unwrap();
        assert_eq!(intent.store_rev, accepted.store_rev);
    }

    // relay-idempotent: the second relay run enqueues nothing.
    let idem = scenario(&events, "relay-idempotent");
    let phases: Vec<_> = of(&idem, Kind::Observed)
        .iter()
        .map(|e| observed_in(e).enqueued)
        .collect();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0], Some(3));
    assert_eq!(
        phases[0], phases[1],
        "the list did not grow on the second run"
    );
    assert!(of(&idem, Kind::Restart).iter().any(|e| e.actor == "relay"));

    // aggregate-order: the order's events went out in ascending seq.
    let agg = scenario(&events, "aggregate-order");
    let seqs: Vec<u64> = of(&agg, Kind::PublishAcked)
        .iter()
        .map(|e| e.aggregate_seq.unwrap())
        .collect();
    assert_eq!(seqs, vec![1, 2, 3]);
    assert_eq!(observed(&agg).order_ok, Some(true));
    assert_eq!(read("order_check.out").trim(), "ORDER OK");

    // relay-crash: the same event enqueued twice, applied once.
    let crash = scenario(&events, "relay-crash");
    let duplicates = observed(&crash).duplicates.expect("copies counted");
    let (id, count) = duplicates.iter().next().expect("a duplicate");
    assert_eq!(*count, 2);
    assert_eq!(
        read("atleastonce.out").trim(),
        format!("DUPLICATE event_id={id} count=2")
    );
    assert_eq!(observed(&crash).processed_unique, Some(3));

    // The four-line report adds every scenario's ground truth.
    let report = read("report.txt");
    let value = |key: &str| -> u64 {
        report
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} in {report}"))
            .parse()
            .unwrap()
    };
    assert_eq!(report.lines().count(), 4);
    assert!(value("enqueued") >= value("processed_unique"));
    type Figure = fn(&outbox_trace::detail::Observed) -> Option<i64>;
    let total = |figure: Figure| -> u64 {
        events
            .iter()
            .filter(|e| e.kind == Kind::Observed)
            .map(observed_in)
            .filter(|o| o.phase.is_none())
            .map(|o| figure(&o).unwrap() as u64)
            .sum()
    };
    let figures: [(&str, Figure); 4] = [
        ("orders", |o| o.orders),
        ("outbox", |o| o.outbox),
        ("enqueued", |o| o.enqueued),
        ("processed_unique", |o| o.processed_unique),
    ];
    for (key, figure) in figures {
        assert_eq!(value(key), total(figure), "{key}");
    }
    // SQLite files are real: one per scenario.
    assert!(lab.join("place-order.db").is_file());

    // The analyzer passes every scenario but the dual write, which loses its task.
    let checked = analyse(&[trace_path(dir.path())]).unwrap();
    for s in &checked.scenarios {
        let name = checked
            .loaded
            .names
            .name(checked.loaded.histories[s.history].scenario);
        let failed: Vec<&str> = s
            .outcomes
            .iter()
            .filter(|o| o.verdict == Verdict::Fail)
            .map(|o| o.invariant.id())
            .collect();
        if name == "dual-write" {
            assert!(
                failed.contains(&"intent-atomic") || failed.contains(&"no-lost-task"),
                "{failed:?}"
            );
        } else {
            assert!(
                s.outcomes.iter().all(|o| o.verdict == Verdict::Pass),
                "{name}: {failed:?}"
            );
        }
    }
}

#[test]
fn dual_write_is_refused_on_etcd_jetstream() {
    let dir = tempfile::tempdir().unwrap();
    let output = record(
        dir.path(),
        &["--backend", "etcd-jetstream", "--scenario", "dual-write"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("does not run on backend"));
}
