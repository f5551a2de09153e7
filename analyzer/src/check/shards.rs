//! The shards of one search checked together (`analyzer check` of the traces `recorder explore
//! --shard K/N` wrote): their schedules must come from one list. Where the scenarios of one
//! search name lists with different digests (each shard enumerated its own, after a calm run
//! that saw other steps), a schedule may have run twice and another never; that is said, and
//! the verdict is at best `unknown`.

use std::collections::{BTreeMap, BTreeSet};

use super::Report;

/// By list digest: the shards that named it, and how many schedules it holds.
type ByPlan<'a> = BTreeMap<&'a str, (BTreeSet<&'a str>, Option<u64>)>;

/// One line per search whose shards enumerated different lists.
pub fn plans_differ(report: &Report) -> Vec<String> {
    let mut plans: BTreeMap<&str, ByPlan<'_>> = BTreeMap::new();
    for s in &report.scenarios {
        let Some(search) = &s.coverage.search else {
            continue;
        };
        let Some(plan) = &search.plan else {
            continue;
        };
        let entry = plans
            .entry(&search.id)
            .or_default()
            .entry(plan)
            .or_insert_with(|| (BTreeSet::new(), search.schedules));
        entry
            .0
            .insert(search.shard.as_deref().unwrap_or("unsharded"));
    }
    plans
        .into_iter()
        .filter(|(_, by_plan)| by_plan.len() > 1)
        .map(|(id, by_plan)| {
            let each: Vec<String> = by_plan
                .iter()
                .map(|(plan, (shards, n))| {
                    let shards: Vec<&str> = shards.iter().copied().collect();
                    let n = n.map_or_else(|| "?".to_string(), |n| n.to_string());
                    format!("shard {} listed {plan} ({n} schedules)", shards.join(", "))
                })
                .collect();
            format!(
                "the shards of search {id} enumerated different schedules: {}; run them with one --plan FILE (recorder explore --write-plan FILE)",
                each.join("; ")
            )
        })
        .collect()
}
