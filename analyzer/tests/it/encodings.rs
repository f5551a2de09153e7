//! The same trace as JSON Lines (plain, gzip, zstd) and as OpenTelemetry spans (OTLP JSON Lines)
//! gets the same verdicts and exit codes as the Parquet file it came from; `import` round-trips;
//! empty and garbage files are bad input; thin data is unknown, not a false verdict; and the
//! lost-span rule.
//!
//! The committed fixtures `tests/fixtures/*.jsonl*` and `*.otlp.jsonl` are derived from the
//! committed Parquet fixtures by the functions below; `fixtures_are_reproducible` fails when they
//! drift. `OUTBOX_WRITE_FIXTURES=1 cargo test -p outbox-analyzer --test encodings` rewrites them.

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::common::{ev, lab, renumber, Set};
use assert_cmd::Command;
use outbox_trace::{read_trace, Event, Kind};
use predicates::prelude::PredicateBooleanExt;
use serde_json::{json, Map, Value};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn analyzer() -> Command {
    Command::cargo_bin("analyzer").expect("binary")
}

/// Exit code and the verdict lines (`  <invariant> pass|FAIL|unknown[: ...]`) of `check`.
fn verdicts(path: &Path) -> (i32, Vec<String>) {
    let out = analyzer().arg("check").arg(path).output().expect("run");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = stdout
        .lines()
        .filter(|l| {
            let mut words = l.trim_start().split(' ');
            l.starts_with("  ")
                && words.next().is_some_and(|w| !w.ends_with(':'))
                && matches!(
                    words.next().map(|w| w.trim_end_matches(':')),
                    Some("pass" | "FAIL" | "unknown")
                )
        })
        .map(str::to_string)
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

/// One event as a JSON Lines object. `strings`: integers as decimal strings and `detail` as an
/// object (the other accepted forms).
fn jsonl_object(e: &Event, strings: bool) -> Value {
    let mut o = Map::new();
    let int = |v: i128| {
        if strings {
            Value::String(v.to_string())
        } else {
            json!(v as i64)
        }
    };
    o.insert("run_id".into(), json!(e.run_id));
    o.insert("scenario".into(), json!(e.scenario));
    o.insert("seq".into(), int(e.seq as i128));
    o.insert("ts_ns".into(), int(e.ts_ns as i128));
    o.insert("backend".into(), json!(e.backend));
    o.insert("actor".into(), json!(e.actor));
    o.insert("incarnation".into(), int(e.incarnation as i128));
    o.insert("kind".into(), json!(e.kind.as_str()));
    let mut put_s = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            o.insert(k.into(), json!(v));
        }
    };
    put_s("task_id", &e.task_id);
    put_s("event_id", &e.event_id);
    put_s("aggregate_id", &e.aggregate_id);
    let nums = [
        ("aggregate_seq", e.aggregate_seq.map(i128::from)),
        ("attempt", e.attempt.map(i128::from)),
        ("broker_seq", e.broker_seq.map(i128::from)),
        ("store_rev", e.store_rev.map(i128::from)),
        ("amount", e.amount.map(i128::from)),
        ("counter", e.counter.map(i128::from)),
    ];
    for (k, v) in nums {
        if let Some(v) = v {
            o.insert(k.into(), int(v));
        }
    }
    if let Some(d) = &e.detail {
        let parsed: Option<Value> = serde_json::from_str(d).ok().filter(Value::is_object);
        let v = match (strings, parsed) {
            (true, Some(obj)) => obj,
            _ => json!(d),
        };
        o.insert("detail".into(), v);
    }
    Value::Object(o)
}

/// A JSON Lines text: the metadata line (when the source has a run configuration), then one
/// event per line in `seq` order.
fn jsonl_text(source: &Path, strings: bool) -> String {
    let trace = read_trace(source).expect("source");
    let mut events = trace.events.clone();
    events.sort_by_key(|e| (e.run_id.clone(), e.seq));
    let mut text = String::new();
    let run: Value = trace
        .info
        .run_json
        .as_deref()
        .and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null);
    text.push_str(&json!({"outbox_trace": {"schema_version": "1", "run": run}}).to_string());
    text.push('\n');
    for e in &events {
        text.push_str(&jsonl_object(e, strings).to_string());
        text.push('\n');
    }
    text
}

/// Spans start at this time (2025-12-01 00:00 UTC, in nanoseconds since the epoch).
const EPOCH_NS: u64 = 1_764_547_200_000_000_000;

