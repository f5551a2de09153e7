//! `observed-agrees` in SQL (see `crate::check::observed_agrees`): the last `observed` row's
//! totals against the trace's counts, each compared only where its keys are present, where the
//! trace side is evidence (the kind it counts has rows or is declared, and no span of it was
//! refused: else `unknown` where nothing fails), and, for `stream_messages`, only where a
//! `publish_acked` carries a position.
//!
//! Two more rules: a scenario without a `run_end` row, or whose `run_end.detail.reason` is
//! `interrupted`, is `unknown` (the store was read while it may still have run, see
//! [`interrupted`]); and where the scenario's own wire fault lost replies (`fault` rows of
//! `lose-commit-reply` or `drop-replies` that dropped messages, or bytes without a message count),
//! the store's figures agree with each other and it holds more effects than the trace by no more
//! than the replies lost, that difference is `unknown` naming the fault ([`OwnFault`]).

use outbox_trace::detail::DetailKey;
use outbox_trace::{detail_key, Field, Kind};

use super::dialect::WS;
use super::query::{lit, Part, Pick, Query};
use crate::check::{Reason, Total};

/// The wire faults that lose replies a commit already answered.
const LOSE_REPLY: &str = "lose-commit-reply";
const DROP_REPLIES: &str = "drop-replies";

/// One comparison: the total, the store's figure, the trace's, whether the store may hold more,
/// and the kind the trace side counts.
struct Compared {
    total: Total,
    store: String,
    trace: String,
    at_least: bool,
    kind: &'static [Kind],
}

/// Adds the tables of `observed-agrees`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let skips = q.skips(&[
        (Kind::PublishAcked, &[Field::EventId]),
        (Kind::TaskAccepted, &[Field::TaskId]),
        (Kind::IntentRecorded, &[Field::EventId]),
    ]);
    let present = q.note(Kind::Observed, true, "1");
    let at = q.note(Kind::Observed, true, "seq");
    let keys = distinct_keys(q, p);
    let compared = comparisons(q, &keys);
    let positions = q.count_where(&format!(
        "kind = '{}' AND broker_seq IS NOT NULL",
        Kind::PublishAcked.as_str()
    ));
    let fault = OwnFault::of(q);
    let effects = q.count_where(&format!("kind = '{}'", Kind::EffectCommitted.as_str()));
    let mut silent = String::new();
    let (mut made, mut counted, mut excused) = (Vec::new(), Vec::new(), Vec::new());
    for c in &compared {
        let (lacks, _, lacks_reason) = q.lacks(None, c.kind);
        let (refused, refused_reason) = q.refused(c.kind[0]);
        let mut shown = format!("{} IS NOT NULL", c.store);
        if c.total == Total::StreamMessages {
            shown.push_str(&format!(" AND {positions} > 0"));
        }
        let doubted = format!("(({lacks}) OR {refused} IS NOT NULL)");
        silent.push_str(&format!(
            " WHEN {shown} AND {doubted} THEN CASE WHEN {lacks} THEN {lacks_reason} ELSE {refused_reason} END"
        ));
        let compare = format!("({shown} AND NOT {doubted})");
        let op = if c.at_least { "<" } else { "<>" };
        let wrong = format!("({compare} AND {} {op} {})", c.store, c.trace);
        let own = match c.total {
            Total::Results | Total::Processed | Total::DedupKeys => {
                format!("({wrong} AND {})", fault.explains(&c.store, &effects))
            }
            _ => "FALSE".to_string(),
        };
        made.push(format!("CASE WHEN {compare} THEN 1 ELSE 0 END"));
        counted.push(format!("({wrong} AND NOT {own})"));
        excused.push((own, c.store.clone()));
    }
    let count = |conds: &[String]| -> String {
        let terms: Vec<String> = conds
            .iter()
            .map(|c| format!("CASE WHEN {c} THEN 1 ELSE 0 END"))
            .collect();
        format!("({})", terms.join(" + "))
    };
    let n = count(&counted);
    // One violation per wrong total, all at the observed row.
    let branches: Vec<String> = counted
        .iter()
        .map(|w| {
            format!(
                "SELECT s.run_id, s.scenario, {at} AS vat FROM scen s LEFT JOIN {keys} \
                 ON {keys}.run_id = s.run_id AND {keys}.scenario = s.scenario WHERE {w}"
            )
        })
        .collect();
    let violations = q.cte(&format!("{p}_v"), branches.join(" UNION ALL "));
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT DISTINCT run_id, scenario, vat, vat AS wseq FROM {violations}"),
    );
    let fault_reason: String = excused
        .iter()
        .map(|(own, store)| format!(" WHEN {own} THEN {}", fault.reason(q, store, &effects)))
        .collect();
    let reason = format!(
        "CASE WHEN {n} > 0 THEN {skips} ELSE coalesce(CASE{fault_reason} END, CASE{silent} END, \
         CASE WHEN {} = 0 THEN {} END, {skips}) END",
        count_sum(&made),
        lit(&Reason::NoObservedTotals)
    );
    let mut part = Part::new(violations, witness, Some(reason));
    part.lost = Some(lost(q, &compared, &counted));
    part.count = Some(n);
    part.extra = vec![keys];
    let (cut, cut_reason) = interrupted(q);
    part.early = vec![
        (
            format!("{present} IS NULL"),
            "unknown",
            lit(&Reason::NoObserved),
        ),
        (cut, "unknown", cut_reason),
    ];
    part
}

