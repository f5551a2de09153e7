use super::*;
use crate::detail::{Crash, Fault, Observed, RunEnd, RunStart};
use crate::{Event, Field, Kind};

fn about() -> About {
    About {
        event_id: "evt-t1".into(),
        task_id: Some("t1".into()),
        aggregate_id: Some("agg-1".into()),
        aggregate_seq: Some(2),
    }
}

fn task_about() -> About<String> {
    About::new("evt-t1", "t1".to_string())
}

fn reason(text: &str) -> Note {
    Note {
        reason: Some(text.into()),
        ..Note::default()
    }
}

/// One step of every kind, most with their optional columns and a note.
fn every_step() -> Vec<Step> {
    let none = Note::default;
    vec![
        Step::RunStart(RunStart {
            protocol: Some("reference".into()),
            workers: Some(2),
            faults: vec!["worker:between-commit-and-ack".into()],
            ..RunStart::default()
        }),
        Step::TaskAccepted {
            about: task_about(),
            store_rev: Some(7),
            amount: Some(3),
            note: none(),
        },
        Step::IntentRecorded {
            about: about(),
            store_rev: Some(7),
            amount: Some(3),
            note: Note {
                seen_in: Some("store".into()),
                ..Note::default()
            },
        },
        Step::PublishAttempt {
            about: about(),
            attempt: Some(1),
            note: none(),
        },
        Step::PublishAcked {
            about: about(),
            attempt: Some(2),
            broker_seq: Some(11),
            partition: Some(2),
            note: Note {
                broker_duplicate: Some(true),
                ..Note::default()
            },
        },
        Step::PublishUnacked {
            about: about(),
            attempt: Some(1),
            note: Note {
                fault: Some("lose-publish-ack".into()),
                ..reason("timeout")
            },
        },
        Step::PublishFailed {
            about: About::new("evt-t2", None),
            attempt: None,
            note: reason("broker down"),
        },
        Step::OutboxMarked {
            about: about(),
            store_rev: Some(9),
            note: none(),
        },
        Step::delivery(about(), 1, 11),
        Step::delivery(about(), 3, 11),
        Step::EffectCommitted {
            about: task_about(),
            store_rev: Some(12),
            amount: Some(3),
            counter: Some(10),
            counter_key: Some("item-1".into()),
            broker_seq: Some(11),
            partition: Some(2),
            note: none(),
        },
        Step::DuplicateSuppressed {
            about: about(),
            broker_seq: Some(11),
            partition: Some(2),
            note: Note {
                committed_rev: Some(12),
                counter_after: Some(10),
                amount: Some(3),
                ..Note::default()
            },
        },
        Step::CommitConflict {
            about: about(),
            broker_seq: None,
            partition: None,
            note: none(),
        },
        Step::Acked {
            about: about(),
            broker_seq: Some(11),
            partition: Some(2),
            note: none(),
        },
        Step::crash("worker:after-commit-before-ack", Some(about())),
        Step::Crash {
            about: None,
            crash: Crash {
                point: "error".into(),
                error: Some("store: gone".into()),
                ..Crash::default()
            },
        },
        Step::Restart,
        Step::Fault(Fault {
            fault: "broker-restart".into(),
            down_ms: Some(120),
            ..Fault::default()
        }),
        Step::ExternalRequest {
            about: about(),
            attempt: Some(1),
            amount: Some(3),
            note: Note {
                idempotency_key: Some(false),
                ..Note::default()
            },
        },
        Step::ExternalApplied {
            about: About::new("evt-t1", Some("t1".into())),
            amount: Some(3),
            note: none(),
        },
        Step::ExternalReplayed {
            about: about(),
            amount: None,
            note: none(),
        },
        Step::Observed(Observed {
            counter: Some(10.into()),
            duplicates: Some(Default::default()),
            other: [("db".to_string(), serde_json::json!("/tmp/x.db"))]
                .into_iter()
                .collect(),
            ..Observed::default()
        }),
        Step::RunEnd(RunEnd {
            recovered: Some(true),
            elapsed_ms: Some(1234),
            ..RunEnd::default()
        }),
    ]
}

fn identity() -> Identity {
    Identity {
        run_id: "r1".into(),
        scenario: "s".into(),
        seq: 4,
        ts_ns: 99,
        backend: "etcd-jetstream".into(),
        actor: "worker-2".into(),
        incarnation: 1,
    }
}

