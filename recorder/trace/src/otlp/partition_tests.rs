//! The column `partition` through the mapping: `outbox.partition`, else the messaging
//! conventions' partition id, else the older Kafka attribute; written back as `outbox.partition`.

use super::spans::{Attribute, Span};
use super::tests::{events, file_events, request};
use crate::{Event, Kind};

/// A `process` span of event `id` with the extra attributes `attrs`.
fn process(start: u64, id: &str, attrs: Vec<Attribute>) -> Span {
    let mut attributes = vec![
        Attribute::string("messaging.operation.type", "process"),
        Attribute::string("messaging.message.id", id),
        Attribute::int("messaging.kafka.offset", 5),
    ];
    attributes.extend(attrs);
    Span {
        key: None,
        name: "consume".into(),
        start_unix_ns: Some(start),
        end_unix_ns: Some(start + 10),
        error: false,
        attributes,
        events: Vec::new(),
    }
}

/// The rows of a file of one request of `spans`, by the worker.
fn mapped(spans: Vec<Span>) -> Result<Vec<Event>, String> {
    file_events(&[request("worker", "w-1", spans)])
}

#[test]
fn partition_comes_from_outbox_partition_else_the_messaging_partition_id() {
    let spans = vec![
        process(100, "e-1", vec![Attribute::int("outbox.partition", 2)]),
        process(
            200,
            "e-2",
            vec![Attribute::string("messaging.destination.partition.id", "3")],
        ),
        process(
            300,
            "e-3",
            vec![Attribute::int("messaging.kafka.destination.partition", 4)],
        ),
        process(
            400,
            "e-4",
            vec![
                Attribute::int("outbox.partition", 1),
                Attribute::string("messaging.destination.partition.id", "7"),
            ],
        ),
        process(500, "e-5", Vec::new()),
    ];
    let rows = mapped(spans).unwrap();
    assert!(rows
        .iter()
        .all(|e| e.kind == Kind::Delivered && e.broker_seq == Some(5)));
    let got: Vec<(Option<&str>, Option<i32>)> = rows
        .iter()
        .map(|e| (e.event_id.as_deref(), e.partition))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("e-1"), Some(2)),
            (Some("e-2"), Some(3)),
            (Some("e-3"), Some(4)),
            (Some("e-4"), Some(1)),
            (Some("e-5"), None),
        ]
    );
}

#[test]
fn a_partition_that_is_no_int32_is_an_error_naming_the_attribute() {
    for bad in [
        Attribute::string("messaging.destination.partition.id", "p-0"),
        Attribute::int("outbox.partition", 1 << 40),
    ] {
        let key = bad.key.clone();
        let err = mapped(vec![process(100, "e-1", vec![bad])]).unwrap_err();
        assert!(err.contains(&format!("`{key}`")), "{err}");
    }
}

#[test]
fn partition_is_written_as_outbox_partition_and_reads_back() {
    let mut rows = Vec::new();
    for (seq, partition) in [(1, Some(0)), (2, Some(9)), (3, None)] {
        let mut e = Event::new(Kind::Delivered);
        e.run_id = "r1".into();
        e.scenario = "s1".into();
        e.backend = "kafka".into();
        e.actor = "worker".into();
        e.seq = seq;
        e.ts_ns = (seq as i64 - 1) * 10;
        e.event_id = Some(format!("e-{seq}"));
        e.attempt = Some(1);
        e.broker_seq = Some(5);
        e.partition = partition;
        rows.push(e);
    }
    let mut text = Vec::new();
    super::write::write_to(&rows, 1_700_000_000_000_000_000, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(r#"{"key":"outbox.partition","value":{"intValue":"9"}}"#),
        "{text}"
    );
    let (back, _) = events(&text);
    assert_eq!(back, rows);
}
