//! Every way into a trace besides Parquet files: OTLP protobuf files, one OTLP JSON document,
//! streams (standard input), empty files, and the span-clock note kept through Parquet.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use outbox_trace::input::{sniff, Compression, Encoding};
use outbox_trace::otlp::proto;
use outbox_trace::{
    read_trace, Event, FileInfo, Kind, Metadata, ReadOptions, TraceError, TraceFile, TraceWriter,
};
use prost::Message;

/// One span with `outbox.kind` = `kind` and `outbox.seq` = `seq`, as protobuf.
fn proto_span(kind: &str, seq: i64, at: u64) -> proto::Span {
    let kv = |k: &str, v: proto::any_value::Value| proto::KeyValue {
        key: k.into(),
        value: Some(proto::AnyValue { value: Some(v) }),
    };
    proto::Span {
        name: kind.into(),
        start_time_unix_nano: at,
        end_time_unix_nano: at,
        attributes: vec![
            kv(
                "outbox.kind",
                proto::any_value::Value::StringValue(kind.into()),
            ),
            kv("outbox.seq", proto::any_value::Value::IntValue(seq)),
        ],
        ..proto::Span::default()
    }
}

fn traces_data() -> proto::TracesData {
    proto::TracesData {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(proto::Resource {
                attributes: vec![proto::KeyValue {
                    key: "service.name".into(),
                    value: Some(proto::AnyValue {
                        value: Some(proto::any_value::Value::StringValue("recorder".into())),
                    }),
                }],
            }),
            scope_spans: vec![proto::ScopeSpans {
                scope: None,
                spans: vec![
                    proto_span("run_start", 1, 1_000),
                    proto_span("run_end", 2, 2_000),
                ],
            }],
        }],
    }
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn kinds(path: &Path) -> Vec<Kind> {
    read_trace(path)
        .unwrap()
        .events
        .iter()
        .map(|e| e.kind)
        .collect()
}

#[test]
fn an_otlp_protobuf_file_is_told_by_its_content_plain_or_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = traces_data().encode_to_vec();
    assert_eq!(bytes[0], 0x0a);
    let plain = write(&dir, "spans.bin", &bytes);
    assert_eq!(
        sniff(&plain).unwrap(),
        (Encoding::OtlpProtobuf, Compression::None)
    );
    assert_eq!(kinds(&plain), vec![Kind::RunStart, Kind::RunEnd]);
    let trace = read_trace(&plain).unwrap();
    assert_eq!(trace.events[0].run_id, "spans", "the file's stem");
    assert!(!trace.info.seq_from_clocks);
    let gz = write(&dir, "spans.pb.gz", &gzip(&bytes));
    assert_eq!(
        sniff(&gz).unwrap(),
        (Encoding::OtlpProtobuf, Compression::Gzip)
    );
    assert_eq!(kinds(&gz), vec![Kind::RunStart, Kind::RunEnd]);
    assert_eq!(read_trace(&gz).unwrap().events[0].run_id, "spans");
    // Starts like protobuf, but is not one.
    let broken = write(&dir, "broken.bin", &bytes[..bytes.len() - 3]);
    let err = read_trace(&broken).unwrap_err().to_string();
    assert!(err.contains("starts like OTLP protobuf"), "{err}");
    // A text file that starts with a blank line is still text.
    let text = write(
        &dir,
        "blank-first.jsonl",
        b"\n{\"run_id\":\"r\",\"scenario\":\"s\",\"seq\":1,\"ts_ns\":0,\"backend\":\"b\",\"actor\":\"a\",\"incarnation\":0,\"kind\":\"restart\"}\n",
    );
    assert_eq!(sniff(&text).unwrap().0, Encoding::JsonLines);
    assert_eq!(kinds(&text), vec![Kind::Restart]);
}

