//! `ack-after-commit` in SQL (see `crate::check::ack_after_commit`): per event and actor life, in
//! `seq` order, an `acked` answers the latest earlier delivery of the copy it names (by
//! `broker_seq`, within its `partition` with `--partition`), else the latest earlier delivery; a commit or suppression of the event by the
//! same life must lie between that delivery and the ack (any earlier one when no delivery was
//! found).
//!
//! A broker without positions leaves `broker_seq` null: such an ack answers the life's latest
//! delivery of the event, unless the life held two copies of it at once (more deliveries
//! without a position than acks without one before it); such acks are no violation but leave
//! the verdict `unknown` where nothing else fails.
//!
//! An event's life whose deliveries all precede its commits and suppressions, which all precede
//! its acks, holds no violation; only the rows of the other lives with acks are windowed.

use outbox_trace::{Field, Kind};

use super::evidence::words;
use super::query::{Part, Query};
use crate::check::Reason;

/// Stands for the number of ACKs in the reason's words.
const NUMBER: usize = 918_273_645;

/// Adds the tables of `ack-after-commit`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_acked = Kind::Acked.as_str();
    let k_crash = Kind::Crash.as_str();
    let k_delivered = Kind::Delivered.as_str();
    let k_duplicate_suppressed = Kind::DuplicateSuppressed.as_str();
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let k_redelivered = Kind::Redelivered.as_str();
    let used = [
        Kind::Delivered,
        Kind::Redelivered,
        Kind::EffectCommitted,
        Kind::DuplicateSuppressed,
        Kind::Acked,
    ];
    let uses: Vec<(Kind, &[Field])> = used.iter().map(|k| (*k, &[Field::EventId][..])).collect();
    let skips = q.skips(&uses);
    let copy = q.copy();
    let rows = q.cte(
        &format!("{p}_rows"),
        format!("SELECT run_id, scenario, seq, actor, incarnation, kind, event_id, {copy}, \
         CASE WHEN kind IN ('{k_delivered}', '{k_redelivered}') THEN seq END AS dseq, \
         CASE WHEN kind IN ('{k_effect_committed}', '{k_duplicate_suppressed}') THEN seq END AS sseq, \
         CASE WHEN kind = '{k_acked}' THEN seq END AS aseq \
         FROM base WHERE event_id IS NOT NULL AND kind IN \
         ('{k_delivered}', '{k_redelivered}', '{k_effect_committed}', '{k_duplicate_suppressed}', '{k_acked}')"),
    );
    acks(q, p, &rows);
    let unsettled = "NOT (slast IS NOT NULL AND (dseq IS NULL OR slast > dseq))";
    let early = q.cte(
        &format!("{p}_early"),
        format!(
            "SELECT run_id, scenario, seq AS vat, actor, incarnation, event_id, dseq FROM {p}_acks \
             WHERE {unsettled} AND held < 2"
        ),
    );
    let two = q.cte(
        &format!("{p}_two"),
        format!(
            "SELECT run_id, scenario, count(*) AS n FROM {p}_acks WHERE {unsettled} AND held >= 2 \
             GROUP BY run_id, scenario"
        ),
    );
    // With its witness rows: the delivery, the ack, the event's next commit or suppression by
    // anyone, and the crash of the acking life.
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT v.run_id, v.scenario, v.vat, v.dseq, v.settle, min(c.seq) AS cseq FROM \
             (SELECT v.run_id, v.scenario, v.vat, v.actor, v.incarnation, v.dseq, min(b.seq) AS settle \
             FROM {early} v LEFT JOIN base b ON b.run_id = v.run_id AND b.scenario = v.scenario \
             AND b.event_id = v.event_id AND b.seq > v.vat \
             AND b.kind IN ('{k_effect_committed}', '{k_duplicate_suppressed}') \
             GROUP BY v.run_id, v.scenario, v.vat, v.actor, v.incarnation, v.dseq) v \
             LEFT JOIN base c ON c.run_id = v.run_id AND c.scenario = v.scenario AND c.actor = v.actor \
             AND c.incarnation = v.incarnation AND c.seq > v.vat AND c.kind = '{k_crash}' \
             GROUP BY v.run_id, v.scenario, v.vat, v.dseq, v.settle"),
    );
    let witness = q.witness(
        &format!("{p}_w"),
        &violations,
        &["vat", "dseq", "settle", "cseq"],
    );
    let t = q.d.text();
    let copies = words(
        &Reason::TwoCopies { acks: NUMBER },
        &[(&NUMBER.to_string(), format!("CAST({two}.n AS {t})"))],
    );
    let reason = format!("coalesce({skips}, CASE WHEN {two}.n > 0 THEN {copies} END)");
    let mut part = Part::new(violations, witness, Some(reason));
    part.extra = vec![two];
    let delivered = q.any(&[Kind::Delivered, Kind::Redelivered]);
    let acked = q.any(&[Kind::Acked]);
    part.early = vec![
        q.lacks(Some(&delivered), &[Kind::Acked]),
        q.lacks(
            Some(&acked),
            &[Kind::EffectCommitted, Kind::DuplicateSuppressed],
        ),
    ];
    part
}

