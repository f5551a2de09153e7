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
    let (mut counter, mut n, mut effects) = (0i64, 0u64, 0i64);
    let mut life = 0u32;
    while t.seq + 10 < rows {
        n += 1;
        let (task, ev) = (format!("t-{n}"), format!("evt-{n}"));
        let rev = n as i64 * 3;
        let about = |task: &str| About {
            aggregate_id: Some(format!("acct-{}", n % 100)),
            aggregate_seq: Some(n),
            ..About::new(ev.clone(), task.to_string())
        };
        let event = || About::new(ev.clone(), None);
        let note = Note::default;
        let suppressed = || Step::DuplicateSuppressed {
            about: event(),
            broker_seq: None,
            note: note(),
        };
        let acked = || Step::Acked {
            about: event(),
            broker_seq: Some(n),
            note: note(),
        };
        t.push(
            "api",
            0,
            Step::TaskAccepted {
                about: about(&task),
                store_rev: Some(rev),
                amount: None,
                note: note(),
            },
        );
        t.push(
            "api",
            0,
            Step::IntentRecorded {
                about: about(&task).loose(),
                store_rev: Some(rev),
                amount: None,
                note: note(),
            },
        );
        t.push(
            "relay",
            0,
            Step::PublishAttempt {
                about: event(),
                attempt: Some(1),
                note: note(),
            },
        );
        t.push(
            "relay",
            0,
            Step::PublishAcked {
                about: event(),
                attempt: Some(1),
                broker_seq: Some(n),
                note: note(),
            },
        );
        t.push(
            "relay",
            0,
            Step::OutboxMarked {
                about: event(),
                store_rev: Some(rev + 1),
                note: note(),
            },
        );
        t.push("worker", life, Step::delivery(event(), 1, n));
        counter += 2;
        effects += 1;
        t.push(
            "worker",
            life,
            Step::EffectCommitted {
                about: About::new(ev.clone(), task.clone()),
                store_rev: Some(rev + 2),
                amount: Some(2),
                counter: Some(counter),
                counter_key: None,
                broker_seq: None,
                note: note(),
            },
        );
        if n % 1000 == 0 {
            t.push("worker", life, Step::crash("after-commit-before-ack", None));
            life += 1;
            t.push("worker", life, Step::Restart);
            t.push("worker", life, Step::delivery(event(), 2, n));
            t.push("worker", life, suppressed());
        }
        t.push("worker", life, acked());
        if n % 10 == 0 {
            t.push("worker", life, Step::delivery(event(), 2, n));
            t.push("worker", life, suppressed());
            t.push("worker", life, acked());
        }
        if t.rows.len() >= 1 << 16 {
            w.write(&t.rows)?;
            t.rows.clear();
        }
    }
    let observed = detail::Observed {
        counter: Some(counter.into()),
        results: Some(effects),
        dedup_keys: Some(effects),
        stream_messages: Some(n as i64),
        ..detail::Observed::default()
    };
    t.push("observer", 0, Step::Observed(observed));
    let end = detail::RunEnd {
        recovered: Some(true),
        ..detail::RunEnd::default()
    };
    t.push("recorder", 0, Step::RunEnd(end));
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