fn attr(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn s(v: &str) -> Value {
    json!({"stringValue": v})
}

fn i(v: i128) -> Value {
    json!({"intValue": v.to_string()})
}

/// OTLP JSON Lines as a file exporter writes them: one `TracesData` per actor life (its
/// resource: `service.name` = the actor, `service.instance.id` = one id per life), one span per
/// event at the event's time, every column as an `outbox.*` attribute. `with_seq`: also
/// `outbox.seq` and `outbox.incarnation`; without, the reader derives `seq` from the span times
/// and the incarnation from the instances' order.
fn otlp_text(source: &Path, with_seq: bool) -> String {
    let trace = read_trace(source).expect("source");
    let mut events = trace.events.clone();
    events.sort_by_key(|e| (e.run_id.clone(), e.seq));
    let mut lives: Vec<(String, u32, String, String, String)> = Vec::new();
    for e in &events {
        let key = (
            e.actor.clone(),
            e.incarnation,
            e.run_id.clone(),
            e.scenario.clone(),
            e.backend.clone(),
        );
        if !lives.contains(&key) {
            lives.push(key);
        }
    }
    let mut text = String::new();
    for (n, life) in lives.iter().enumerate() {
        let (actor, inc, run, scenario, backend) = life;
        let spans: Vec<Value> = events
            .iter()
            .filter(|e| {
                (&e.actor, e.incarnation, &e.run_id, &e.scenario, &e.backend)
                    == (actor, *inc, run, scenario, backend)
            })
            .map(|e| {
                let mut attrs = vec![attr("outbox.kind", s(e.kind.as_str()))];
                if with_seq {
                    attrs.push(attr("outbox.seq", i(e.seq as i128)));
                    attrs.push(attr("outbox.incarnation", i(e.incarnation as i128)));
                }
                let strs = [
                    ("outbox.task_id", &e.task_id),
                    ("outbox.event_id", &e.event_id),
                    ("outbox.aggregate_id", &e.aggregate_id),
                    ("outbox.detail", &e.detail),
                ];
                for (k, v) in strs {
                    if let Some(v) = v {
                        attrs.push(attr(k, s(v)));
                    }
                }
                let nums = [
                    ("outbox.aggregate_seq", e.aggregate_seq.map(i128::from)),
                    ("outbox.attempt", e.attempt.map(i128::from)),
                    ("outbox.broker_seq", e.broker_seq.map(i128::from)),
                    ("outbox.store_rev", e.store_rev.map(i128::from)),
                    ("outbox.amount", e.amount.map(i128::from)),
                    ("outbox.counter", e.counter.map(i128::from)),
                ];
                for (k, v) in nums {
                    if let Some(v) = v {
                        attrs.push(attr(k, i(v)));
                    }
                }
                let at = (EPOCH_NS + e.ts_ns as u64).to_string();
                json!({
                    "traceId": format!("{:032x}", e.seq + 1),
                    "spanId": format!("{:016x}", e.seq + 1),
                    "parentSpanId": "",
                    "name": e.kind.as_str(),
                    "kind": 1,
                    "startTimeUnixNano": at,
                    "endTimeUnixNano": at,
                    "attributes": attrs,
                    "status": {"code": 0}
                })
            })
            .collect();
        let resource = vec![
            attr("service.name", s(actor)),
            attr("service.instance.id", s(&format!("{actor}-life-{n}"))),
            attr("outbox.run_id", s(run)),
            attr("outbox.scenario", s(scenario)),
            attr("outbox.backend", s(backend)),
        ];
        let data = json!({"resourceSpans": [{
            "resource": {"attributes": resource},
            "scopeSpans": [{"scope": {"name": "outbox"}, "spans": spans}]
        }]});
        text.push_str(&data.to_string());
        text.push('\n');
    }
    text
}

/// The derived fixtures: (file name, source Parquet fixture, text, compression).
fn derived() -> Vec<(&'static str, &'static str, String, &'static str)> {
    let etcd = fixture("etcd_reference.parquet");
    let bad = fixture("pyarrow_ack_before_commit.parquet");
    vec![
        (
            "etcd_reference.jsonl",
            "etcd_reference.parquet",
            jsonl_text(&etcd, false),
            "",
        ),
        (
            "etcd_reference.jsonl.gz",
            "etcd_reference.parquet",
            jsonl_text(&etcd, true),
            "gz",
        ),
        (
            "pyarrow_ack_before_commit.jsonl.zst",
            "pyarrow_ack_before_commit.parquet",
            jsonl_text(&bad, true),
            "zst",
        ),
        (
            "etcd_reference.otlp.jsonl",
            "etcd_reference.parquet",
            otlp_text(&etcd, true),
            "",
        ),
        (
            "pyarrow_ack_before_commit.otlp.jsonl",
            "pyarrow_ack_before_commit.parquet",
            otlp_text(&bad, false),
            "",
        ),
    ]
}

fn compress(text: &str, how: &str) -> Vec<u8> {
    match how {
        "gz" => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(text.as_bytes()).unwrap();
            enc.finish().unwrap()
        }
        "zst" => zstd::encode_all(text.as_bytes(), 3).unwrap(),
        _ => text.as_bytes().to_vec(),
    }
}

