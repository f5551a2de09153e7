//! The external effect: the real receiver process and its idempotency API, and the scenario that
//! kills the worker around the call.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use outbox_analyzer::check::analyse;
use outbox_analyzer::check::Verdict;
use outbox_trace::Kind;

/// Sends one payment and returns (status, replayed, body).
fn pay(addr: &str, event: &str, key: Option<&str>) -> (u16, bool, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let body = format!(r#"{{"event_id":"{event}","task_id":"t-{event}","amount":7}}"#);
    let key = key
        .map(|k| format!("Idempotency-Key: {k}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n{key}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (
        status,
        head.to_ascii_lowercase()
            .contains("idempotent-replayed: true"),
        body.to_string(),
    )
}

#[test]
fn the_receiver_applies_once_per_key_replays_and_says_in_progress() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("recorder"))
        .args(["receiver", "--listen", &addr, "--slow-ms", "600", "--db"])
        .arg(dir.path().join("receiver.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "receiver did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // First request with a key pays; the repeat replays the stored answer.
    let first = pay(&addr, "evt-a", Some("evt-a"));
    assert_eq!((first.0, first.1), (201, false));
    let again = pay(&addr, "evt-a", Some("evt-a"));
    assert_eq!(
        again,
        (201, true, first.2.clone()),
        "same answer, nothing performed"
    );

    // A repeat while the first is still being performed is told so.
    let slow = {
        let addr = addr.clone();
        std::thread::spawn(move || pay(&addr, "evt-b", Some("evt-b")))
    };
    std::thread::sleep(Duration::from_millis(200));
    let busy = pay(&addr, "evt-b", Some("evt-b"));
    assert_eq!(busy.0, 409);
    assert!(busy.2.contains("in progress"), "{}", busy.2);
    assert_eq!(slow.join().unwrap().0, 201);

    // A client that leaves mid-request (a worker killed after sending) does not cancel the
    // payment: once it is done, a repeat replays it.
    {
        let mut gone = TcpStream::connect(&addr).unwrap();
        let body = r#"{"event_id":"evt-d","task_id":"t-evt-d","amount":7}"#;
        write!(
            gone,
            "POST /payments HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nIdempotency-Key: evt-d\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // Leave while the payment is being performed (it takes 600 ms), not before the receiver
        // has read the request: a request never read is no request the receiver took.
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1_500));
    let after = pay(&addr, "evt-d", Some("evt-d"));
    assert_eq!((after.0, after.1), (201, true), "{}", after.2);

    // Without a key every request pays.
    let one = pay(&addr, "evt-c", None);
    let two = pay(&addr, "evt-c", None);
    assert_eq!((one.0, two.0), (201, 201));
    assert_ne!(one.2, two.2, "two payments");

    drop(child.stdin.take());
    let mut kinds = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        // `{"line": "step", "body": {"ts_ns": .., "step": {..}}}`: the receiver's typed steps.
        let line: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(line["line"], "step", "{line}");
        let step: outbox_trace::Step =
            serde_json::from_value(line["body"]["step"].clone()).unwrap();
        let row = step.into_event(outbox_trace::Identity::default());
        kinds.push((row.kind.as_str().to_string(), row.event_id.unwrap()));
    }
    assert!(child.wait().unwrap().success());
    let applied = |id: &str| {
        kinds
            .iter()
            .filter(|(k, e)| k == "external_applied" && e == id)
            .count()
    };
    assert_eq!(applied("evt-a"), 1);
    assert_eq!(applied("evt-b"), 1);
    assert_eq!(applied("evt-c"), 2);
    assert_eq!(applied("evt-d"), 1);
    assert_eq!(
        kinds
            .iter()
            .filter(|(k, _)| k == "external_replayed")
            .count(),
        2
    );
}

#[test]
fn every_crash_around_the_call_retries_it_and_the_key_keeps_one_payment() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(dir.path(), &["--scenario", "external-effect"]);
    let rows = scenario(&events, "external-effect");
    let points: Vec<String> = of(&rows, Kind::Crash)
        .iter()
        .map(|e| crash_point(e))
        .collect();
    for point in [
        "worker:after-external-request",
        "worker:after-external-answer",
        "worker:between-commit-and-ack",
    ] {
        assert_eq!(
            points.iter().filter(|p| *p == point).count(),
            1,
            "{point} fired once: {points:?}"
        );
        // The crashed event's call is made again by a later life.
        let crash = position(&rows, 0, |e| {
            e.kind == Kind::Crash && crash_point(e) == point
        })
        .unwrap();
        let id = rows[crash].event_id.clone();
        assert!(
            position(&rows, crash, |e| e.kind == Kind::ExternalRequest
                && e.event_id == id)
            .is_some(),
            "{point}: the call was retried"
        );
    }
    for task in 1..=3 {
        let id = format!("evt-task-{task}");
        let applied = of(&rows, Kind::ExternalApplied)
            .iter()
            .filter(|e| e.event_id.as_deref() == Some(&id))
            .count();
        assert_eq!(applied, 1, "{id} paid once");
    }
    // A retry that reaches the receiver before the first call was claimed (a loaded machine
    // can hold the dead worker's request that long) is the one that pays, and the first call
    // then finds the key taken: not every crash gives a replay, but the key gives one payment.
    let requests = of(&rows, Kind::ExternalRequest).len();
    let replayed = of(&rows, Kind::ExternalReplayed).len();
    assert!(
        replayed >= 1,
        "a retry was answered from the stored key: {requests} requests, {replayed} replayed"
    );
    assert_eq!(observed(&rows).external_payments, Some(3));
    assert_eq!(observed(&rows).counter, Some(10.into()));
    let report = analyse(&[trace_path(dir.path())]).unwrap();
    assert!(report.scenarios[0]
        .outcomes
        .iter()
        .all(|o| o.verdict == Verdict::Pass));
}

#[test]
fn without_the_key_the_retries_pay_twice_and_the_analyzer_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let events = record_ok(
        dir.path(),
        &[
            "--scenario",
            "external-effect",
            "--protocol",
            "no-idempotency-key",
        ],
    );
    let rows = scenario(&events, "external-effect");
    assert!(observed(&rows).external_payments.unwrap() > 3);
    let report = analyse(&[trace_path(dir.path())]).unwrap();
    let failed: Vec<&str> = report.scenarios[0]
        .outcomes
        .iter()
        .filter(|o| o.verdict == Verdict::Fail)
        .map(|o| o.invariant.id())
        .collect();
    assert_eq!(
        failed,
        vec!["external-single-effect"],
        "the local effect stays single; the payment does not"
    );
}
