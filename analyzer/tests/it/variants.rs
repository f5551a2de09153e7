//! Variants of the lab trace for the diagram and comparison tests: real timing, a worker crash
//! between commit and ACK, and the two broken protocols `diff` must tell apart.
#![allow(dead_code)]

use crate::common::{ev, lab, Set};
use outbox_trace::{Event, Kind};

/// The lab trace with real timing and a worker crash between commit and ACK of evt-2: the next
/// life gets the redelivery 2 s later and suppresses it.
pub fn crashed_lab() -> Vec<Event> {
    let mut v = lab();
    let first_ack = v
        .iter()
        .position(|e| e.kind == Kind::Acked && e.event_id.as_deref() == Some("evt-2"))
        .expect("ack of evt-2");
    v[first_ack] = ev(Kind::Crash, "worker")
        .event("evt-2")
        .detail(r#"{"point":"worker:between-commit-and-ack"}"#);
    v.insert(first_ack + 1, ev(Kind::Restart, "worker").inc(1));
    let mut ts = 0i64;
    for (i, e) in v.iter_mut().enumerate() {
        if i > first_ack && e.actor == "worker" {
            e.incarnation = 1;
        }
        ts += if e.kind == Kind::Redelivered {
            2_000_000_000
        } else {
            3_000_000
        };
        e.ts_ns = ts;
    }
    v[0].detail = Some(r#"{"ack_wait_ms":2000,"protocol":"reference"}"#.into());
    v.retain(|e| e.kind != Kind::Fault);
    v
}

/// `ack-before-commit`: the worker ACKs evt-2 right after its delivery, then crashes before the
/// commit; the copy is never redelivered and the task is lost.
pub fn ack_before_commit() -> Vec<Event> {
    let mut v = crashed_lab();
    let commit = v
        .iter()
        .position(|e| e.kind == Kind::EffectCommitted && e.event_id.as_deref() == Some("evt-2"))
        .unwrap();
    let crash = v.iter().position(|e| e.kind == Kind::Crash).unwrap();
    let mut ack = ev(Kind::Acked, "worker").event("evt-2").broker(2);
    ack.ts_ns = v[commit].ts_ns;
    v[commit] = ack;
    v[crash].detail = Some(r#"{"point":"worker:between-ack-and-commit"}"#.into());
    v.retain(|e| {
        !(e.event_id.as_deref() == Some("evt-2")
            && matches!(e.kind, Kind::Redelivered | Kind::DuplicateSuppressed)
            || e.event_id.as_deref() == Some("evt-2")
                && e.kind == Kind::Acked
                && e.incarnation == 1)
    });
    // The store as it would be: evt-2's effect never happened.
    for e in v.iter_mut() {
        if e.kind == Kind::EffectCommitted && e.event_id.as_deref() == Some("evt-3") {
            e.counter = Some(7);
        }
        if e.kind == Kind::Observed {
            e.detail = Some(
                r#"{"stream_messages":3,"counter":7,"results":2,"dedup_keys":2,"outbox_pending":0}"#
                    .into(),
            );
        }
    }
    v
}

/// `no-dedup`: the redelivered evt-2 takes effect a second time instead of being suppressed.
pub fn no_dedup() -> Vec<Event> {
    let mut v = crashed_lab();
    let at = v
        .iter()
        .position(|e| e.kind == Kind::DuplicateSuppressed)
        .unwrap();
    let mut again = ev(Kind::EffectCommitted, "worker")
        .inc(1)
        .task("t-2")
        .event("evt-2")
        .amount(3, 13)
        .rev(40);
    again.ts_ns = v[at].ts_ns;
    v[at] = again;
    v
}