#[test]
fn every_kind_has_a_step() {
    let kinds: Vec<Kind> = every_step().iter().map(Step::kind).collect();
    for kind in Kind::ALL {
        assert!(kinds.contains(kind), "no step of kind {kind}");
    }
}

#[test]
fn every_step_makes_a_complete_row_and_reads_back_equal() {
    for step in every_step() {
        let row = step.clone().into_event(identity());
        assert_eq!(row.kind, step.kind());
        assert!(row.missing_fields().is_empty(), "{step:?}: {row:?}");
        assert_eq!(Identity::of(&row), identity());
        assert_eq!(Step::try_from(&row).as_ref(), Ok(&step), "{row:?}");
    }
}

#[test]
fn every_step_row_survives_the_columns_both_ways() {
    let rows: Vec<Event> = every_step()
        .into_iter()
        .enumerate()
        .map(|(i, step)| {
            step.into_event(Identity {
                seq: i as u64 + 1,
                ..identity()
            })
        })
        .collect();
    let batch = crate::to_batch(&rows).unwrap();
    assert_eq!(batch.num_columns(), crate::schema::COLUMNS.len());
    let mut unknown = std::collections::BTreeMap::new();
    assert_eq!(crate::batch_events(&batch, &mut unknown), rows);
    assert!(unknown.is_empty());
}

#[test]
fn every_step_round_trips_through_its_json() {
    for step in every_step() {
        let text = serde_json::to_string(&step).unwrap();
        let back: Step = serde_json::from_str(&text).unwrap();
        assert_eq!(back, step, "{text}");
    }
    let text = serde_json::to_string(&Step::Restart).unwrap();
    assert_eq!(text, r#""restart""#);
}

#[test]
fn details_are_written_with_sorted_keys_and_notes_only_when_they_say_something() {
    let row = Step::RunEnd(RunEnd {
        recovered: Some(true),
        reason: Some("quiet".into()),
        elapsed_ms: Some(5),
        ..RunEnd::default()
    })
    .into_event(identity());
    assert_eq!(
        row.detail.as_deref(),
        Some(r#"{"elapsed_ms":5,"reason":"quiet","recovered":true}"#)
    );
    let row = Step::delivery(about(), 1, 3).into_event(identity());
    assert_eq!(row.detail, None);
}

#[test]
fn a_row_missing_a_required_field_is_no_step() {
    let commit = || {
        every_step()
            .into_iter()
            .find(|s| s.kind() == Kind::EffectCommitted)
            .unwrap()
            .into_event(identity())
    };
    let mut row = commit();
    row.task_id = None;
    let err = Step::try_from(&row).unwrap_err();
    assert_eq!(err.kind, Kind::EffectCommitted);
    assert_eq!(err.fields, vec![Field::TaskId]);
    assert_eq!(err.to_string(), "a `effect_committed` row lacks task_id");

    // What only some invariants read is no part of the step's identity: the row is kept.
    let mut counterless = commit();
    counterless.counter = None;
    counterless.amount = None;
    counterless.store_rev = None;
    assert_eq!(
        counterless.missing_fields(),
        vec![Field::Amount, Field::Counter, Field::StoreRev]
    );
    assert!(matches!(
        Step::try_from(&counterless),
        Ok(Step::EffectCommitted {
            store_rev: None,
            amount: None,
            counter: None,
            ..
        })
    ));

    let mut crash = Step::crash("exit", None).into_event(identity());
    crash.detail = Some("not json".into());
    assert_eq!(
        Step::try_from(&crash).unwrap_err().fields,
        vec![Field::Detail]
    );
    crash.detail = None;
    assert_eq!(
        Step::try_from(&crash).unwrap_err().fields,
        vec![Field::Detail]
    );

    // A broker without positions or delivery counts: the delivery is a step all the same.
    let mut delivered = Step::delivery(about(), 1, 3).into_event(identity());
    delivered.broker_seq = None;
    delivered.attempt = None;
    assert!(matches!(
        Step::try_from(&delivered),
        Ok(Step::Delivered {
            attempt: None,
            broker_seq: None,
            ..
        })
    ));
    delivered.event_id = None;
    assert_eq!(
        Step::try_from(&delivered).unwrap_err().fields,
        vec![Field::EventId]
    );
}