/// `(a + b + ...)` of 0/1 terms.
fn count_sum(terms: &[String]) -> String {
    format!("({})", terms.join(" + "))
}

/// `{p}_k`: distinct events published and recorded as intents, and distinct tasks accepted, per
/// scenario (each key once per kind, then counted).
fn distinct_keys(q: &mut Query, p: &str) -> String {
    let k_intent_recorded = Kind::IntentRecorded.as_str();
    let k_publish_acked = Kind::PublishAcked.as_str();
    let k_task_accepted = Kind::TaskAccepted.as_str();
    q.cte(
        &format!("{p}_k"),
        format!("SELECT run_id, scenario, sum(CASE WHEN kind = '{k_publish_acked}' THEN 1 ELSE 0 END) AS published, \
         sum(CASE WHEN kind = '{k_task_accepted}' THEN 1 ELSE 0 END) AS tasks, \
         sum(CASE WHEN kind = '{k_intent_recorded}' THEN 1 ELSE 0 END) AS intents \
         FROM (SELECT run_id, scenario, kind FROM base \
         WHERE kind IN ('{k_publish_acked}', '{k_intent_recorded}', '{k_task_accepted}') \
         AND CASE WHEN kind = '{k_task_accepted}' THEN task_id ELSE event_id END IS NOT NULL \
         GROUP BY run_id, scenario, kind, CASE WHEN kind = '{k_task_accepted}' THEN task_id ELSE event_id END) x \
         GROUP BY run_id, scenario"),
    )
}

/// The six comparisons, in the order the native rule makes them.
fn comparisons(q: &mut Query, keys: &str) -> Vec<Compared> {
    let d = q.d;
    let mut field = |key: DetailKey| q.note(Kind::Observed, true, &d.json_int("detail", key));
    let results = field(detail_key!(Observed.results));
    let processed = field(detail_key!(Observed.processed));
    let dedup_keys = field(detail_key!(Observed.dedup_keys));
    let stream_messages = field(detail_key!(Observed.stream_messages));
    let tasks = field(detail_key!(Observed.tasks));
    let outbox = format!(
        "{} + {}",
        field(detail_key!(Observed.outbox_published)),
        field(detail_key!(Observed.outbox_pending))
    );
    let effects = q.count_where(&format!("kind = '{}'", Kind::EffectCommitted.as_str()));
    let n = |c: &str| format!("coalesce({keys}.{c}, 0)");
    let row = |total, store: String, trace: String, at_least, kind| Compared {
        total,
        store,
        trace,
        at_least,
        kind,
    };
    const EFFECTS: &[Kind] = &[Kind::EffectCommitted];
    vec![
        row(Total::Results, results, effects.clone(), false, EFFECTS),
        row(Total::Processed, processed, effects.clone(), false, EFFECTS),
        row(Total::DedupKeys, dedup_keys, effects, false, EFFECTS),
        row(
            Total::StreamMessages,
            stream_messages,
            n("published"),
            true,
            &[Kind::PublishAcked],
        ),
        row(
            Total::Tasks,
            tasks,
            n("tasks"),
            false,
            &[Kind::TaskAccepted],
        ),
        row(
            Total::Intents,
            outbox,
            n("intents"),
            false,
            &[Kind::IntentRecorded],
        ),
    ]
}

/// For the lost-rows rule: how many of the failing totals the store holds more of (rows missing
/// from the trace explain them), and the start of the reason naming the first.
fn lost(q: &Query, compared: &[Compared], counted: &[String]) -> (String, String) {
    let d = q.d;
    let more: Vec<(&Compared, &String)> = compared
        .iter()
        .zip(counted)
        .filter(|(c, _)| !c.at_least)
        .collect();
    let count: Vec<String> = more
        .iter()
        .map(|(c, w)| {
            format!(
                "CASE WHEN {w} AND {} > {} THEN 1 ELSE 0 END",
                c.store, c.trace
            )
        })
        .collect();
    let text: String = more
        .iter()
        .map(|(c, w)| {
            format!(
                " WHEN {w} AND {o} > {t} THEN 'the observer read {} = ' || {} || ', the trace counts ' || {}",
                c.total.key(),
                d.to_text(&c.store),
                d.to_text(&c.trace),
                o = c.store,
                t = c.trace,
            )
        })
        .collect();
    (
        format!("({})", count.join(" + ")),
        format!("(CASE{text} END)"),
    )
}

