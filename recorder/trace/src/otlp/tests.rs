//! The mapping, through every way in: OTLP JSON Lines files, protobuf and JSON requests, and the
//! live mapper.

use std::collections::BTreeMap;

use prost::Message;
use serde_json::{json, Value as Json};

use super::proto::{self, any_value};
use super::spans::{Attribute, Request, ResourceSpans, Span, SpanEvent};
use super::{decode_request, Body, LiveMapper};
use crate::schema::batch_events;
use crate::{BrokerPosition, Event, Kind, TraceError};

/// The events of OTLP JSON Lines `text`, and whether their `seq` came from span clocks.
pub(super) fn events(text: &str) -> (Vec<Event>, bool) {
    let decoded = super::decode_json_lines(text.as_bytes(), "spans").unwrap();
    let mut unknown = BTreeMap::new();
    let seq_from_clocks = decoded.header.seq_from_clocks;
    let events = decoded
        .batches
        .flat_map(|b| batch_events(&b.unwrap(), &mut unknown))
        .collect();
    (events, seq_from_clocks)
}

/// A span from `start` to `end` with string attributes `attrs` (`"key=value"`; a value of
/// digits only is an integer).
fn span(start: u64, end: u64, attrs: &[&str]) -> Span {
    Span {
        key: None,
        name: "s".into(),
        start_unix_ns: Some(start),
        end_unix_ns: Some(end),
        error: false,
        attributes: attrs.iter().map(|a| attribute(a)).collect(),
        events: Vec::new(),
    }
}

fn attribute(a: &str) -> Attribute {
    let (k, v) = a.split_once('=').unwrap();
    match v.parse::<i64>() {
        Ok(n) => Attribute::int(k, n),
        Err(_) => Attribute::string(k, v),
    }
}

/// A request of one resource (`service.name` = `service`, `service.instance.id` = `instance`).
pub(super) fn request(service: &str, instance: &str, spans: Vec<Span>) -> Request {
    Request {
        resource_spans: vec![ResourceSpans {
            resource: vec![
                Attribute::string("service.name", service),
                Attribute::string("service.instance.id", instance),
            ],
            spans,
        }],
    }
}

/// The events of one whole "file" of requests, as the file decoder numbers them.
pub(super) fn file_events(requests: &[Request]) -> Result<Vec<Event>, String> {
    let mut file = super::file::FileMapping::new("t");
    for r in requests {
        file.request(r)
            .map_err(|e| e.into_trace(TraceError::Otlp).to_string())?;
    }
    let decoded = file.finish().map_err(|e| e.to_string())?;
    let mut unknown = BTreeMap::new();
    Ok(decoded
        .batches
        .flat_map(|b| batch_events(&b.unwrap(), &mut unknown))
        .collect())
}

fn kinds(events: &[Event]) -> Vec<(&str, i64)> {
    events.iter().map(|e| (e.kind.as_str(), e.ts_ns)).collect()
}