fn decompress(bytes: &[u8], how: &str) -> String {
    let mut out = String::new();
    match how {
        "gz" => {
            flate2::read::MultiGzDecoder::new(bytes)
                .read_to_string(&mut out)
                .unwrap();
        }
        "zst" => out = String::from_utf8(zstd::decode_all(bytes).unwrap()).unwrap(),
        _ => out = String::from_utf8(bytes.to_vec()).unwrap(),
    }
    out
}

#[test]
fn fixtures_are_reproducible() {
    let write = std::env::var_os("OUTBOX_WRITE_FIXTURES").is_some();
    for (name, _, text, how) in derived() {
        let path = fixture(name);
        if write {
            std::fs::write(&path, compress(&text, how)).unwrap();
        }
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{name}: {e} (OUTBOX_WRITE_FIXTURES=1 writes it)"));
        // Compressed bytes depend on the compressor's version; the text must not drift.
        assert!(
            decompress(&committed, how) == text,
            "{name} differs from what its source gives (OUTBOX_WRITE_FIXTURES=1 rewrites it)"
        );
    }
}

#[test]
fn text_encodings_get_the_verdicts_and_exit_codes_of_their_parquet_source() {
    for (name, source, _, _) in derived() {
        let (code, lines) = verdicts(&fixture(source));
        assert!(!lines.is_empty(), "{source}: no verdict lines");
        let (code2, lines2) = verdicts(&fixture(name));
        assert_eq!(code2, code, "{name} vs {source}");
        assert_eq!(lines2, lines, "{name} vs {source}");
    }
    // The sources themselves: one valid, one invalid.
    assert_eq!(verdicts(&fixture("etcd_reference.parquet")).0, 0);
    assert_eq!(verdicts(&fixture("pyarrow_ack_before_commit.parquet")).0, 1);
}

#[test]
fn otlp_without_seq_says_its_order_rests_on_clocks() {
    analyzer()
        .arg("check")
        .arg(fixture("pyarrow_ack_before_commit.otlp.jsonl"))
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "seq comes from span times on separate clocks",
        ))
        .stdout(predicates::str::contains(
            "FAIL ack-after-commit: event_id evt-3",
        ));
}

#[test]
fn an_imported_trace_keeps_the_note_that_seq_came_from_span_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.parquet");
    analyzer()
        .arg("import")
        .arg(fixture("pyarrow_ack_before_commit.otlp.jsonl"))
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    analyzer()
        .arg("check")
        .arg(&out)
        .assert()
        .code(1)
        .stdout(predicates::str::contains(
            "seq comes from span times on separate clocks",
        ));
    // A trace whose seq was recorded says nothing of clocks, imported or not.
    let plain = dir.path().join("plain.parquet");
    analyzer()
        .arg("import")
        .arg(fixture("pyarrow_ack_before_commit.jsonl.zst"))
        .arg("-o")
        .arg(&plain)
        .assert()
        .success();
    analyzer()
        .arg("check")
        .arg(&plain)
        .assert()
        .stdout(predicates::str::contains("separate clocks").not());
}

#[test]
fn import_then_check_equals_check_of_the_source() {
    let dir = tempfile::tempdir().unwrap();
    for (name, source, _, _) in derived() {
        let out = dir.path().join(format!("{name}.parquet"));
        analyzer()
            .args(["import"])
            .arg(fixture(name))
            .arg("-o")
            .arg(&out)
            .assert()
            .code(0)
            .stdout(predicates::str::contains("wrote"));
        assert_eq!(verdicts(&out), verdicts(&fixture(source)), "{name}");
    }
}

#[test]
fn import_of_bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.jsonl");
    std::fs::write(&input, "{\"run_id\": \"r\"}\n").unwrap();
    let out = dir.path().join("out.parquet");
    let done = analyzer()
        .arg("import")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(2);
    let stderr = String::from_utf8(done.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("line 1"), "{stderr}");
    assert!(!out.exists());
}

/// `check` exits 2 with one line on stderr containing `reason`.
fn rejects(path: &Path, reason: &str) {
    let out = analyzer().arg("check").arg(path).assert().code(2);
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(reason), "expected `{reason}` in: {stderr}");
    assert!(out.get_output().stdout.is_empty());
}

