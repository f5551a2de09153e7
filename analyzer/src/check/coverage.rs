//! What a scenario tried, as its producer recorded it (`run_end.detail.faults`): each fault with
//! where it came from (named by the user in `run_start.detail.faults`, searched by a systematic
//! search in `run_start.detail.searched`, or drawn by chaos), how often it fired, and why not.
//!
//! A named fault that never fired leaves its scenario `unknown`: the scenario did not test what
//! it says it tested. A violation found anyway still makes it invalid. Searched and drawn faults
//! that never fired are reported, not judged. A scenario without `run_end.detail.faults` has no
//! coverage and is judged as before.

use outbox_trace::detail::{FaultForm, RunEnd, RunStart};

/// Where a fault came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Named by the user: one that never fired leaves the scenario `unknown`.
    Named,
    /// One schedule of a systematic search.
    Searched,
    /// Drawn by a chaos plan.
    Drawn,
}

impl Origin {
    /// `named`, `searched` or `drawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Named => "named",
            Origin::Searched => "searched",
            Origin::Drawn => "drawn",
        }
    }
}

/// One fault a scenario tried.
#[derive(Debug, Clone, PartialEq)]
pub struct Tried {
    /// The fault's one-line form.
    pub spec: String,
    /// Its parts, where the producer recorded them.
    pub form: Option<FaultForm>,
    /// Where it came from.
    pub origin: Origin,
    /// How many times it fired.
    pub fired: u64,
    /// Why it never fired, as the producer could tell.
    pub why: Option<String>,
}

/// The search a scenario of `recorder explore` belongs to (`run_start.detail.search`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOf {
    /// The search's identity.
    pub id: String,
    /// `K/N`, when the search was sharded.
    pub shard: Option<String>,
    /// The digest of the whole list of schedules (absent on the calm run).
    pub plan: Option<String>,
    /// How many schedules the list holds.
    pub schedules: Option<u64>,
}

/// Every fault a scenario tried; empty where the producer recorded none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    /// In the producer's order.
    pub faults: Vec<Tried>,
    /// The search it belongs to, if any.
    pub search: Option<SearchOf>,
    /// The scenario this one tried again, which could not run (`run_start.detail.retry_of`).
    pub retry_of: Option<String>,
    /// Whether it could not run (`run_end.detail.reason`).
    pub could_not_run: bool,
}

impl Coverage {
    /// The coverage `run_end` records, with origins from `run_start`.
    pub fn of(start: Option<&RunStart>, end: Option<&RunEnd>) -> Coverage {
        let search = start.and_then(|s| s.search.as_ref()).and_then(|m| {
            Some(SearchOf {
                id: m.id.clone()?,
                shard: m.shard.clone(),
                plan: m.plan.clone(),
                schedules: m.schedules,
            })
        });
        let retry_of = start.and_then(|s| s.retry_of.clone());
        let Some(end) = end else {
            return Coverage {
                search,
                retry_of,
                ..Coverage::default()
            };
        };
        let listed = |list: Option<&Vec<String>>, spec: &str| {
            list.is_some_and(|l| l.iter().any(|s| s == spec))
        };
        let faults = end
            .faults
            .iter()
            .map(|f| Tried {
                spec: f.spec.clone(),
                form: f.form.clone(),
                origin: if listed(start.map(|s| &s.faults), &f.spec) {
                    Origin::Named
                } else if listed(start.map(|s| &s.searched), &f.spec) {
                    Origin::Searched
                } else {
                    Origin::Drawn
                },
                fired: f.fired,
                why: f.why.clone(),
            })
            .collect();
        Coverage {
            faults,
            search,
            retry_of,
            could_not_run: end.could_not_run(),
        }
    }

    /// The named faults that never fired: each leaves the scenario `unknown`.
    pub fn unfired_named(&self) -> impl Iterator<Item = &Tried> {
        self.faults
            .iter()
            .filter(|f| f.origin == Origin::Named && f.fired == 0)
    }

    /// The searched or drawn faults that never fired: reported, not judged.
    pub fn unreached(&self) -> impl Iterator<Item = &Tried> {
        self.faults
            .iter()
            .filter(|f| f.origin != Origin::Named && f.fired == 0)
    }

    /// How many faults fired at least once.
    pub fn fired(&self) -> usize {
        self.faults.iter().filter(|f| f.fired > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_trace::detail::FaultTried;

    fn tried(spec: &str, fired: u64) -> FaultTried {
        FaultTried {
            spec: spec.into(),
            fired,
            ..FaultTried::default()
        }
    }

    #[test]
    fn origins_come_from_run_start_and_only_named_unfired_faults_count() {
        let start = RunStart {
            faults: vec!["kill a after acked".into(), "kill b after acked".into()],
            searched: vec!["pause w after delivered for 5s".into()],
            ..RunStart::default()
        };
        let end = RunEnd {
            faults: vec![
                tried("kill a after acked", 1),
                tried("kill b after acked", 0),
                tried("pause w after delivered for 5s", 0),
                tried("kill w after effect_committed 3", 0),
            ],
            ..RunEnd::default()
        };
        let c = Coverage::of(Some(&start), Some(&end));
        let origins: Vec<Origin> = c.faults.iter().map(|f| f.origin).collect();
        assert_eq!(
            origins,
            [
                Origin::Named,
                Origin::Named,
                Origin::Searched,
                Origin::Drawn
            ]
        );
        let unfired: Vec<&str> = c.unfired_named().map(|f| f.spec.as_str()).collect();
        assert_eq!(unfired, ["kill b after acked"]);
        assert_eq!(c.unreached().count(), 2);
        assert_eq!(c.fired(), 1);
        assert_eq!(Coverage::of(Some(&start), None), Coverage::default());
    }
}
