//! `sources-agree` in SQL (see `crate::check::sources_agree`): a scenario whose first
//! `run_start` lists no kind of the contract in `detail.wire_steps` passes with its note ("one
//! source"), as in `check`. One that reads steps from the wire is `unknown` here: telling a
//! span's account of a step from the wire's row needs every row's `detail.source` and the
//! scenario's list at once, which the statement's shape (one grouped scan of the contract's
//! columns, `detail` read only on the few frame rows) does not give; `analyzer check` judges it.

use outbox_trace::{detail_key, Kind};

use super::query::{lit, Part, Query};
use crate::check::Reason;

/// Why the statement leaves a scenario that reads steps from the wire undecided.
const NOT_EXPRESSED: &str = "'the scenario reads steps from the wire: analyzer sql does not \
                             compare the sources; analyzer check does'";

/// Why the statement leaves every other invariant of such a scenario undecided.
pub(crate) const BOTH_SOURCES: &str = "'the scenario reads steps from the wire: analyzer sql \
                                       judges every row, the accounts of the spans among them; \
                                       analyzer check judges the rows read from the wire'";

/// The condition that a scenario's `run_start` lists a kind it reads from the wire.
pub(crate) fn reads_wire(q: &mut Query) -> String {
    format!("{} > 0", listed(q).join(" + "))
}

/// Per kind of the contract, 1 where the scenario's `run_start` lists it in `wire_steps`.
fn listed(q: &mut Query) -> Vec<String> {
    let d = q.d;
    Kind::ALL
        .iter()
        .map(|k| {
            let has = d.json_list_has("detail", detail_key!(RunStart.wire_steps), k.as_str());
            let n = q.note(
                Kind::RunStart,
                false,
                &format!("CASE WHEN {has} THEN 1 ELSE 0 END"),
            );
            format!("coalesce({n}, 0)")
        })
        .collect()
}

/// Adds the tables of `sources-agree`.
pub(crate) fn part(q: &mut Query, p: &str) -> Part {
    let listed = listed(q);
    let none = q.cte(
        &format!("{p}_none"),
        "SELECT run_id, scenario, seq AS vat FROM base WHERE 1 = 0",
    );
    let witness = q.cte(
        &format!("{p}_w"),
        format!("SELECT run_id, scenario, vat, vat AS wseq FROM {none}"),
    );
    let mut part = Part::new(none, witness, None);
    part.early = vec![
        (
            format!("{} = 0", listed.join(" + ")),
            "pass",
            lit(&Reason::OneSource),
        ),
        ("1 = 1".to_string(), "unknown", NOT_EXPRESSED.to_string()),
    ];
    part
}