#[test]
fn messaging_spans_and_span_events_map_as_the_contract_says() {
    let line = r#"{"resourceSpans":[{"resource":{"attributes":[
        {"key":"service.name","value":{"stringValue":"relay"}},
        {"key":"service.instance.id","value":{"stringValue":"r-b"}}]},
      "scopeSpans":[{"spans":[
        {"name":"publish","startTimeUnixNano":"1000","endTimeUnixNano":"1500","status":{"code":2},
         "attributes":[{"key":"messaging.operation.type","value":{"stringValue":"send"}},
                       {"key":"messaging.message.id","value":{"stringValue":"evt-1"}},
                       {"key":"outbox.attempt","value":{"intValue":"1"}}]},
        {"name":"work","startTimeUnixNano":"2000","endTimeUnixNano":"2600",
         "attributes":[{"key":"outbox.event_id","value":{"stringValue":"evt-1"}}],
         "events":[{"timeUnixNano":"2100","name":"mark","attributes":[
            {"key":"outbox.kind","value":{"stringValue":"outbox_marked"}},
            {"key":"outbox.store_rev","value":{"intValue":7}}]}]}
      ]}]},
      {"resource":{"attributes":[
        {"key":"service.name","value":{"stringValue":"relay"}},
        {"key":"service.instance.id","value":{"stringValue":"r-a"}}]},
      "scopeSpans":[{"spans":[
        {"name":"consume","startTimeUnixNano":"500","endTimeUnixNano":"700","status":{},
         "attributes":[{"key":"messaging.operation.type","value":{"stringValue":"process"}},
                       {"key":"messaging.message.id","value":{"stringValue":"evt-0"}},
                       {"key":"messaging.kafka.offset","value":{"intValue":"42"}},
                       {"key":"outbox.attempt","value":{"intValue":"2"}}]},
        {"name":"other","startTimeUnixNano":"100","endTimeUnixNano":"200","attributes":[]}
      ]}]}]}"#
        .replace('\n', " ");
    let (events, clocks) = events(&line);
    assert!(clocks);
    let got: Vec<(u64, i64, &str, u32, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e.seq,
                e.ts_ns,
                e.kind.as_str(),
                e.incarnation,
                e.event_id.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 0, "redelivered", 0, Some("evt-0")),
            (2, 500, "publish_attempt", 1, Some("evt-1")),
            (3, 1000, "publish_unacked", 1, Some("evt-1")),
            (4, 1600, "outbox_marked", 1, Some("evt-1")),
            // The span `other` maps to no kind: counted in a `run_end` of the scenario's own.
            (5, 1600, "run_end", 0, None),
        ]
    );
    assert_eq!(events[0].broker_seq, Some(42));
    assert_eq!(events[3].store_rev, Some(7));
    let end: crate::detail::RunEnd =
        serde_json::from_str(events[4].detail.as_deref().unwrap()).unwrap();
    let unmapped = end.unmapped.unwrap();
    assert_eq!(
        (unmapped.spans, unmapped.names),
        (1, vec!["other".to_string()])
    );
    assert_eq!(end.recovered, None, "the counts say nothing of recovery");
    assert!(events[..4].iter().all(|e| e.actor == "relay"));
    assert!(events
        .iter()
        .all(|e| e.run_id == "spans" && e.scenario == "default" && e.backend == "otel"));
}
#[test]
fn written_spans_read_back_as_the_same_rows() {
    let mut rows = Vec::new();
    let mut push = |kind: Kind, actor: &str, incarnation: u32, ts_ns: i64| {
        let mut e = Event::new(kind);
        e.run_id = "r1".into();
        e.scenario = "s1".into();
        e.backend = "sqlite-redis".into();
        e.actor = actor.into();
        e.incarnation = incarnation;
        e.seq = rows.len() as u64 + 1;
        e.ts_ns = ts_ns;
        rows.push(e);
        rows.len() - 1
    };
    push(Kind::RunStart, "recorder", 0, 0);
    let t = push(Kind::TaskAccepted, "api", 0, 10);
    // Two rows at one time: `outbox.seq` keeps their order.
    let i = push(Kind::IntentRecorded, "api", 0, 10);
    let c = push(Kind::Crash, "worker", 0, 30);
    push(Kind::Restart, "worker", 1, 40);
    rows[t].task_id = Some("t-1".into());
    rows[t].event_id = Some("evt-1".into());
    rows[t].store_rev = Some(-3);
    rows[i].event_id = Some("evt-1".into());
    rows[i].store_rev = Some(-3);
    rows[i].aggregate_id = Some("a".into());
    rows[i].aggregate_seq = Some(u64::MAX);
    rows[i].counter_key = Some("apple".into());
    rows[c].detail = Some(r#"{"point":"after-commit-before-ack"}"#.into());
    let mut text = Vec::new();
    super::write::write_to(&rows, 1_700_000_000_000_000_000, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains(r#""stringValue":"18446744073709551615""#),
        "{text}"
    );
    assert!(text.contains(r#""intValue":"-3""#), "{text}");
    let (back, clocks) = events(&text);
    assert!(!clocks, "outbox.seq on every span");
    assert_eq!(back, rows);
}

#[test]
fn a_receive_and_a_process_of_one_message_in_one_life_are_one_delivery_at_the_earlier_start() {
    let id = "messaging.message.id=evt-1";
    let spans = vec![
        span(100, 200, &["messaging.operation.type=receive", id]),
        span(150, 300, &["messaging.operation.type=process", id]),
        span(400, 410, &["messaging.operation.type=settle", id]),
    ];
    let got = file_events(&[request("worker", "w-1", spans)]).unwrap();
    assert_eq!(kinds(&got), vec![("delivered", 0), ("acked", 310)]);
    // The process span first in the file: the event still takes the receive's earlier start.
    let spans = vec![
        span(150, 300, &["messaging.operation.type=process", id]),
        span(100, 200, &["messaging.operation.type=receive", id]),
    ];
    let got = file_events(&[request("worker", "w-1", spans)]).unwrap();
    assert_eq!(kinds(&got), vec![("delivered", 0)]);
    // Another life, or the same message delivered again to this life: another delivery.
    let again = vec![
        span(100, 110, &["messaging.operation.type=receive", id]),
        span(120, 130, &["messaging.operation.type=process", id]),
        span(200, 210, &["messaging.operation.type=receive", id]),
        span(220, 230, &["messaging.operation.type=process", id]),
    ];
    let other_life = vec![span(
        300,
        310,
        &["messaging.operation.type=process", id, "outbox.attempt=2"],
    )];
    let got = file_events(&[
        request("worker", "w-1", again),
        request("worker", "w-2", other_life),
    ])
    .unwrap();
    let lives: Vec<(&str, i64, u32)> = got
        .iter()
        .map(|e| (e.kind.as_str(), e.ts_ns, e.incarnation))
        .collect();
    assert_eq!(
        lives,
        vec![
            ("delivered", 0, 0),
            ("delivered", 100, 0),
            ("redelivered", 200, 1)
        ]
    );
}

#[test]
fn settle_is_acked_unless_negative_and_create_is_ignored() {
    let id = "messaging.message.id=evt-1";
    let mut failed = span(50, 60, &["messaging.operation.type=settle", id]);
    failed.error = true;
    let spans = vec![
        span(10, 20, &["messaging.operation.type=create", id]),
        span(
            30,
            40,
            &[
                "messaging.operation.type=settle",
                id,
                "messaging.operation.name=ack",
            ],
        ),
        span(
            30,
            41,
            &[
                "messaging.operation.type=settle",
                id,
                "messaging.operation.name=nack",
            ],
        ),
        span(
            30,
            42,
            &[
                "messaging.operation.type=settle",
                id,
                "messaging.operation.name=Dead_Letter",
            ],
        ),
        span(
            30,
            43,
            &[
                "messaging.operation.type=settle",
                id,
                "messaging.operation.name=release",
            ],
        ),
        failed,
        // The older attribute name.
        span(70, 80, &["messaging.operation=publish", id]),
    ];
    let got = file_events(&[request("relay", "r", spans)]).unwrap();
    assert_eq!(
        kinds(&got),
        vec![("acked", 0), ("publish_attempt", 30), ("publish_acked", 40)]
    );
}

#[test]
fn event_ids_and_broker_positions_fall_back_to_the_libraries_keys() {
    let spans = vec![
        span(
            10,
            20,
            &[
                "messaging.operation.type=process",
                "messaging.masstransit.message_id=mt-1",
            ],
        ),
        span(
            11,
            21,
            &[
                "messaging.operation.type=process",
                "nservicebus.message_id=nsb-1",
            ],
        ),
        span(
            12,
            22,
            &[
                "messaging.operation.type=process",
                "messaging.message_id=old-1",
                "messaging.kafka.offset=42",
            ],
        ),
        span(
            13,
            23,
            &[
                "messaging.operation.type=process",
                "outbox.event_id=e-4",
                "messaging.message.id=1700000000000-3",
            ],
        ),
        span(
            14,
            24,
            &[
                "messaging.operation.type=process",
                "outbox.event_id=e-5",
                "outbox.broker_seq=1700000000000-4",
            ],
        ),
        span(
            15,
            25,
            &[
                "messaging.operation.type=process",
                "outbox.event_id=e-6",
                "messaging.message.id=not-an-entry",
            ],
        ),
    ];
    let got = file_events(&[request("worker", "w", spans)]).unwrap();
    let ids: Vec<Option<&str>> = got.iter().map(|e| e.event_id.as_deref()).collect();
    assert_eq!(
        ids,
        vec![
            Some("mt-1"),
            Some("nsb-1"),
            Some("old-1"),
            Some("e-4"),
            Some("e-5"),
            Some("e-6")
        ]
    );
    let positions: Vec<Option<String>> = got
        .iter()
        .map(|e| e.broker_seq.map(|b| BrokerPosition(b).to_string()))
        .collect();
    assert_eq!(
        positions,
        vec![
            None,
            None,
            Some("42".into()),
            Some("1700000000000-3".into()),
            Some("1700000000000-4".into()),
            None
        ]
    );
    assert!(got[3].broker_seq < got[4].broker_seq, "Redis order kept");
}

#[test]
fn a_bad_value_rejects_its_span_only_and_never_reads_as_zero() {
    let id = "messaging.message.id=evt-1";
    let bad_attempt = span(
        5,
        6,
        &["messaging.operation.type=receive", id, "outbox.attempt=-1"],
    );
    let bad_entry = span(7, 8, &["outbox.kind=acked", "outbox.broker_seq=1-1048576"]);
    let bad_number = span(9, 9, &["outbox.kind=acked", "outbox.store_rev=seven"]);
    let good = span(10, 20, &["messaging.operation.type=receive", id]);
    let pair = span(15, 30, &["messaging.operation.type=process", id]);
    let mut timeless = span(0, 0, &["outbox.kind=acked"]);
    timeless.start_unix_ns = None;
    timeless.end_unix_ns = None;
    let mut live = LiveMapper::new();
    let mapped = live.map(&request(
        "worker",
        "w",
        vec![
            bad_attempt.clone(),
            bad_entry.clone(),
            bad_number.clone(),
            timeless,
            good,
            pair,
        ],
    ));
    assert_eq!(mapped.rejected.len(), 4, "{:?}", mapped.rejected);
    assert!(
        mapped.rejected[0].contains("`outbox.attempt` is out of range: -1"),
        "{:?}",
        mapped.rejected
    );
    assert!(
        mapped.rejected[1].contains("does not fit the packing"),
        "{:?}",
        mapped.rejected
    );
    assert!(
        mapped.rejected[2].contains("must be an integer, found `seven`"),
        "{:?}",
        mapped.rejected
    );
    assert!(
        mapped.rejected[3].contains("neither a start nor an end time"),
        "{:?}",
        mapped.rejected
    );
    // The rejected receive left no half waiting: the good pair is one delivery.
    assert_eq!(mapped.events.len(), 1);
    assert_eq!(mapped.events[0].at_unix_ns, 10);
    // In a file, the first bad span is the error.
    let err = file_events(&[request("worker", "w", vec![bad_number])]).unwrap_err();
    assert!(
        err.contains("span 1 `s`: attribute `outbox.store_rev` must be an integer"),
        "{err}"
    );
}

/// The protobuf request of one resource and its spans, as an SDK's exporter sends it.
fn proto_request(spans: Vec<proto::Span>) -> proto::ExportTraceServiceRequest {
    let kv = |k: &str, v: any_value::Value| proto::KeyValue {
        key: k.into(),
        value: Some(proto::AnyValue { value: Some(v) }),
    };
    let _ = &kv;
    proto::ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(proto::Resource {
                attributes: vec![
                    kv(
                        "service.name",
                        any_value::Value::StringValue("worker".into()),
                    ),
                    kv(
                        "service.instance.id",
                        any_value::Value::StringValue("w-1".into()),
                    ),
                ],
            }),
            scope_spans: vec![proto::ScopeSpans { scope: None, spans }],
        }],
    }
}

fn proto_span(start: u64, end: u64, attrs: Vec<(&str, any_value::Value)>) -> proto::Span {
    proto::Span {
        name: "s".into(),
        start_time_unix_nano: start,
        end_time_unix_nano: end,
        attributes: attrs
            .into_iter()
            .map(|(k, v)| proto::KeyValue {
                key: k.into(),
                value: Some(proto::AnyValue { value: Some(v) }),
            })
            .collect(),
        ..proto::Span::default()
    }
}

fn string(s: &str) -> any_value::Value {
    any_value::Value::StringValue(s.into())
}

#[test]
fn protobuf_and_json_requests_decode_to_the_same_spans() {
    let mut commit = proto_span(
        1_000,
        2_000,
        vec![
            ("outbox.kind", string("effect_committed")),
            ("outbox.event_id", string("evt-1")),
            ("outbox.task_id", string("t-1")),
            ("outbox.amount", any_value::Value::IntValue(3)),
            ("outbox.counter", any_value::Value::IntValue(13)),
            ("outbox.counter_key", string("apple")),
            ("outbox.store_rev", any_value::Value::IntValue(7)),
            ("flag", any_value::Value::BoolValue(true)),
            ("ratio", any_value::Value::DoubleValue(0.5)),
        ],
    );
    commit.events.push(proto::span::Event {
        time_unix_nano: 1_500,
        name: "dup".into(),
        attributes: vec![proto::KeyValue {
            key: "outbox.kind".into(),
            value: Some(proto::AnyValue {
                value: Some(string("duplicate_suppressed")),
            }),
        }],
    });
    commit.status = Some(proto::Status {
        message: String::new(),
        code: proto::STATUS_CODE_ERROR,
    });
    // The ids the JSON below spells in hex.
    commit.trace_id = vec![
        0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6,
        0x0c,
    ];
    commit.span_id = vec![0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74];
    let bytes = proto_request(vec![commit]).encode_to_vec();
    let from_proto = decode_request(&bytes, Body::Protobuf).unwrap();
    let json = json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "worker"}},
            {"key": "service.instance.id", "value": {"stringValue": "w-1"}}]},
        "scopeSpans": [{"scope": {"name": "x"}, "spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "name": "s", "kind": 1, "startTimeUnixNano": "1000", "endTimeUnixNano": 2000,
            "attributes": [
                {"key": "outbox.kind", "value": {"stringValue": "effect_committed"}},
                {"key": "outbox.event_id", "value": {"stringValue": "evt-1"}},
                {"key": "outbox.task_id", "value": {"stringValue": "t-1"}},
                {"key": "outbox.amount", "value": {"intValue": "3"}},
                {"key": "outbox.counter", "value": {"intValue": 13}},
                {"key": "outbox.counter_key", "value": {"stringValue": "apple"}},
                {"key": "outbox.store_rev", "value": {"intValue": "7"}},
                {"key": "flag", "value": {"boolValue": true}},
                {"key": "ratio", "value": {"doubleValue": 0.5}}],
            "events": [{"timeUnixNano": "1500", "name": "dup", "attributes": [
                {"key": "outbox.kind", "value": {"stringValue": "duplicate_suppressed"}}]}],
            "status": {"code": "STATUS_CODE_ERROR"}}]}]}]});
    let from_json = decode_request(json.to_string().as_bytes(), Body::Json).unwrap();
    assert_eq!(from_proto, from_json);
    assert!(from_json.resource_spans[0].spans[0].key.is_some());
    assert_eq!(from_proto.span_count(), 1);
    assert!(from_proto.resource_spans[0].spans[0].error);
    let mapped = LiveMapper::new().map(&from_proto);
    assert!(mapped.rejected.is_empty());
    let got: Vec<(&str, u64, u64)> = mapped
        .events
        .iter()
        .map(|e| (e.event.kind.as_str(), e.at_unix_ns, e.span_end_unix_ns))
        .collect();
    assert_eq!(
        got,
        vec![
            ("duplicate_suppressed", 1_500, 2_000),
            ("effect_committed", 2_000, 2_000)
        ]
    );
    let commit = &mapped.events[1].event;
    assert_eq!(
        (
            commit.amount,
            commit.counter,
            commit.counter_key.as_deref(),
            commit.store_rev
        ),
        (Some(3), Some(13), Some("apple"), Some(7))
    );
    assert_eq!(
        (commit.seq, commit.ts_ns, commit.actor.as_str()),
        (0, 0, "worker")
    );
    assert_eq!(commit.run_id, "", "the receiver stamps the run");
}

