//! Hand-built traces for the tests: the valid lab scenario and small edits that break it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use outbox_analyzer::check::{analyse, Report};
use outbox_analyzer::check::{Outcome, Verdict};
use outbox_trace::{Event, Kind, TraceWriter};

/// Builds one event.
pub fn ev(kind: Kind, actor: &str) -> Event {
    let mut e = Event::new(kind);
    e.run_id = "run-1".into();
    e.scenario = "lost-consumer-ack".into();
    e.backend = "etcd-jetstream".into();
    e.actor = actor.into();
    e
}

/// Chained setters for [`Event`].
pub trait Set {
    fn task(self, t: &str) -> Self;
    fn event(self, e: &str) -> Self;
    fn rev(self, r: i64) -> Self;
    fn attempt(self, a: u32) -> Self;
    fn broker(self, b: u64) -> Self;
    fn amount(self, a: i64, counter: i64) -> Self;
    fn agg(self, id: &str, seq: u64) -> Self;
    fn detail(self, d: &str) -> Self;
    fn inc(self, i: u32) -> Self;
}

impl Set for Event {
    fn task(mut self, t: &str) -> Self {
        self.task_id = Some(t.into());
        self
    }
    fn event(mut self, e: &str) -> Self {
        self.event_id = Some(e.into());
        self
    }
    fn rev(mut self, r: i64) -> Self {
        self.store_rev = Some(r);
        self
    }
    fn attempt(mut self, a: u32) -> Self {
        self.attempt = Some(a);
        self
    }
    fn broker(mut self, b: u64) -> Self {
        self.broker_seq = Some(b);
        self
    }
    fn amount(mut self, a: i64, counter: i64) -> Self {
        self.amount = Some(a);
        self.counter = Some(counter);
        self
    }
    fn agg(mut self, id: &str, seq: u64) -> Self {
        self.aggregate_id = Some(id.into());
        self.aggregate_seq = Some(seq);
        self
    }
    fn detail(mut self, d: &str) -> Self {
        self.detail = Some(d.into());
        self
    }
    fn inc(mut self, i: u32) -> Self {
        self.incarnation = i;
        self
    }
}