/// `{p}_acks`: the acks of the lives of `rows` not already in order, each with the delivery it
/// answers (`dseq`), the life's latest commit or suppression before it (`slast`), and the copies
/// without a position the life held open before it (`held`, 0 for an ack with a position).
fn acks(q: &mut Query, p: &str, rows: &str) {
    let k_acked = Kind::Acked.as_str();
    let k_delivered = Kind::Delivered.as_str();
    let k_redelivered = Kind::Redelivered.as_str();
    let life = "run_id, scenario, event_id, actor, incarnation";
    let copy = q.copy();
    let lives = q.cte(
        &format!("{p}_g"),
        format!(
            "SELECT {life} FROM {rows} GROUP BY {life} HAVING count(aseq) > 0 \
             AND NOT coalesce(max(sseq) < min(aseq) AND coalesce(max(dseq) < min(sseq), true), false)"
        ),
    );
    let on: Vec<String> = life.split(", ").map(|c| format!("r.{c} = g.{c}")).collect();
    // Up to and including the row: an ack row holds no delivery or commit seq of its own.
    let upto = "ORDER BY seq ROWS UNBOUNDED PRECEDING";
    // `open`: the deliveries without a position the life has not ACKed yet (an ack without one
    // answers one of them), counted up to each row and never below zero.
    let open = format!(
        "CASE WHEN kind IN ('{k_delivered}', '{k_redelivered}') AND broker_seq IS NULL THEN 1 \
         WHEN kind = '{k_acked}' AND broker_seq IS NULL THEN -1 ELSE 0 END"
    );
    q.cte(
        &format!("{p}_run"),
        format!(
            "SELECT run_id, scenario, seq, actor, incarnation, kind, event_id, {copy}, \
             max(dseq) OVER (PARTITION BY {life} {upto}) AS dlast, \
             max(sseq) OVER (PARTITION BY {life} {upto}) AS slast, \
             max(dseq) OVER (PARTITION BY {life}, {copy} {upto}) AS dcopy, \
             sum({open}) OVER (PARTITION BY {life} {upto}) AS opened \
             FROM (SELECT r.* FROM {rows} r JOIN {lives} g ON {}) x",
            on.join(" AND ")
        ),
    );
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT x.*, min(opened) OVER (PARTITION BY {life} ORDER BY seq \
             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS low FROM {p}_run x"
        ),
    );
    // An ack without a position while its life held two copies: which delivery it answers
    // cannot be told (`held`: the copies open before it).
    q.cte(
        &format!("{p}_acks"),
        format!(
            "SELECT run_id, scenario, seq, actor, incarnation, event_id, slast, \
             CASE WHEN broker_seq IS NOT NULL AND dcopy IS NOT NULL THEN dcopy ELSE dlast END AS dseq, \
             CASE WHEN broker_seq IS NULL THEN opened + 1 - \
             (CASE WHEN coalesce(low, 0) < 0 THEN low ELSE 0 END) ELSE 0 END AS held \
             FROM {p}_win WHERE kind = '{k_acked}'"),
    );
}
