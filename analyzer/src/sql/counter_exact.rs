//! `counter-exact` in SQL (see `crate::check::counter_exact`): commits in `store_rev` order (ties
//! by `seq`) step the counter by their amount from `run_start.detail.counter_start` (else 0), each
//! from the counter the commit before it reported; the last `observed` row's counter is the start
//! plus every amount. With `--counter-key`, each `counter_key` has its own chain, start and final
//! value ([`by_key`]). Where the store was read while the scenario may still have run (no
//! `run_end`, or one that says `interrupted`), only the steps are judged: without a wrong step
//! the verdict is `unknown`.

use outbox_trace::{detail_key, Field, Kind};

use super::observed_agrees::interrupted;
use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `counter-exact`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let d = q.d;
    let skips = q.skips(&[(
        Kind::EffectCommitted,
        &[Field::StoreRev, Field::Amount, Field::Counter],
    )]);
    let commits = q.count_where(&format!("kind = '{k_effect_committed}'"));
    let revs = q.count_where(&format!(
        "kind = '{k_effect_committed}' AND store_rev IS NOT NULL"
    ));
    let total = q.fact(&format!(
        "sum(CASE WHEN kind = '{k_effect_committed}' THEN amount END)"
    ));
    let start = q.note(
        Kind::RunStart,
        false,
        &d.json_int("detail", detail_key!(RunStart.counter_start)),
    );
    let observed = q.note(
        Kind::Observed,
        true,
        &d.json_int("detail", detail_key!(Observed.counter)),
    );
    let observed_at = q.note(Kind::Observed, true, "seq");
    let cut = interrupted(q);
    if q.counter_key {
        return by_key(q, p, skips, commits, revs, cut);
    }
    let (cut, cut_reason) = cut;
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, amount, counter, \
         lag(counter) OVER (PARTITION BY run_id, scenario ORDER BY store_rev, seq) AS prevc, \
         lag(seq) OVER (PARTITION BY run_id, scenario ORDER BY store_rev, seq) AS prevseq \
         FROM base WHERE kind = '{k_effect_committed}'"
        ),
    );
    // The steps: a commit after another checks against its counter, the first against the
    // start (`notes` holds it: a table of a few rows).
    let steps = q.cte(
        &format!("{p}_steps"),
        format!(
            "SELECT run_id, scenario, seq AS vat, prevseq FROM {p}_win \
             WHERE prevc IS NOT NULL AND counter <> prevc + amount \
             UNION ALL SELECT w.run_id, w.scenario, w.seq AS vat, w.prevseq \
             FROM (SELECT * FROM {p}_win WHERE prevc IS NULL) w \
             LEFT JOIN notes s ON s.run_id = w.run_id AND s.scenario = w.scenario \
             WHERE w.counter <> coalesce({start}, 0) + w.amount"
        ),
    );
    let wrong_steps = q.counts(&format!("{p}_n"), &steps);
    // The last observed counter against the start plus every amount, unless the store was
    // read while the scenario may still have run.
    let wrong_total = format!(
        "{observed} IS NOT NULL AND {observed} <> coalesce({start}, 0) + coalesce({total}, 0) \
         AND NOT {cut}"
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, vat, prevseq FROM {steps} \
             UNION ALL SELECT s.run_id, s.scenario, {observed_at} AS vat, CAST(NULL AS BIGINT) AS prevseq \
             FROM scen s WHERE {wrong_total}"
        ),
    );
    let witness = q.witness(&format!("{p}_w"), &violations, &["vat", "prevseq"]);
    // Without an observed counter the final comparison is missing: a pass becomes unknown, and
    // a failure says so. A skipped commit makes every later step look wrong: the verdict is
    // unknown with the skip's reason, after the store_rev test.
    let mut part = Part::new(
        violations,
        witness,
        Some(format!(
            "CASE WHEN {cut} THEN {cut_reason} WHEN {observed} IS NULL THEN {} END",
            lit(&Reason::NoObservedCounter)
        )),
    );
    part.count = Some(format!(
        "coalesce({wrong_steps}.n, 0) + CASE WHEN {wrong_total} THEN 1 ELSE 0 END"
    ));
    part.extra = vec![wrong_steps];
    part.early = vec![
        (
            format!("{commits} > 0 AND {revs} = 0"),
            "unknown",
            lit(&Reason::NoStoreRev),
        ),
        (format!("{skips} IS NOT NULL"), "unknown", skips.clone()),
    ];
    part
}