#[test]
fn bad_request_bodies_are_errors() {
    for (body, format) in [
        (&b"\xff\xff\xff"[..], Body::Protobuf),
        (&b"not json"[..], Body::Json),
        (&br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}"#[..], Body::Json),
        (&br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"endTimeUnixNano": -5}]}]}]}"#[..], Body::Json),
    ] {
        let err = decode_request(body, format).unwrap_err();
        assert!(matches!(err, TraceError::Otlp(_)), "{err}");
    }
    let err = decode_request(
        br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "w", "startTimeUnixNano": "soon"}]}]}]}"#,
        Body::Json,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("span `w`: `startTimeUnixNano` is not a time: \"soon\""),
        "{err}"
    );
}

#[test]
fn the_live_mapper_pairs_halves_across_requests_and_ranks_instances_by_arrival() {
    let id = ("messaging.message.id", string("evt-1"));
    let op = |o: &str| ("messaging.operation.type", string(o));
    let mut live = LiveMapper::new();
    let first = Request::from(proto_request(vec![proto_span(
        100,
        200,
        vec![op("receive"), id.clone()],
    )]));
    let second = Request::from(proto_request(vec![proto_span(
        150,
        300,
        vec![op("process"), id.clone()],
    )]));
    let a = live.map(&first);
    let b = live.map(&second);
    assert_eq!(a.events.len(), 1);
    assert_eq!(
        (a.events[0].event.kind, a.events[0].at_unix_ns),
        (Kind::Delivered, 100)
    );
    assert!(b.events.is_empty() && b.rejected.is_empty(), "{b:?}");
    // A second instance of the worker is its next life.
    let mut later = proto_request(vec![proto_span(400, 500, vec![op("process"), id])]);
    later.resource_spans[0]
        .resource
        .as_mut()
        .unwrap()
        .attributes[1]
        .value = Some(proto::AnyValue {
        value: Some(string("w-2")),
    });
    let c = live.map(&Request::from(later));
    assert_eq!(c.events[0].event.incarnation, 1);
}