/// The lab's `lost-consumer-ack` scenario, correct protocol: three tasks (amounts 2, 3, 5) in one
/// aggregate, each committed with its intent, published, marked after the publish ACK, delivered
/// and committed before the consumer ACK. The first ACK of evt-2 is lost, the copy is redelivered
/// and the dedup key suppresses it. The counter ends at 10; the observer agrees; the run recovered.
pub fn lab() -> Vec<Event> {
    use Kind::*;
    let mut v = vec![ev(RunStart, "recorder").detail(r#"{"tasks":3}"#)];
    let amounts = [2i64, 3, 5];
    for (i, _) in amounts.iter().enumerate() {
        let n = i + 1;
        let (t, e) = (format!("t-{n}"), format!("evt-{n}"));
        let rev = 10 + n as i64;
        v.push(
            ev(TaskAccepted, "api")
                .task(&t)
                .event(&e)
                .rev(rev)
                .agg("acct-1", n as u64),
        );
        v.push(
            ev(IntentRecorded, "api")
                .task(&t)
                .event(&e)
                .rev(rev)
                .agg("acct-1", n as u64),
        );
    }
    for n in 1..=3u64 {
        let e = format!("evt-{n}");
        v.push(ev(PublishAttempt, "relay").event(&e).attempt(1));
        v.push(ev(PublishAcked, "relay").event(&e).attempt(1).broker(n));
        v.push(ev(OutboxMarked, "relay").event(&e).rev(20 + n as i64));
    }
    let mut counter = 0;
    for (i, amount) in amounts.iter().enumerate() {
        let n = i + 1;
        let (t, e) = (format!("t-{n}"), format!("evt-{n}"));
        counter += amount;
        v.push(
            ev(Delivered, "worker")
                .event(&e)
                .attempt(1)
                .broker(n as u64),
        );
        v.push(
            ev(EffectCommitted, "worker")
                .task(&t)
                .event(&e)
                .amount(*amount, counter)
                .rev(30 + n as i64),
        );
        v.push(ev(Acked, "worker").event(&e).broker(n as u64));
        if n == 2 {
            v.push(
                ev(Fault, "faults").detail(r#"{"fault":"drop-consumer-ack","event_id":"evt-2"}"#),
            );
            v.push(ev(Redelivered, "worker").event(&e).attempt(2).broker(2));
            v.push(ev(DuplicateSuppressed, "worker").task(&t).event(&e));
            v.push(ev(Acked, "worker").event(&e).broker(2));
        }
    }
    v.push(ev(Observed, "observer").detail(
        r#"{"stream_messages":3,"counter":10,"results":3,"dedup_keys":3,"outbox_pending":0}"#,
    ));
    v.push(ev(RunEnd, "recorder").detail(r#"{"recovered":true}"#));
    v
}

/// Gives the events consecutive `seq` values in their current order.
pub fn renumber(events: &mut [Event]) {
    for (i, e) in events.iter_mut().enumerate() {
        e.seq = i as u64 + 1;
    }
}

/// The position of the first event of `kind` with `event_id` (any event when `None`).
pub fn find(events: &[Event], kind: Kind, event_id: Option<&str>) -> usize {
    events
        .iter()
        .position(|e| e.kind == kind && (event_id.is_none() || e.event_id.as_deref() == event_id))
        .unwrap_or_else(|| panic!("no {kind} of {event_id:?} in the trace"))
}

/// Writes events (renumbered) to `dir/name`.
pub fn write(dir: &Path, name: &str, events: &[Event]) -> PathBuf {
    let mut events = events.to_vec();
    renumber(&mut events);
    let path = dir.join(name);
    let mut w = TraceWriter::create(&path, None).expect("create");
    w.write(&events).expect("write");
    w.finish().expect("finish");
    path
}

/// Writes and analyses one trace, asserting that the streamed check (`analyzer check`) and the
/// whole-file model (every view) reach the same outcomes, word for word.
pub fn check(events: &[Event]) -> Report {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "t.parquet", events);
    let whole = analyse(std::slice::from_ref(&path)).expect("analyse");
    let streamed = outbox_analyzer::check::check_paths(&[path]).expect("check");
    for write in [
        outbox_analyzer::explain::json::write,
        outbox_analyzer::explain::text::write,
    ] {
        let render = |report: &Report| {
            let mut out = Vec::new();
            write(report, &mut out).expect("render");
            String::from_utf8(out).expect("utf-8")
        };
        assert_eq!(render(&streamed), render(&whole), "streamed vs whole");
    }
    whole
}

/// The outcome of invariant `id` in the only scenario.
pub fn outcome<'a>(report: &'a Report, id: &str) -> &'a Outcome {
    assert_eq!(report.scenarios.len(), 1, "one scenario expected");
    report.scenarios[0]
        .outcomes
        .iter()
        .find(|o| o.invariant.id() == id)
        .unwrap_or_else(|| panic!("no outcome for {id}"))
}

/// Asserts that exactly `failing` fails and every other invariant passes.
pub fn only_fails(report: &Report, failing: &str) {
    for o in &report.scenarios[0].outcomes {
        let id = o.invariant.id();
        if id == failing {
            assert_eq!(o.verdict, Verdict::Fail, "{id} should fail: {o:?}");
        } else {
            assert_eq!(o.verdict, Verdict::Pass, "{id} should pass: {o:?}");
        }
    }
}

/// The `event_id`s named by the violations of `id`.
pub fn failing_events(report: &Report, id: &str) -> Vec<String> {
    let names = &report.loaded.names;
    outcome(report, id)
        .violations
        .iter()
        .filter_map(|v| names.name_opt(v.event).map(str::to_string))
        .collect()
}

/// The `seq`s of the witness rows of the first violation of `id`.
pub fn witness_seqs(report: &Report, id: &str) -> Vec<u64> {
    let h = &report.loaded.histories[0];
    outcome(report, id).violations[0]
        .witness
        .iter()
        .map(|&at| h.rows[at].seq)
        .collect()
}

/// The explanation of the first violation of `id`.
pub fn explanation(report: &Report, id: &str) -> String {
    let h = &report.loaded.histories[0];
    let v = &outcome(report, id).violations[0];
    outbox_analyzer::explain::violation(v, h, &report.loaded.names)
}