/// Whether the store was read while the scenario may still have run: no `run_end` row, or one
/// whose `detail.reason` is `interrupted`; with the reason, as expressions over `s`.
pub(super) fn interrupted(q: &mut Query) -> (String, String) {
    let d = q.d;
    let end = q.note(Kind::RunEnd, true, "1");
    let why = q.note(
        Kind::RunEnd,
        true,
        &d.json_text("detail", detail_key!(RunEnd.reason)),
    );
    // The words of `check`'s own reason, for either case.
    let said = |no_run_end| {
        crate::explain::reason(&crate::check::Reason::CutShort { no_run_end }).replace('\'', "''")
    };
    (
        format!(
            "({end} IS NULL OR coalesce({why} = '{}', false))",
            outbox_trace::detail::INTERRUPTED
        ),
        format!(
            "(CASE WHEN {end} IS NULL THEN '{}' ELSE '{}' END)",
            said(true),
            said(false)
        ),
    )
}

/// The scenario's own wire faults that lost replies, as columns of `scen`.
struct OwnFault {
    /// Replies they dropped, counted.
    messages: String,
    /// How many dropped replies without a count (any number).
    uncounted: String,
    /// How many `lose-commit-reply` rows acted.
    lose: String,
    /// Whether the store's own figures agree with each other.
    agree: String,
}

impl OwnFault {
    fn of(q: &mut Query) -> OwnFault {
        let d = q.d;
        let name = d.regex_group(
            "detail",
            &format!("\"{}\"{WS}:{WS}\"([^\"]*)\"", detail_key!(Fault.fault)),
        );
        let msgs = d.json_int("detail", detail_key!(Fault.dropped_messages));
        let bytes = d.json_int("detail", detail_key!(Fault.dropped_bytes));
        let mut sum = |cond: String, value: &str| {
            q.pick(
                Kind::Fault,
                Pick::Sum,
                &format!("CASE WHEN {cond} THEN {value} END"),
            )
        };
        let ours = format!("{name} IN ('{LOSE_REPLY}', '{DROP_REPLIES}')");
        let messages = sum(format!("{ours} AND {msgs} > 0"), &msgs);
        let uncounted = sum(
            format!("{name} = '{DROP_REPLIES}' AND {msgs} IS NULL AND {bytes} > 0"),
            "1",
        );
        let lose = sum(format!("{name} = '{LOSE_REPLY}' AND {msgs} > 0"), "1");
        let mut field = |key| q.note(Kind::Observed, true, &d.json_int("detail", key));
        let results = format!(
            "coalesce({}, {})",
            field(detail_key!(Observed.results)),
            field(detail_key!(Observed.processed))
        );
        let dedup = field(detail_key!(Observed.dedup_keys));
        let done = field(detail_key!(Observed.tasks_done));
        let same = |a: &str, b: &str| format!("({a} IS NULL OR {b} IS NULL OR {a} = {b})");
        let agree = format!(
            "({} AND {} AND {})",
            same(&results, &dedup),
            same(&results, &done),
            same(&dedup, &done)
        );
        OwnFault {
            messages: format!("coalesce({messages}, 0)"),
            uncounted: format!("coalesce({uncounted}, 0)"),
            lose: format!("coalesce({lose}, 0)"),
            agree,
        }
    }

    /// Whether the store holding `store` effects against the trace's `effects` is explained by
    /// the replies the fault lost.
    fn explains(&self, store: &str, effects: &str) -> String {
        let (m, u) = (&self.messages, &self.uncounted);
        format!(
            "({m} > 0 OR {u} > 0) AND {} AND {store} > {effects} \
             AND ({u} > 0 OR {store} - {effects} <= {m})",
            self.agree
        )
    }

    /// The reason naming the fault, for the store's `store` against the trace's `effects`.
    fn reason(&self, q: &Query, store: &str, effects: &str) -> String {
        let d = q.d;
        let (m, u) = (&self.messages, &self.uncounted);
        format!(
            "'the store holds ' || {} || ' effects, the trace ' || {} || ': the ' || \
             (CASE WHEN {} > 0 THEN '{LOSE_REPLY}' ELSE '{DROP_REPLIES}' END) || \
             ' fault dropped ' || (CASE WHEN {u} > 0 THEN 'replies (not counted)' \
             ELSE {} || ' reply(ies)' END) || ', whose commits the trace may not show'",
            d.to_text(store),
            d.to_text(effects),
            self.lose,
            d.to_text(m)
        )
    }
}
