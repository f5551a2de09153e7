//! `ack-after-commit` in SQL (see `crate::check::ack_after_commit`): per event and actor life, in
//! `seq` order, an `acked` answers the latest earlier delivery of the copy it names (by
//! `broker_seq`), else the latest earlier delivery; a commit or suppression of the event by the
//! same life must lie between that delivery and the ack (any earlier one when no delivery was
//! found).

use outbox_trace::{Field, Kind};

use super::{Part, Query};

/// Adds the tables of `ack-after-commit`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let used = [
        Kind::Delivered,
        Kind::Redelivered,
        Kind::EffectCommitted,
        Kind::DuplicateSuppressed,
        Kind::Acked,
    ];
    let uses: Vec<(Kind, &[Field])> = used.iter().map(|k| (*k, &[Field::EventId][..])).collect();
    let skips = q.skips(p, &uses);
    q.cte(
        &format!("{p}_rows"),
        "SELECT run_id, scenario, seq, actor, incarnation, kind, event_id, broker_seq, \
         CASE WHEN kind IN ('delivered', 'redelivered') THEN seq END AS dseq, \
         CASE WHEN kind IN ('effect_committed', 'duplicate_suppressed') THEN seq END AS sseq \
         FROM base WHERE event_id IS NOT NULL AND kind IN \
         ('delivered', 'redelivered', 'effect_committed', 'duplicate_suppressed', 'acked')",
    );
    let before = "ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING";
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, actor, incarnation, kind, event_id, broker_seq, \
             max(dseq) OVER (PARTITION BY run_id, scenario, event_id, actor, incarnation {before}) AS dlast, \
             max(sseq) OVER (PARTITION BY run_id, scenario, event_id, actor, incarnation {before}) AS slast, \
             max(dseq) OVER (PARTITION BY run_id, scenario, event_id, actor, incarnation, broker_seq {before}) AS dcopy \
             FROM {p}_rows"
        ),
    );
    q.cte(
        &format!("{p}_acks"),
        format!(
            "SELECT run_id, scenario, seq, actor, incarnation, event_id, slast, \
             CASE WHEN broker_seq IS NOT NULL AND dcopy IS NOT NULL THEN dcopy ELSE dlast END AS dseq \
             FROM {p}_win WHERE kind = 'acked'"
        ),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, seq AS vat, actor, incarnation, event_id, dseq FROM {p}_acks \
             WHERE NOT (slast IS NOT NULL AND (dseq IS NULL OR slast > dseq))"
        ),
    );
    // The witness: the delivery, the ack, the event's next commit or suppression by anyone, and
    // the crash of the acking life.
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT run_id, scenario, vat, vat AS wseq FROM {violations} \
             UNION ALL SELECT run_id, scenario, vat, dseq AS wseq FROM {violations} WHERE dseq IS NOT NULL \
             UNION ALL SELECT v.run_id, v.scenario, v.vat, min(b.seq) AS wseq FROM {violations} v \
             JOIN base b ON b.run_id = v.run_id AND b.scenario = v.scenario AND b.event_id = v.event_id \
             AND b.seq > v.vat AND b.kind IN ('effect_committed', 'duplicate_suppressed') \
             GROUP BY v.run_id, v.scenario, v.vat \
             UNION ALL SELECT v.run_id, v.scenario, v.vat, min(b.seq) AS wseq FROM {violations} v \
             JOIN base b ON b.run_id = v.run_id AND b.scenario = v.scenario AND b.actor = v.actor \
             AND b.incarnation = v.incarnation AND b.seq > v.vat AND b.kind = 'crash' \
             GROUP BY v.run_id, v.scenario, v.vat"
        ),
    );
    let tally = q.tally(p, &violations, Some(&skips), &[]);
    Part {
        tally,
        violations,
        witness,
    }
}