#[test]
fn empty_files_are_bad_input_whatever_their_name() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["e.parquet", "e.jsonl", "e.otlp.jsonl", "e.txt"] {
        let path = dir.path().join(name);
        std::fs::write(&path, b"").unwrap();
        rejects(&path, "no events");
    }
    // Blank lines only, an empty gzip stream, only the metadata line: no events either.
    let blank = dir.path().join("blank.jsonl");
    std::fs::write(&blank, "\n  \n").unwrap();
    rejects(&blank, "no events");
    let gz = dir.path().join("e.jsonl.gz");
    std::fs::write(&gz, compress("", "gz")).unwrap();
    rejects(&gz, "no events");
    let meta = dir.path().join("meta.jsonl");
    std::fs::write(&meta, "{\"outbox_trace\": {\"schema_version\": \"1\"}}\n").unwrap();
    rejects(&meta, "no events");
    let otlp = dir.path().join("none.otlp.jsonl");
    std::fs::write(&otlp, "{\"resourceSpans\": []}\n").unwrap();
    rejects(&otlp, "no events");
}

#[test]
fn garbage_is_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.jsonl");
    std::fs::write(&path, [0u8, 159, 146, 150, 1, 2, 3, 10, 200]).unwrap();
    rejects(&path, "nor JSON Lines");
    let zst = dir.path().join("garbage.zst");
    std::fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3, 4, 5, 6]).unwrap();
    rejects(&zst, "zstd");
}

#[test]
fn bad_lines_are_bad_input_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = lab();
    renumber(&mut events);
    let good: Vec<String> = events
        .iter()
        .map(|e| jsonl_object(e, false).to_string())
        .collect();
    let cases = [
        (
            r#"{"run_id":"r","scenario":"s","seq":-1,"ts_ns":0,"backend":"b","actor":"a","incarnation":0,"kind":"acked"}"#,
            "`seq` holds a value that does not fit",
        ),
        (
            r#"{"run_id":"r","scenario":"s","seq":1,"ts_ns":0,"backend":"b","actor":"a","kind":"acked"}"#,
            "`incarnation` must not be null",
        ),
        (
            r#"{"run_id":"r","scenario":"s","seq":"x","ts_ns":0,"backend":"b","actor":"a","incarnation":0,"kind":"acked"}"#,
            "`seq` must be an integer",
        ),
        (
            r#"{"outbox_trace":{"schema_version":"2"}}"#,
            "schema version `2`",
        ),
        ("[1, 2]", "not a JSON object"),
    ];
    for (n, (line, reason)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{n}.jsonl"));
        let mut text = String::new();
        if line.contains("outbox_trace") {
            text.push_str(line);
            text.push('\n');
            text.push_str(&good.join("\n"));
        } else {
            text.push_str(&good[..3].join("\n"));
            text.push('\n');
            text.push_str(line);
        }
        std::fs::write(&path, text).unwrap();
        rejects(&path, reason);
    }
    // A seq repeated within a run.
    let path = dir.path().join("dup.jsonl");
    std::fs::write(&path, format!("{}\n{}\n", good[0], good[0])).unwrap();
    rejects(&path, "repeats seq 1");
}

fn write_jsonl(dir: &Path, name: &str, events: &[Event]) -> PathBuf {
    let mut events = events.to_vec();
    renumber(&mut events);
    let text: Vec<String> = events
        .iter()
        .map(|e| jsonl_object(e, false).to_string())
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, text.join("\n") + "\n").unwrap();
    path
}

fn line_of(path: &Path, invariant: &str) -> String {
    let (_, lines) = verdicts(path);
    lines
        .into_iter()
        .find(|l| l.trim_start().starts_with(&format!("{invariant} ")))
        .unwrap_or_else(|| panic!("no line for {invariant}"))
}

#[test]
fn without_store_rev_intent_atomic_and_counter_exact_are_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let thin: Vec<Event> = lab()
        .into_iter()
        .map(|mut e| {
            e.store_rev = None;
            e
        })
        .collect();
    let path = write_jsonl(dir.path(), "thin.jsonl", &thin);
    for invariant in ["intent-atomic", "counter-exact"] {
        let line = line_of(&path, invariant);
        assert!(
            line.starts_with(&format!("  {invariant} unknown: no store_rev")),
            "{line}"
        );
    }
    // Nothing failed: unknown, exit 3; the other checks still decide.
    assert_eq!(verdicts(&path).0, 3);
    assert!(line_of(&path, "ack-after-commit").ends_with(" pass"));
    // Without observed and run_end rows too.
    let thinner: Vec<Event> = thin
        .into_iter()
        .filter(|e| !matches!(e.kind, Kind::Observed | Kind::RunEnd))
        .collect();
    let path = write_jsonl(dir.path(), "thinner.jsonl", &thinner);
    assert!(line_of(&path, "observed-agrees").contains("unknown: no observed row"));
    assert!(line_of(&path, "no-lost-task").contains("unknown: no run_end row"));
    assert_eq!(verdicts(&path).0, 3);
}

