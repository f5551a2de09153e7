//! `intent-atomic` in SQL: every usable `task_accepted` has an `intent_recorded` of its event
//! with its `store_rev`, unless an intent of that event lacks `store_rev` (see
//! `crate::check::intent_atomic`).

use outbox_trace::{Field, Kind};

use super::{lit, Part, Query};
use crate::check::Reason;

/// Adds the tables of `intent-atomic`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let needed: &[Field] = &[Field::EventId, Field::StoreRev];
    let skips = q.skips(
        p,
        &[(Kind::TaskAccepted, needed), (Kind::IntentRecorded, needed)],
    );
    // No row of either kind carries a store_rev: the source reports no transactions.
    let no_rev = q.cte(
        &format!("{p}_norev"),
        "SELECT run_id, scenario FROM base WHERE kind IN ('task_accepted', 'intent_recorded') \
         GROUP BY run_id, scenario HAVING count(store_rev) = 0",
    );
    q.cte(
        &format!("{p}_int"),
        "SELECT run_id, scenario, seq, event_id, store_rev FROM base \
         WHERE kind = 'intent_recorded' AND event_id IS NOT NULL AND store_rev IS NOT NULL",
    );
    q.cte(
        &format!("{p}_revs"),
        format!("SELECT DISTINCT run_id, scenario, event_id, store_rev FROM {p}_int"),
    );
    q.cte(
        &format!("{p}_unusable"),
        "SELECT DISTINCT run_id, scenario, event_id FROM base \
         WHERE kind = 'intent_recorded' AND event_id IS NOT NULL AND store_rev IS NULL",
    );
    q.cte(
        &format!("{p}_first"),
        format!("SELECT run_id, scenario, event_id, min(seq) AS iseq FROM {p}_int GROUP BY run_id, scenario, event_id"),
    );
    let violations = q.cte(
        &format!("{p}_v"),
        format!(
            "SELECT a.run_id, a.scenario, a.seq AS vat, f.iseq FROM base a \
             LEFT JOIN {p}_revs x ON x.run_id = a.run_id AND x.scenario = a.scenario \
             AND x.event_id = a.event_id AND x.store_rev = a.store_rev \
             LEFT JOIN {p}_unusable u ON u.run_id = a.run_id AND u.scenario = a.scenario \
             AND u.event_id = a.event_id \
             LEFT JOIN {p}_first f ON f.run_id = a.run_id AND f.scenario = a.scenario \
             AND f.event_id = a.event_id \
             WHERE a.kind = 'task_accepted' AND a.event_id IS NOT NULL AND a.store_rev IS NOT NULL \
             AND x.event_id IS NULL AND u.event_id IS NULL"
        ),
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!(
            "SELECT run_id, scenario, vat, vat AS wseq FROM {violations} \
             UNION ALL SELECT run_id, scenario, vat, iseq AS wseq FROM {violations} WHERE iseq IS NOT NULL"
        ),
    );
    let tally = q.tally(
        p,
        &violations,
        Some(&skips),
        &[(&no_rev, "unknown", lit(&Reason::NoStoreRev))],
    );
    Part {
        tally,
        violations,
        witness,
    }
}