#[test]
fn a_span_event_sees_its_own_attributes_then_its_spans_then_its_resources() {
    let mut s = span(10, 50, &["outbox.event_id=from-span", "outbox.store_rev=1"]);
    s.events.push(SpanEvent {
        name: "e".into(),
        time_unix_ns: Some(20),
        attributes: vec![
            attribute("outbox.kind=intent_recorded"),
            attribute("outbox.store_rev=2"),
        ],
    });
    let got = file_events(&[request("api", "a", vec![s])]).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].event_id.as_deref(), got[0].store_rev),
        (Some("from-span"), Some(2))
    );
    assert_eq!(got[0].actor, "api");
}

#[test]
fn unknown_kinds_are_kept_by_name() {
    let mapped = LiveMapper::new().map(&request(
        "x",
        "x",
        vec![span(1, 2, &["outbox.kind=future_kind"])],
    ));
    assert_eq!(
        mapped.events[0].unknown_kind.as_deref(),
        Some("future_kind")
    );
    let _ = Json::Null;
}

#[test]
fn a_broker_without_positions_maps_and_refused_or_unmapped_spans_are_counted() {
    use super::{Counts, Why};
    let mut redelivery = span(
        300,
        310,
        &[
            "messaging.operation.type=receive",
            "messaging.message.id=m-1",
        ],
    );
    redelivery.attributes.push(Attribute {
        key: "messaging.rabbitmq.message.redelivered".into(),
        value: super::spans::Value::Bool(true),
    });
    let mut get = span(50, 60, &["http.request.method=GET"]);
    get.name = "GET /tasks".into();
    let spans = vec![
        // RabbitMQ: no position, no attempt; a publish confirm and a first delivery.
        span(
            100,
            110,
            &["messaging.operation.type=send", "messaging.message.id=m-1"],
        ),
        span(
            200,
            210,
            &[
                "messaging.operation.type=receive",
                "messaging.message.id=m-1",
            ],
        ),
        redelivery,
        span(
            320,
            330,
            &[
                "messaging.operation.type=settle",
                "messaging.message.id=m-1",
            ],
        ),
        // An own kind without a column identifying its step, a span of no kind at all, and
        // one with `outbox.*` attributes but no kind (on it or its events).
        span(
            400,
            410,
            &[
                "outbox.kind=task_accepted",
                "outbox.event_id=m-1",
                "outbox.store_rev=3",
            ],
        ),
        get,
        span(
            500,
            510,
            &[
                "outbox.task_id=t-1",
                "outbox.event_id=m-1",
                "outbox.store_rev=4",
            ],
        ),
    ];
    let mapped = LiveMapper::new().map(&request("svc", "i-1", spans));
    let kinds: Vec<(&str, Option<u32>, Option<u64>)> = mapped
        .events
        .iter()
        .map(|e| (e.event.kind.as_str(), e.event.attempt, e.event.broker_seq))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("publish_attempt", None, None),
            ("publish_acked", None, None),
            ("delivered", None, None),
            ("redelivered", None, None),
            ("acked", None, None),
        ]
    );
    let mut counts = Counts::default();
    for d in &mapped.dropped {
        counts.add(&d.why);
    }
    assert!(matches!(&mapped.dropped[0].why, Why::Refused(m) if m.kind == Kind::TaskAccepted));
    assert!(matches!(&mapped.dropped[2].why, Why::Kindless));
    let mut end = crate::detail::RunEnd::default();
    counts.fill(&mut end);
    let text = serde_json::to_string(&end).unwrap();
    assert_eq!(
        text,
        r#"{"refused":{"(none)":{"spans":1,"missing":["kind"]},"task_accepted":{"spans":1,"missing":["task_id"]}},"unmapped":{"spans":1,"names":["GET /tasks"]}}"#
    );
    // And back, leniently (a bare count is a count).
    let back: crate::detail::RunEnd =
        serde_json::from_str(r#"{"refused":{"acked":3},"unmapped":2}"#).unwrap();
    assert_eq!(back.refused["acked"].spans, 3);
    assert_eq!(back.unmapped.unwrap().spans, 2);
    let back: crate::detail::RunEnd = serde_json::from_str(&text).unwrap();
    assert_eq!(back.refused["task_accepted"].missing, vec!["task_id"]);
}

