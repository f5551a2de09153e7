//! A large synthetic valid `outbox-trace/1` file, for benchmarks and scale tests.
//!
//! Each task takes eight rows (accepted, intent, publish attempt and ACK, mark, delivery, commit,
//! consumer ACK); every tenth task has a lost consumer ACK followed by a redelivery and a
//! suppression; every thousandth task's worker crashes between its commit and its ACK, and the
//! next worker life gets the copy again and suppresses it. The run ends with observed totals and
//! `recovered: true`.

use std::path::Path;

use outbox_trace::{Event, Kind, TraceError, TraceWriter};

/// Writes about `rows` events to `path`; returns the rows and tasks written.
pub fn write(path: &Path, rows: u64) -> Result<(u64, u64), TraceError> {
    let mut w = TraceWriter::create(path, None)?;
    let mut seq = 0u64;
    let mut buf: Vec<Event> = Vec::with_capacity(1 << 16);
    push(&mut buf, &mut seq, Kind::RunStart, "recorder");
    let (mut counter, mut n, mut effects) = (0i64, 0u64, 0i64);
    let mut life = 0u32;
    while seq + 10 < rows {
        n += 1;
        let (t, ev) = (format!("t-{n}"), format!("evt-{n}"));
        let rev = n as i64 * 3;
        let agg = format!("acct-{}", n % 100);
        for kind in [Kind::TaskAccepted, Kind::IntentRecorded] {
            let e = push(&mut buf, &mut seq, kind, "api");
            e.task_id = Some(t.clone());
            e.event_id = Some(ev.clone());
            e.store_rev = Some(rev);
            e.aggregate_id = Some(agg.clone());
            e.aggregate_seq = Some(n);
        }
        let e = push(&mut buf, &mut seq, Kind::PublishAttempt, "relay");
        e.event_id = Some(ev.clone());
        e.attempt = Some(1);
        let e = push(&mut buf, &mut seq, Kind::PublishAcked, "relay");
        e.event_id = Some(ev.clone());
        e.attempt = Some(1);
        e.broker_seq = Some(n);
        let e = push(&mut buf, &mut seq, Kind::OutboxMarked, "relay");
        e.event_id = Some(ev.clone());
        e.store_rev = Some(rev + 1);
        let e = push(&mut buf, &mut seq, Kind::Delivered, "worker");
        e.incarnation = life;
        e.event_id = Some(ev.clone());
        e.attempt = Some(1);
        e.broker_seq = Some(n);
        counter += 2;
        effects += 1;
        let e = push(&mut buf, &mut seq, Kind::EffectCommitted, "worker");
        e.incarnation = life;
        e.task_id = Some(t.clone());
        e.event_id = Some(ev.clone());
        e.amount = Some(2);
        e.counter = Some(counter);
        e.store_rev = Some(rev + 2);
        if n % 1000 == 0 {
            let e = push(&mut buf, &mut seq, Kind::Crash, "worker");
            e.incarnation = life;
            e.detail = Some(r#"{"point":"after-commit-before-ack"}"#.into());
            life += 1;
            push(&mut buf, &mut seq, Kind::Restart, "worker").incarnation = life;
            let e = push(&mut buf, &mut seq, Kind::Redelivered, "worker");
            e.incarnation = life;
            e.event_id = Some(ev.clone());
            e.attempt = Some(2);
            e.broker_seq = Some(n);
            let e = push(&mut buf, &mut seq, Kind::DuplicateSuppressed, "worker");
            e.incarnation = life;
            e.event_id = Some(ev.clone());
        }
        let e = push(&mut buf, &mut seq, Kind::Acked, "worker");
        e.incarnation = life;
        e.event_id = Some(ev.clone());
        e.broker_seq = Some(n);
        if n % 10 == 0 {
            let e = push(&mut buf, &mut seq, Kind::Redelivered, "worker");
            e.incarnation = life;
            e.event_id = Some(ev.clone());
            e.attempt = Some(2);
            e.broker_seq = Some(n);
            let e = push(&mut buf, &mut seq, Kind::DuplicateSuppressed, "worker");
            e.incarnation = life;
            e.event_id = Some(ev.clone());
            let e = push(&mut buf, &mut seq, Kind::Acked, "worker");
            e.incarnation = life;
            e.event_id = Some(ev);
            e.broker_seq = Some(n);
        }
        if buf.len() >= 1 << 16 {
            w.write(&buf)?;
            buf.clear();
        }
    }
    let detail = format!(
        r#"{{"counter":{counter},"results":{effects},"dedup_keys":{effects},"stream_messages":{n}}}"#
    );
    push(&mut buf, &mut seq, Kind::Observed, "observer").detail = Some(detail);
    push(&mut buf, &mut seq, Kind::RunEnd, "recorder").detail =
        Some(r#"{"recovered":true}"#.into());
    w.write(&buf)?;
    w.finish()?;
    Ok((seq, n))
}

/// Appends a row of `kind` by `actor` at the next `seq`.
fn push<'a>(buf: &'a mut Vec<Event>, seq: &mut u64, kind: Kind, actor: &str) -> &'a mut Event {
    *seq += 1;
    let mut e = Event::new(kind);
    e.run_id = "synth".into();
    e.scenario = "lost-consumer-ack".into();
    e.backend = "synthetic".into();
    e.actor = actor.into();
    e.seq = *seq;
    e.ts_ns = *seq as i64;
    buf.push(e);
    buf.last_mut().expect("just pushed")
}
