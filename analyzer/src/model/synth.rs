//! A large synthetic valid `outbox-trace/1` file, for benchmarks and scale tests.
//!
//! Each task takes eight rows (accepted, intent, publish attempt and ACK, mark, delivery, commit,
//! consumer ACK); every tenth task has a lost consumer ACK followed by a redelivery and a
//! suppression; every thousandth task's worker crashes between its commit and its ACK, and the
//! next worker life gets the copy again and suppresses it. The run ends with observed totals and
//! `recovered: true`.

use std::path::Path;

use outbox_trace::detail::{self, Note};
use outbox_trace::{About, Event, Identity, Step, TraceError, TraceWriter};

/// Writes about `rows` events to `path`; returns the rows and tasks written.
pub fn write(path: &Path, rows: u64) -> Result<(u64, u64), TraceError> {
    let mut w = TraceWriter::create(path, None)?;
    let mut t = Trace::default();
    t.push("recorder", 0, Step::RunStart(detail::RunStart::default()));
    let mut worker = Worker::default();
    let mut n = 0u64;
    while t.seq + 10 < rows {
        n += 1;
        t.task(n, &mut worker);
        if t.rows.len() >= 1 << 16 {
            w.write(&t.rows)?;
            t.rows.clear();
        }
    }
    t.end(&worker, n);
    w.write(&t.rows)?;
    w.finish()?;
    Ok((t.seq, n))
}

/// The rows not yet written and the last `seq` given.
#[derive(Default)]
struct Trace {
    rows: Vec<Event>,
    seq: u64,
}

impl Trace {
    /// Appends `step` by `actor#incarnation` at the next `seq` (its `ts_ns` too: one tick a row).
    fn push(&mut self, actor: &str, incarnation: u32, step: Step) {
        self.seq += 1;
        let identity = Identity {
            run_id: "synth".into(),
            scenario: "lost-consumer-ack".into(),
            seq: self.seq,
            ts_ns: self.seq as i64,
            backend: "synthetic".into(),
            actor: actor.into(),
            incarnation,
        };
        self.rows.push(step.into_event(identity));
    }
}

/// The worker's side across tasks: its life, and the counter and effects it committed.
#[derive(Default)]
struct Worker {
    life: u32,
    counter: i64,
    effects: i64,
}

/// Task `n`'s event, `evt-<n>`, without its task.
fn event(n: u64) -> About {
    About::new(format!("evt-{n}"), None)
}

/// Task `n` with its event and aggregate (`acct-<n % 100>`, at `aggregate_seq` `n`).
fn task(n: u64) -> About<String> {
    About {
        aggregate_id: Some(format!("acct-{}", n % 100)),
        aggregate_seq: Some(n),
        ..About::new(format!("evt-{n}"), format!("t-{n}"))
    }
}

/// The consumer's ACK of task `n`'s copy.
fn acked(n: u64) -> Step {
    Step::Acked {
        about: event(n),
        broker_seq: Some(n),
        partition: None,
        note: Note::default(),
    }
}

/// A suppressed duplicate of task `n`'s event.
fn suppressed(n: u64) -> Step {
    Step::DuplicateSuppressed {
        about: event(n),
        broker_seq: None,
        partition: None,
        note: Note::default(),
    }
}

/// The run's steps, task by task.
impl Trace {
    /// Task `n`'s rows: accepted with its intent, published, consumed.
    fn task(&mut self, n: u64, worker: &mut Worker) {
        let rev = n as i64 * 3;
        self.accept(n, rev);
        self.relay(n, rev);
        self.consume(n, rev, worker);
    }

    /// The API accepts task `n` and records its intent, in store transaction `rev`.
    fn accept(&mut self, n: u64, rev: i64) {
        let accepted = Step::TaskAccepted {
            about: task(n),
            store_rev: Some(rev),
            amount: None,
            note: Note::default(),
        };
        self.push("api", 0, accepted);
        let intent = Step::IntentRecorded {
            about: task(n).loose(),
            store_rev: Some(rev),
            amount: None,
            note: Note::default(),
        };
        self.push("api", 0, intent);
    }

    /// The relay publishes task `n`'s event, gets its ACK and marks it (transaction `rev + 1`).
    fn relay(&mut self, n: u64, rev: i64) {
        let attempt = Step::PublishAttempt {
            about: event(n),
            attempt: Some(1),
            note: Note::default(),
        };
        self.push("relay", 0, attempt);
        let acked = Step::PublishAcked {
            about: event(n),
            attempt: Some(1),
            broker_seq: Some(n),
            partition: None,
            note: Note::default(),
        };
        self.push("relay", 0, acked);
        let marked = Step::OutboxMarked {
            about: event(n),
            store_rev: Some(rev + 1),
            note: Note::default(),
        };
        self.push("relay", 0, marked);
    }

    /// The worker gets task `n`'s copy and commits its effect (transaction `rev + 2`); every
    /// thousandth crashes before its ACK and suppresses the copy in its next life; every tenth
    /// loses its ACK and suppresses the redelivery.
    fn consume(&mut self, n: u64, rev: i64, worker: &mut Worker) {
        self.push("worker", worker.life, Step::delivery(event(n), 1, n));
        worker.counter += 2;
        worker.effects += 1;
        let committed = Step::EffectCommitted {
            about: About::new(format!("evt-{n}"), format!("t-{n}")),
            store_rev: Some(rev + 2),
            amount: Some(2),
            counter: Some(worker.counter),
            counter_key: None,
            broker_seq: None,
            partition: None,
            note: Note::default(),
        };
        self.push("worker", worker.life, committed);
        if n % 1000 == 0 {
            let crash = Step::crash("after-commit-before-ack", None);
            self.push("worker", worker.life, crash);
            worker.life += 1;
            self.push("worker", worker.life, Step::Restart);
            self.push("worker", worker.life, Step::delivery(event(n), 2, n));
            self.push("worker", worker.life, suppressed(n));
        }
        self.push("worker", worker.life, acked(n));
        if n % 10 == 0 {
            self.push("worker", worker.life, Step::delivery(event(n), 2, n));
            self.push("worker", worker.life, suppressed(n));
            self.push("worker", worker.life, acked(n));
        }
    }

    /// The observer's totals after `tasks` tasks, and `run_end` with `recovered: true`.
    fn end(&mut self, worker: &Worker, tasks: u64) {
        let observed = detail::Observed {
            counter: Some(worker.counter.into()),
            results: Some(worker.effects),
            dedup_keys: Some(worker.effects),
            stream_messages: Some(tasks as i64),
            ..detail::Observed::default()
        };
        self.push("observer", 0, Step::Observed(observed));
        let end = detail::RunEnd {
            recovered: Some(true),
            ..detail::RunEnd::default()
        };
        self.push("recorder", 0, Step::RunEnd(end));
    }
}