#[test]
fn a_span_received_twice_gives_its_rows_once_and_the_copy_is_counted() {
    let mut commit = span(
        100,
        110,
        &[
            "outbox.kind=effect_committed",
            "outbox.event_id=m-1",
            "outbox.task_id=t-1",
        ],
    );
    commit.key =
        super::spans::SpanKey::of_hex("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let mut other = commit.clone();
    other.key =
        super::spans::SpanKey::of_hex("0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7");
    let mut live = LiveMapper::new();
    let first = live.map(&request("svc", "i-1", vec![commit.clone(), other]));
    // Without amount, counter or store_rev the commit is a row all the same.
    assert_eq!(first.events.len(), 2, "{first:?}");
    assert!(first.dropped.is_empty(), "{first:?}");
    let again = live.map(&request("svc", "i-1", vec![commit]));
    assert!(again.events.is_empty(), "{again:?}");
    assert!(matches!(
        again.dropped[..],
        [super::Dropped {
            why: super::Why::Copy,
            ..
        }]
    ));
    let mut counts = super::Counts::default();
    counts.add(&again.dropped[0].why);
    let mut end = crate::detail::RunEnd::default();
    counts.fill(&mut end);
    assert_eq!(end.duplicate_spans, Some(1));
    // Ids of the wrong length or all zeros identify nothing.
    assert_eq!(super::spans::SpanKey::of(&[0; 16], &[1; 8]), None);
    assert_eq!(
        super::spans::SpanKey::of_hex("abc", "b7ad6b7169203331"),
        None
    );
}