#[test]
fn one_pretty_printed_traces_data_document_is_read_and_other_documents_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let doc = serde_json::json!({"resourceSpans": [{"resource": {"attributes": []},
        "scopeSpans": [{"spans": [
            {"name": "a", "startTimeUnixNano": "5", "endTimeUnixNano": "9",
             "attributes": [{"key": "outbox.kind", "value": {"stringValue": "restart"}},
                            {"key": "service.name", "value": {"stringValue": "worker"}}]}]}]}]});
    let pretty = serde_json::to_string_pretty(&doc).unwrap();
    assert!(pretty.lines().count() > 5);
    let path = write(&dir, "doc.json", pretty.as_bytes());
    assert_eq!(sniff(&path).unwrap().0, Encoding::OtlpJson);
    let trace = read_trace(&path).unwrap();
    assert_eq!(trace.events.len(), 1);
    assert_eq!(trace.events[0].actor, "worker");
    assert!(trace.info.seq_from_clocks);
    for (name, text) in [
        ("rows.json", "[\n  {\"run_id\": \"r\"}\n]\n"),
        ("row.json", "{\n  \"run_id\": \"r\",\n  \"seq\": 1\n}\n"),
    ] {
        let path = write(&dir, name, text.as_bytes());
        let err = read_trace(&path).unwrap_err().to_string();
        assert!(
            err.contains("spread over several lines")
                && err.contains("jq -c")
                && err.contains("JSON Lines"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
    }
}

#[test]
fn empty_files_are_named_empty_not_parquet_without_a_footer() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(&dir, "e.jsonl", b"");
    let err = read_trace(&empty).unwrap_err().to_string();
    assert_eq!(err, "the file is empty (0 bytes): no events");
    let gz = write(&dir, "e.jsonl.gz", &gzip(b""));
    let err = read_trace(&gz).unwrap_err().to_string();
    assert_eq!(
        err,
        "the file is empty (0 bytes after gzip decompression): no events"
    );
    let blank = write(&dir, "b.jsonl", b"\n \n");
    assert!(matches!(read_trace(&blank), Err(TraceError::Empty)));
}

fn rows() -> Vec<Event> {
    (1..=3)
        .map(|seq| {
            let mut e = Event::new(Kind::Restart);
            e.run_id = "r".into();
            e.scenario = "s".into();
            e.backend = "b".into();
            e.actor = "worker".into();
            e.seq = seq;
            e
        })
        .collect()
}

#[test]
fn a_stream_is_read_once_parquet_spooled_the_rest_as_it_comes() {
    let mut parquet = Vec::new();
    let mut w = TraceWriter::new(&mut parquet, None).unwrap();
    w.write(&rows()).unwrap();
    w.finish().unwrap();
    let stdin = Path::new("-");
    let open = |bytes: Vec<u8>| {
        TraceFile::open_reader(Cursor::new(bytes), stdin, &ReadOptions::default())
            .and_then(TraceFile::read_all)
    };
    let trace = open(parquet).unwrap();
    assert_eq!(trace.events, rows());
    assert_eq!(trace.info.path, Path::new("-"));
    let jsonl = b"{\"run_id\":\"r\",\"scenario\":\"s\",\"seq\":1,\"ts_ns\":0,\"backend\":\"b\",\"actor\":\"worker\",\"incarnation\":0,\"kind\":\"restart\"}\n";
    let trace = open(gzip(jsonl)).unwrap();
    assert_eq!(trace.events, rows()[..1]);
    assert_eq!(trace.info.encoding, Encoding::JsonLines);
    let trace = open(traces_data().encode_to_vec()).unwrap();
    assert_eq!(trace.events[0].run_id, "stdin");
    assert!(matches!(open(Vec::new()), Err(TraceError::EmptyFile(_))));
}

#[test]
fn the_span_clock_note_survives_a_parquet_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let note = Metadata {
        run_json: Some("{\"backend\":\"otel\"}".into()),
        seq_from_clocks: true,
    };
    let mut w = TraceWriter::create_with(&path, &note).unwrap();
    w.write(&rows()).unwrap();
    w.finish().unwrap();
    let info: FileInfo = read_trace(&path).unwrap().info;
    assert!(info.seq_from_clocks);
    assert_eq!(info.metadata(), note);
    let plain = dir.path().join("plain.parquet");
    let mut w = TraceWriter::create(&plain, None).unwrap();
    w.write(&rows()).unwrap();
    w.finish().unwrap();
    assert!(!read_trace(&plain).unwrap().info.seq_from_clocks);
    // JSON Lines says it on its metadata line.
    let jsonl = dir.path().join("t.jsonl");
    std::fs::write(
        &jsonl,
        "{\"outbox_trace\": {\"schema_version\": \"1\", \"seq_source\": \"span-clocks\"}}\n{\"run_id\":\"r\",\"scenario\":\"s\",\"seq\":1,\"ts_ns\":0,\"backend\":\"b\",\"actor\":\"worker\",\"incarnation\":0,\"kind\":\"restart\"}\n",
    )
    .unwrap();
    assert!(read_trace(&jsonl).unwrap().info.seq_from_clocks);
}
