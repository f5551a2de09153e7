use std::collections::BTreeMap;

use super::*;

#[test]
fn integers_may_be_strings_and_wrong_types_read_as_absent() {
    let d = Detail::parse(
        Kind::Observed,
        r#"{"counter": "10", "results": 3, "tasks": true, "extra": 1}"#,
    );
    let o = d.observed().unwrap();
    assert_eq!(o.counter, Some(CounterValue::One(10)));
    assert_eq!(o.results(), Some(3));
    assert_eq!(o.tasks, None);
    assert_eq!(o.other.get("extra"), Some(&Value::from(1)));
}

#[test]
fn recovered_must_be_a_boolean() {
    let end = |t| Detail::parse(Kind::RunEnd, t).run_end().unwrap().recovered;
    assert_eq!(end(r#"{"recovered": true}"#), Some(true));
    assert_eq!(end(r#"{"recovered": "yes"}"#), None);
    assert_eq!(end(r#"{}"#), None);
}

#[test]
fn text_that_is_not_an_object_is_said_so() {
    assert_eq!(Detail::parse(Kind::Crash, "not json"), Detail::NotAnObject);
    assert_eq!(Detail::parse(Kind::Crash, "[1]"), Detail::NotAnObject);
}

#[test]
fn a_detail_key_is_the_name_its_field_is_written_under() {
    let observed = Observed {
        counter: Some(10.into()),
        ..Observed::default()
    };
    let json = serde_json::to_value(&observed).unwrap();
    assert_eq!(json[crate::detail_key!(Observed.counter).as_str()], 10);
    let crash = Crash {
        committed_rev: Some(7),
        ..Crash::default()
    };
    let json = serde_json::to_value(&crash).unwrap();
    assert_eq!(json[crate::detail_key!(Crash.committed_rev).as_str()], 7);
    // A rename would make a field's key differ from its name, which the macro spells.
    let sources = [
        include_str!("mod.rs"),
        include_str!("lenient.rs"),
        include_str!("counter.rs"),
        include_str!("failure.rs"),
        include_str!("note.rs"),
        include_str!("observed.rs"),
        include_str!("run.rs"),
    ];
    let rename = ["serde(", "rename"].concat();
    for source in sources {
        assert!(
            !source.contains(&format!("#[{rename} ="))
                && !source.contains(&format!("{rename}_all")),
            "a detail field is renamed: detail_key! would name the wrong key"
        );
    }
}

#[test]
fn run_metadata_reads_back_typed_and_leniently() {
    let config = RunConfig {
        backend: Some("sqlite-redis".into()),
        scenarios: vec!["dual-write".into()],
        endpoints: [("redis".to_string(), "local".to_string())].into(),
        ack_wait_ms: Some(2000),
        ..RunConfig::default()
    };
    let text = serde_json::to_string(&config).unwrap();
    assert_eq!(RunConfig::parse(&text), Some(config));
    let odd = RunConfig::parse(r#"{"scenarios": "x", "endpoints": [1], "cluster": "3"}"#)
        .expect("wrong types read as absent, not as an unreadable object");
    assert!(odd.scenarios.is_empty() && odd.endpoints.is_empty());
    assert_eq!(odd.cluster, Some(3));
}

#[test]
fn a_detail_round_trips_through_its_text() {
    let crash = Detail::Crash(Crash {
        point: "after-commit-before-ack".into(),
        ..Crash::default()
    });
    assert_eq!(Detail::parse(Kind::Crash, &crash.to_json()), crash);
    let observed = Detail::Observed(Observed {
        counter: Some(10.into()),
        duplicates: Some([("evt-1".to_string(), 2)].into()),
        ..Observed::default()
    });
    assert_eq!(Detail::parse(Kind::Observed, &observed.to_json()), observed);
}

#[test]
fn a_counter_is_a_number_or_an_object_by_key() {
    let start = |t| {
        Detail::parse(Kind::RunStart, t)
            .run_start()
            .unwrap()
            .counter_start
            .clone()
    };
    assert_eq!(
        start(r#"{"counter_start": "5"}"#),
        Some(CounterValue::One(5))
    );
    let by_key = start(r#"{"counter_start": {"apple": 3, "pear": "4", "plum": "x"}}"#);
    let expected: BTreeMap<String, i64> =
        [("apple".to_string(), 3), ("pear".to_string(), 4)].into();
    assert_eq!(by_key, Some(CounterValue::ByKey(expected)));
    let by_key = by_key.unwrap();
    assert_eq!(by_key.of_key(Some("pear")), Some(4));
    assert_eq!(by_key.of_key(None), None);
    assert_eq!(by_key.one(), None);
    assert_eq!(start(r#"{"counter_start": true}"#), None);
    let observed = Detail::Observed(Observed {
        counter: Some(CounterValue::ByKey([("apple".to_string(), 7)].into())),
        ..Observed::default()
    });
    assert!(observed.to_json().contains(r#""counter":{"apple":7}"#));
    assert_eq!(Detail::parse(Kind::Observed, &observed.to_json()), observed);
}

#[test]
fn the_keys_of_a_system_run_read_back_typed() {
    let start = Detail::parse(
        Kind::RunStart,
        r#"{"records": ["task_accepted", "some_future_kind", 3], "system": {"name": "shop"},
            "faults": ["kill worker after effect_committed", {"fault": "crash"}],
            "chaos": {"seed": 7}}"#,
    );
    let start = start.run_start().unwrap();
    assert_eq!(
        start.records.as_deref(),
        Some(&["task_accepted".to_string(), "some_future_kind".to_string()][..])
    );
    assert_eq!(start.system, Some(serde_json::json!({"name": "shop"})));
    assert_eq!(
        start.faults,
        vec![
            "kill worker after effect_committed".to_string(),
            r#"{"fault":"crash"}"#.to_string()
        ]
    );
    let older = Detail::parse(
        Kind::RunStart,
        r#"{"faults": {"api": [], "relay": [{"fault": "lose-publish-ack"}]}}"#,
    );
    assert_eq!(
        older.run_start().unwrap().faults,
        vec![r#"{"fault":"lose-publish-ack"}"#.to_string()]
    );
    let crash = Detail::parse(
        Kind::Crash,
        r#"{"point": "exit", "status": "3", "announced": false}"#,
    );
    let crash = crash.crash().unwrap();
    assert_eq!((crash.status, crash.announced), (Some(3), Some(false)));
    let status = |t| Detail::parse(Kind::Crash, t).crash().unwrap().status;
    assert_eq!(status(r#"{"status": "exit status: 3"}"#), None);
    assert_eq!(status(r#"{"status": 4294967296}"#), None);
    let end = Detail::parse(
        Kind::RunEnd,
        r#"{"recovered": true, "elapsed_ms": 12, "tasks_sent": "10", "tasks_answered": 9,
            "tasks_resent": 1, "tasks_unanswered": -1}"#,
    );
    let end = end.run_end().unwrap();
    assert_eq!(
        (
            end.elapsed_ms,
            end.tasks_sent,
            end.tasks_answered,
            end.tasks_resent
        ),
        (Some(12), Some(10), Some(9), Some(1))
    );
    assert_eq!(
        end.tasks_unanswered, None,
        "a negative count reads as absent"
    );
    let fault = Detail::parse(
        Kind::Fault,
        r#"{"fault": "pause", "target": "db", "duration_ms": 250}"#,
    );
    let fault = fault.fault().unwrap();
    assert_eq!(
        (fault.target.as_deref(), fault.duration_ms),
        (Some("db"), Some(250))
    );
    assert_eq!(
        crate::detail_key!(RunEnd.tasks_unanswered).as_str(),
        "tasks_unanswered"
    );
    assert_eq!(crate::detail_key!(RunStart.records).as_str(), "records");
    assert_eq!(crate::detail_key!(Crash.announced).as_str(), "announced");
    assert_eq!(
        crate::detail_key!(Fault.duration_ms).as_str(),
        "duration_ms"
    );
}

#[test]
fn crash_points_and_fault_kinds_read_typed_and_leniently() {
    use crate::fault::{CrashSite, FaultKind};
    let crash = |t| Detail::parse(Kind::Crash, t).crash().unwrap().clone();
    let killed = crash(r#"{"point": "worker:after-effect_committed", "announced": true}"#);
    assert!(matches!(killed.point, CrashSite::AfterStep(_)));
    assert_eq!(killed.point, "worker:after-effect_committed");
    assert_eq!(crash(r#"{"point": "exit"}"#).point, CrashSite::Exit);
    let lab = crash(r#"{"point": "relay:before-publish"}"#);
    assert_eq!(lab.point, CrashSite::Other("relay:before-publish".into()));
    assert!(Detail::Crash(lab)
        .to_json()
        .contains(r#""point":"relay:before-publish""#));
    // No point, or one that is not a string: the empty name, written back as it read.
    for text in [
        r#"{}"#,
        r#"{"point": 3}"#,
        r#"{"point": null}"#,
        r#"{"point": ""}"#,
    ] {
        let c = crash(text);
        assert_eq!(c.point, CrashSite::default(), "{text}");
        assert_eq!(c.point.as_str(), "");
        assert_eq!(Detail::Crash(c).to_json(), r#"{"point":""}"#);
    }
    let fault = |t| Detail::parse(Kind::Fault, t).fault().unwrap().clone();
    assert_eq!(
        fault(r#"{"fault": "broker-restart"}"#).fault,
        FaultKind::BrokerRestart
    );
    let odd = fault(r#"{"fault": "flood", "target": "db"}"#);
    assert_eq!(odd.fault, FaultKind::Other("flood".into()));
    assert_eq!(
        Detail::Fault(odd).to_json(),
        r#"{"fault":"flood","target":"db"}"#
    );
    for text in [r#"{}"#, r#"{"fault": ["pause"]}"#] {
        let f = fault(text);
        assert_eq!(f.fault, FaultKind::default(), "{text}");
        assert_eq!(Detail::Fault(f).to_json(), r#"{"fault":""}"#);
    }
}

#[test]
fn fault_coverage_reads_back_and_names_the_named_faults_that_never_fired() {
    let start = Detail::parse(
        Kind::RunStart,
        r#"{"faults": ["kill worker after outbox_marked", "kill relay after publish_acked"],
            "searched": ["pause worker after delivered for 5s"]}"#,
    );
    let start = start.run_start().unwrap();
    assert_eq!(start.searched, ["pause worker after delivered for 5s"]);
    let end = Detail::parse(
        Kind::RunEnd,
        r#"{"recovered": true, "faults": [
              {"spec": "kill worker after outbox_marked", "fired": 0,
               "why": "worker reported no outbox_marked"},
              {"spec": "kill relay after publish_acked", "fired": "1", "first_ms": 40},
              {"spec": "pause worker after delivered for 5s", "fired": 0},
              "not an entry"],
            "chaos": {"armed": [{"role": "worker", "kind": "acked", "fault": "kill worker after acked", "fired": 2}]},
            "shape": {"worker": {"kinds": {"delivered": {"count": 40, "gap_median_ms": 12}},
                                 "export_lag_ms": 1}}}"#,
    );
    let end = end.run_end().unwrap();
    assert_eq!(
        end.faults.len(),
        3,
        "an entry that is no object is left out"
    );
    assert_eq!((end.faults[1].fired, end.faults[1].first_ms), (1, Some(40)));
    let unfired: Vec<&str> = end
        .named_unfired(start)
        .map(|f| f.why.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(unfired, ["worker reported no outbox_marked"]);
    assert_eq!(end.chaos.as_ref().unwrap().armed[0].fired, 2);
    assert_eq!(
        end.shape["worker"].kinds["delivered"].gap_median_ms,
        Some(12)
    );
    assert_eq!(crate::detail_key!(RunEnd.faults).as_str(), "faults");
    let text = serde_json::to_string(end).unwrap();
    let again = Detail::parse(Kind::RunEnd, &text);
    assert_eq!(again.run_end().unwrap(), end);
}
