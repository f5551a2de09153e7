//! `aggregate-order` in SQL (see `crate::check::aggregate_order`): each event's first
//! `publish_attempt`, with the aggregate fields of the publish row or else of the event's first
//! `intent_recorded` (then `task_accepted`) carrying both; per aggregate, in `seq` order, none may
//! have a lower `aggregate_seq` than one published before it.

use outbox_trace::{Field, Kind};

use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `aggregate-order`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_intent_recorded = Kind::IntentRecorded.as_str();
    let k_publish_attempt = Kind::PublishAttempt.as_str();
    let k_task_accepted = Kind::TaskAccepted.as_str();
    let skips = q.skips(&[(Kind::PublishAttempt, &[Field::EventId])]);
    // Per event: its first publish_attempt, whether that row carries both aggregate fields, and
    // the fields of the first publish_attempt, intent_recorded and task_accepted carrying both.
    let d = q.d;
    let both = "aggregate_id IS NOT NULL AND aggregate_seq IS NOT NULL";
    let first = |kind: Kind, cond: &str, x: &str| {
        let kind = kind.as_str();
        d.first_by(
            &format!("CASE WHEN kind = '{kind}'{cond} THEN {x} END"),
            &format!("CASE WHEN kind = '{kind}'{cond} THEN seq END"),
        )
    };
    let mut fields = vec![
        format!("min(CASE WHEN kind = '{k_publish_attempt}' THEN seq END) AS pseq"),
        format!(
            "{} AS own",
            first(
                Kind::PublishAttempt,
                "",
                &format!("CASE WHEN {both} THEN 1 ELSE 0 END")
            )
        ),
    ];
    for (kind, name) in [
        (Kind::PublishAttempt, "p"),
        (Kind::IntentRecorded, "i"),
        (Kind::TaskAccepted, "t"),
    ] {
        let cond = format!(" AND {both}");
        fields.push(format!(
            "{} AS {name}_agg",
            first(kind, &cond, "aggregate_id")
        ));
        fields.push(format!(
            "{} AS {name}_seq",
            first(kind, &cond, "aggregate_seq")
        ));
    }
    let pick = |col: &str| {
        format!(
            "CASE WHEN own = 1 THEN p_{col} WHEN i_agg IS NOT NULL THEN i_{col} ELSE t_{col} END"
        )
    };
    q.cte(
        &format!("{p}_pub"),
        format!(
            "SELECT run_id, scenario, seq, agg, aseq FROM (SELECT run_id, scenario, pseq AS seq, \
             {} AS agg, {} AS aseq FROM (SELECT run_id, scenario, {} FROM base \
             WHERE kind IN ('{k_publish_attempt}', '{k_intent_recorded}', '{k_task_accepted}') \
             AND event_id IS NOT NULL GROUP BY run_id, scenario, event_id) x \
             WHERE pseq IS NOT NULL) y WHERE agg IS NOT NULL",
            pick("agg"),
            pick("seq"),
            fields.join(", ")
        ),
    );
    let published = q.cte(
        &format!("{p}_np"),
        format!("SELECT run_id, scenario, count(*) AS n FROM {p}_pub GROUP BY run_id, scenario"),
    );
    // The running maximum up to and including each publication: one below it is below an
    // earlier one.
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, agg, aseq, max(aseq) OVER (PARTITION BY run_id, scenario, \
             agg ORDER BY seq ROWS UNBOUNDED PRECEDING) AS prior_max FROM {p}_pub"
        ),
    );
    q.cte(
        &format!("{p}_early"),
        format!("SELECT run_id, scenario, seq AS vat, agg, prior_max FROM {p}_win WHERE aseq < prior_max"),
    );
    // The earlier publication is the first to reach the highest aggregate_seq before it.
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT v.run_id, v.scenario, v.vat, min(e.seq) AS earlier FROM {p}_early v \
             JOIN {p}_pub e ON e.run_id = v.run_id AND e.scenario = v.scenario AND e.agg = v.agg \
             AND e.aseq = v.prior_max AND e.seq < v.vat GROUP BY v.run_id, v.scenario, v.vat"
        ),
    );
    let witness = q.witness(&format!("{p}_w"), &violations, &["vat", "earlier"]);
    let mut part = Part::new(violations, witness, Some(skips));
    part.extra = vec![published.clone()];
    part.early = vec![(
        format!("{published}.n IS NULL"),
        "pass",
        lit(&Reason::NoAggregateInfo),
    )];
    part
}