/// The lab trace, where worker#0 ACKs evt-3 before committing it and a worker#1 later redelivers
/// and commits it; with or without worker#0's crash row.
fn acked_early(crash_row: bool) -> Vec<Event> {
    let mut events = lab();
    let at = events
        .iter()
        .position(|e| e.kind == Kind::EffectCommitted && e.event_id.as_deref() == Some("evt-3"))
        .unwrap();
    let mut commit = events.remove(at);
    let ack = events
        .iter()
        .position(|e| e.kind == Kind::Acked && e.event_id.as_deref() == Some("evt-3"))
        .unwrap();
    let mut rest = Vec::new();
    if crash_row {
        rest.push(ev(Kind::Crash, "worker").detail(r#"{"point":"after-ack"}"#));
    }
    rest.push(ev(Kind::Restart, "worker").inc(1));
    rest.push(
        ev(Kind::Redelivered, "worker")
            .event("evt-3")
            .attempt(2)
            .broker(3)
            .inc(1),
    );
    commit.incarnation = 1;
    rest.push(commit);
    rest.push(ev(Kind::Acked, "worker").event("evt-3").broker(3).inc(1));
    for (n, e) in rest.into_iter().enumerate() {
        events.insert(ack + 1 + n, e);
    }
    events
}

#[test]
fn a_life_without_its_crash_row_may_have_lost_spans() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_jsonl(dir.path(), "lost.jsonl", &acked_early(false));
    let line = line_of(&path, "ack-after-commit");
    assert!(
        line.starts_with("  ack-after-commit unknown: worker#0 ends without a crash row"),
        "{line}"
    );
    assert_eq!(verdicts(&path).0, 3);
    // The same as spans: the same verdict.
    let otlp = dir.path().join("lost.otlp.jsonl");
    std::fs::write(
        &otlp,
        otlp_text(
            &common::write(dir.path(), "lost.parquet", &acked_early(false)),
            true,
        ),
    )
    .unwrap();
    assert_eq!(line_of(&otlp, "ack-after-commit"), line);
}

#[test]
fn a_life_with_its_crash_row_is_complete_and_its_violation_stays() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_jsonl(dir.path(), "crashed.jsonl", &acked_early(true));
    let line = line_of(&path, "ack-after-commit");
    assert!(
        line.starts_with("  ack-after-commit FAIL: 1 violation(s)"),
        "{line}"
    );
    assert_eq!(verdicts(&path).0, 1);
}

#[test]
fn a_span_exported_twice_checks_as_the_file_without_the_copy() {
    // An exporter's retry, or a collector's redelivery: the same trace and span id again.
    let source = fixture("etcd_reference.otlp.jsonl");
    let text = std::fs::read_to_string(&source).unwrap();
    let copy = text
        .lines()
        .find_map(|line| {
            let mut request: Value = serde_json::from_str(line).unwrap();
            let spans = &mut request["resourceSpans"][0]["scopeSpans"][0]["spans"];
            let commit = spans
                .as_array()?
                .iter()
                .find(|s| s["name"] == "effect_committed")?
                .clone();
            *spans = json!([commit]);
            Some(request.to_string())
        })
        .expect("the fixture has a commit");
    let dir = tempfile::tempdir().unwrap();
    let twice = dir.path().join("twice.otlp.jsonl");
    std::fs::write(&twice, format!("{text}{copy}\n")).unwrap();
    assert_eq!(verdicts(&twice), verdicts(&source));
    assert_eq!(verdicts(&source).0, 0);
    // The import counts the copy in the scenario's run_end.
    let out = dir.path().join("imported.parquet");
    analyzer()
        .args([
            "import",
            twice.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .assert()
        .success();
    let copies: u64 = read_trace(&out)
        .unwrap()
        .events
        .iter()
        .filter(|e| e.kind == Kind::RunEnd)
        .filter_map(|e| outbox_trace::Detail::parse(e.kind, e.detail.as_deref()?).ok())
        .filter_map(|d| d.run_end()?.duplicate_spans)
        .sum();
    assert_eq!(copies, 1);
}
