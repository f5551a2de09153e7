use std::collections::BTreeMap;

use super::*;

/// The detail of `text`, which must be readable.
fn parse(kind: Kind, text: &str) -> Detail {
    Detail::parse(kind, text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Whether `text` is a bad detail naming `field`.
fn bad(kind: Kind, text: &str, field: &str) -> bool {
    Detail::parse(kind, text).is_err_and(|e| e.message.contains(&format!("`{field}`")))
}

#[test]
fn integers_may_be_strings_and_wrong_types_are_bad_input() {
    let d = parse(
        Kind::Observed,
        r#"{"counter": "10", "results": 3, "tasks": null, "extra": 1}"#,
    );
    let o = d.observed().unwrap();
    assert_eq!(o.counter, Some(CounterValue::One(10)));
    assert_eq!(o.results(), Some(3));
    assert_eq!(o.tasks, None);
    assert_eq!(o.other.get("extra"), Some(&Value::from(1)));
    assert!(bad(Kind::Observed, r#"{"tasks": true}"#, "tasks"));
    assert!(bad(
        Kind::RunStart,
        r#"{"counter_start": [1, 2]}"#,
        "counter_start"
    ));
    assert!(bad(
        Kind::RunStart,
        r#"{"counter_start": {"a": [1]}}"#,
        "counter_start"
    ));
    assert!(bad(Kind::RunStart, r#"{"records": ["a", 3]}"#, "records"));
    assert!(bad(
        Kind::RunEnd,
        r#"{"faults": [{"spec": "x", "fired": "often"}]}"#,
        "faults"
    ));
    let e = Detail::parse(Kind::RunStart, r#"{"counter_start": [1, 2]}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "run_start: detail field `counter_start` holds a list of the wrong type"
    );
}

#[test]
fn recovered_must_be_a_boolean() {
    let end = |t| parse(Kind::RunEnd, t).run_end().unwrap().recovered;
    assert_eq!(end(r#"{"recovered": true}"#), Some(true));
    assert!(bad(Kind::RunEnd, r#"{"recovered": "yes"}"#, "recovered"));
    assert_eq!(end(r#"{}"#), None);
}

#[test]
fn text_that_is_not_an_object_is_said_so() {
    assert_eq!(parse(Kind::Crash, "not json"), Detail::NotAnObject);
    assert_eq!(parse(Kind::Crash, "[1]"), Detail::NotAnObject);
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
    let spelled = RunConfig::parse(r#"{"cluster": "3"}"#).expect("a number as text reads");
    assert_eq!(spelled.cluster, Some(3));
    assert_eq!(
        RunConfig::parse(r#"{"scenarios": "x", "endpoints": [1]}"#),
        None,
        "wrong types make the metadata unreadable, never absent"
    );
}

#[test]
fn a_detail_round_trips_through_its_text() {
    let crash = Detail::Crash(Crash {
        point: "after-commit-before-ack".into(),
        ..Crash::default()
    });
    assert_eq!(parse(Kind::Crash, &crash.to_json()), crash);
    let observed = Detail::Observed(Observed {
        counter: Some(10.into()),
        duplicates: Some([("evt-1".to_string(), 2)].into()),
        ..Observed::default()
    });
    assert_eq!(parse(Kind::Observed, &observed.to_json()), observed);
}

#[test]
fn a_counter_is_a_number_or_an_object_by_key() {
    let start = |t| {
        parse(Kind::RunStart, t)
            .run_start()
            .unwrap()
            .counter_start
            .clone()
    };
    assert_eq!(
        start(r#"{"counter_start": "5"}"#),
        Some(CounterValue::One(5))
    );
    assert!(bad(
        Kind::RunStart,
        r#"{"counter_start": {"apple": 3, "plum": "x"}}"#,
        "counter_start"
    ));
    let by_key = start(r#"{"counter_start": {"apple": 3, "pear": "4"}}"#);
    let expected: BTreeMap<String, i64> =
        [("apple".to_string(), 3), ("pear".to_string(), 4)].into();
    assert_eq!(by_key, Some(CounterValue::ByKey(expected)));
    let by_key = by_key.unwrap();
    assert_eq!(by_key.of_key(Some("pear")), Some(4));
    assert_eq!(by_key.of_key(None), None);
    assert_eq!(by_key.one(), None);
    assert!(bad(
        Kind::RunStart,
        r#"{"counter_start": true}"#,
        "counter_start"
    ));
    let observed = Detail::Observed(Observed {
        counter: Some(CounterValue::ByKey([("apple".to_string(), 7)].into())),
        ..Observed::default()
    });
    assert!(observed.to_json().contains(r#""counter":{"apple":7}"#));
    assert_eq!(parse(Kind::Observed, &observed.to_json()), observed);
}

#[test]
fn the_keys_of_a_system_run_read_back_typed() {
    let start = parse(
        Kind::RunStart,
        r#"{"records": ["task_accepted", "some_future_kind"], "system": {"name": "shop"},
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
    let older = parse(
        Kind::RunStart,
        r#"{"faults": {"api": [], "relay": [{"fault": "lose-publish-ack"}]}}"#,
    );
    assert_eq!(
        older.run_start().unwrap().faults,
        vec![r#"{"fault":"lose-publish-ack"}"#.to_string()]
    );
    let crash = parse(
        Kind::Crash,
        r#"{"point": "exit", "status": "3", "announced": false}"#,
    );
    let crash = crash.crash().unwrap();
    assert_eq!((crash.status, crash.announced), (Some(3), Some(false)));
    assert!(bad(
        Kind::Crash,
        r#"{"status": "exit status: 3"}"#,
        "status"
    ));
    assert!(bad(Kind::Crash, r#"{"status": 4294967296}"#, "status"));
    let end = parse(
        Kind::RunEnd,
        r#"{"recovered": true, "elapsed_ms": 12, "tasks_sent": "10", "tasks_answered": 9,
            "tasks_resent": 1}"#,
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
    assert!(bad(
        Kind::RunEnd,
        r#"{"tasks_unanswered": -1}"#,
        "tasks_unanswered"
    ));
    let fault = parse(
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
    let crash = |t| parse(Kind::Crash, t).crash().unwrap().clone();
    let killed = crash(r#"{"point": "worker:after-effect_committed", "announced": true}"#);
    assert!(matches!(killed.point, CrashSite::AfterStep(_)));
    assert_eq!(killed.point, "worker:after-effect_committed");
    assert_eq!(crash(r#"{"point": "exit"}"#).point, CrashSite::Exit);
    let lab = crash(r#"{"point": "relay:before-publish"}"#);
    assert_eq!(lab.point, CrashSite::Other("relay:before-publish".into()));
    assert!(Detail::Crash(lab)
        .to_json()
        .contains(r#""point":"relay:before-publish""#));
    // No point: the empty name, written back as it read; one that is not a string: bad input.
    assert!(bad(Kind::Crash, r#"{"point": 3}"#, "point"));
    for text in [r#"{}"#, r#"{"point": null}"#, r#"{"point": ""}"#] {
        let c = crash(text);
        assert_eq!(c.point, CrashSite::default(), "{text}");
        assert_eq!(c.point.as_str(), "");
        assert_eq!(Detail::Crash(c).to_json(), r#"{"point":""}"#);
    }
    let fault = |t| parse(Kind::Fault, t).fault().unwrap().clone();
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
    assert!(bad(Kind::Fault, r#"{"fault": ["pause"]}"#, "fault"));
    let f = fault("{}");
    assert_eq!(f.fault, FaultKind::default());
    assert_eq!(Detail::Fault(f).to_json(), r#"{"fault":""}"#);
}

#[test]
fn fault_coverage_reads_back_and_names_the_named_faults_that_never_fired() {
    let start = parse(
        Kind::RunStart,
        r#"{"faults": ["kill worker after outbox_marked", "kill relay after publish_acked"],
            "searched": ["pause worker after delivered for 5s"]}"#,
    );
    let start = start.run_start().unwrap();
    assert_eq!(start.searched, ["pause worker after delivered for 5s"]);
    let end = parse(
        Kind::RunEnd,
        r#"{"recovered": true, "faults": [
              {"spec": "kill worker after outbox_marked", "fired": 0,
               "why": "worker reported no outbox_marked"},
              {"spec": "kill relay after publish_acked", "fired": "1", "first_ms": 40},
              {"spec": "pause worker after delivered for 5s", "fired": 0}],
            "chaos": {"armed": [{"role": "worker", "kind": "acked", "fault": "kill worker after acked", "fired": 2}]},
            "shape": {"worker": {"kinds": {"delivered": {"count": 40, "gap_median_ms": 12}},
                                 "export_lag_ms": 1}}}"#,
    );
    let end = end.run_end().unwrap();
    assert_eq!(end.faults.len(), 3);
    assert!(bad(
        Kind::RunEnd,
        r#"{"faults": [{"spec": "x", "fired": 0}, "not an entry"]}"#,
        "faults"
    ));
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
    let again = parse(Kind::RunEnd, &text);
    assert_eq!(again.run_end().unwrap(), end);
}