/// `counter-exact` per `counter_key`: each key's chain from its start (`counter_start`, a number
/// for the one counter, an object by key), and each key with commits (the one counter when there
/// are none) against the observed `counter` of that key; a key the observed row does not give
/// makes the verdict unknown, as a missing observed counter does.
fn by_key(
    q: &mut Query,
    p: &str,
    skips: String,
    commits: String,
    revs: String,
    (cut, cut_reason): (String, String),
) -> Part {
    let k_effect_committed = Kind::EffectCommitted.as_str();
    let d = q.d;
    let observed_at = q.note(Kind::Observed, true, "seq");
    let k = Keyed::of(q);
    let start = |key: &str| k.start(key);
    let observed = |key: &str| k.observed(key);
    q.cte(
        &format!("{p}_win"),
        format!(
            "SELECT run_id, scenario, seq, amount, counter, counter_key, \
         lag(counter) OVER (PARTITION BY run_id, scenario, counter_key ORDER BY store_rev, seq) AS prevc, \
         lag(seq) OVER (PARTITION BY run_id, scenario, counter_key ORDER BY store_rev, seq) AS prevseq \
         FROM base WHERE kind = '{k_effect_committed}'"
        ),
    );
    let steps = q.cte(
        &format!("{p}_steps"),
        format!(
            "SELECT run_id, scenario, seq AS vat, prevseq FROM {p}_win \
             WHERE prevc IS NOT NULL AND counter <> prevc + amount \
             UNION ALL SELECT w.run_id, w.scenario, w.seq AS vat, w.prevseq \
             FROM (SELECT * FROM {p}_win WHERE prevc IS NULL) w \
             LEFT JOIN scen s ON s.run_id = w.run_id AND s.scenario = w.scenario \
             WHERE w.counter <> {} + w.amount",
            start("w.counter_key")
        ),
    );
    // Every counter with commits, with its sum; the one counter of a scenario without any.
    let keys = q.cte(
        &format!("{p}_keys"),
        format!(
            "SELECT run_id, scenario, counter_key, sum(amount) AS total FROM base \
             WHERE kind = '{k_effect_committed}' GROUP BY run_id, scenario, counter_key \
             UNION ALL SELECT run_id, scenario, CAST(NULL AS {t}) AS counter_key, \
             CAST(0 AS BIGINT) AS total FROM scen s WHERE {commits} = 0",
            t = d.text()
        ),
    );
    let finals = q.cte(
        &format!("{p}_finals"),
        format!(
            "SELECT k.run_id, k.scenario, {observed_at} AS vat, \
             CASE WHEN {cut} THEN NULL ELSE {} END AS observed, \
             {} + coalesce(k.total, 0) AS expected, CASE WHEN {cut} THEN 1 ELSE 0 END AS cut \
             FROM {keys} k \
             JOIN scen s ON s.run_id = k.run_id AND s.scenario = k.scenario",
            observed("k.counter_key"),
            start("k.counter_key")
        ),
    );
    let wrong_finals = q.cte(
        &format!("{p}_wf"),
        format!(
            "SELECT run_id, scenario, count(CASE WHEN observed IS NOT NULL AND observed <> expected \
             THEN 1 END) AS n, count(CASE WHEN observed IS NULL AND cut = 0 THEN 1 END) AS missing \
             FROM {finals} GROUP BY run_id, scenario"
        ),
    );
    let wrong_steps = q.counts(&format!("{p}_n"), &steps);
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT run_id, scenario, vat, prevseq FROM {steps} \
             UNION ALL SELECT run_id, scenario, vat, CAST(NULL AS BIGINT) AS prevseq \
             FROM {finals} WHERE observed IS NOT NULL AND observed <> expected"
        ),
    );
    let witness = q.witness(&format!("{p}_w"), &violations, &["vat", "prevseq"]);
    let mut part = Part::new(
        violations,
        witness,
        Some(format!(
            "CASE WHEN {cut} THEN {cut_reason} WHEN coalesce({wrong_finals}.missing, 0) > 0 THEN {} END",
            lit(&Reason::NoObservedCounter)
        )),
    );
    part.count = Some(format!(
        "coalesce({wrong_steps}.n, 0) + coalesce({wrong_finals}.n, 0)"
    ));
    part.extra = vec![wrong_steps, wrong_finals];
    part.early = vec![
        (
            format!("{commits} > 0 AND {revs} = 0"),
            "unknown",
            lit(&Reason::NoStoreRev),
        ),
        (format!("{skips} IS NOT NULL"), "unknown", skips.clone()),
    ];
    part
}

/// The start and the observed value of a counter given by key, read from the first
/// `run_start` and the last `observed` row (a number for the one counter, an object by key).
struct Keyed {
    d: super::Dialect,
    start_one: String,
    start_text: String,
    observed_one: String,
    observed_text: String,
    present: String,
}

impl Keyed {
    fn of(q: &mut Query) -> Keyed {
        let d = q.d;
        Keyed {
            d,
            start_one: q.note(
                Kind::RunStart,
                false,
                &d.json_int("detail", detail_key!(RunStart.counter_start)),
            ),
            start_text: q.note(Kind::RunStart, false, "detail"),
            observed_one: q.note(
                Kind::Observed,
                true,
                &d.json_int("detail", detail_key!(Observed.counter)),
            ),
            observed_text: q.note(Kind::Observed, true, "detail"),
            present: q.note(Kind::Observed, true, "1"),
        }
    }

    /// The start of the counter `key` (an expression over `s`; null: the one counter).
    fn start(&self, key: &str) -> String {
        format!(
            "coalesce(CASE WHEN {key} IS NULL THEN {} ELSE {} END, 0)",
            self.start_one,
            self.d
                .json_keyed_int(&self.start_text, detail_key!(RunStart.counter_start), key)
        )
    }

    /// The observed value of the counter `key`, null where the observed row does not give it.
    fn observed(&self, key: &str) -> String {
        format!(
            "(CASE WHEN {} IS NULL THEN NULL WHEN {key} IS NULL THEN {} ELSE {} END)",
            self.present,
            self.observed_one,
            self.d
                .json_keyed_int(&self.observed_text, detail_key!(Observed.counter), key)
        )
    }
}
