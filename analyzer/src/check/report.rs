//! What a check found, as data: one outcome per invariant for every `(run_id, scenario)` and the
//! combined verdicts. `crate::explain` turns it into words; the views draw from it.

use outbox_trace::Figures;

use super::coverage::Coverage;
use super::outcome::{Outcome, Verdict};
use crate::model::load::Loaded;

/// The verdict on a scenario or on the whole check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunVerdict {
    /// Every invariant passed.
    Valid,
    /// No invariant failed, but at least one could not be decided.
    Unknown,
    /// At least one invariant failed.
    Invalid,
}

impl RunVerdict {
    /// `valid`, `invalid` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunVerdict::Valid => "valid",
            RunVerdict::Invalid => "invalid",
            RunVerdict::Unknown => "unknown",
        }
    }

    /// The combined verdict of invariant outcomes.
    pub fn of(outcomes: &[Outcome]) -> Self {
        outcomes
            .iter()
            .map(|o| match o.verdict {
                Verdict::Pass | Verdict::Skipped => RunVerdict::Valid,
                Verdict::Unknown => RunVerdict::Unknown,
                Verdict::Fail => RunVerdict::Invalid,
            })
            .max()
            .unwrap_or(RunVerdict::Valid)
    }
}

/// The checks of one `(run_id, scenario)`.
#[derive(Debug)]
pub struct ScenarioReport {
    /// Index into [`Loaded::histories`].
    pub history: usize,
    /// One outcome per invariant, in the contract's order.
    pub outcomes: Vec<Outcome>,
    /// The figures (one definition, shared with every other output).
    pub figures: Figures,
    /// What the scenario tried, as its producer recorded it.
    pub coverage: Coverage,
    /// The combined verdict of [`ScenarioReport::outcomes`], `unknown` rather than valid where
    /// a named fault never fired.
    pub verdict: RunVerdict,
    /// The scenario of the same run that tried this one again, which could not run: that one
    /// stands for it in the combined verdict.
    pub retried_as: Option<String>,
}

impl ScenarioReport {
    /// The report of history `history`, its verdict combined from `outcomes` and `coverage`.
    pub fn new(
        history: usize,
        outcomes: Vec<Outcome>,
        figures: Figures,
        coverage: Coverage,
    ) -> Self {
        let mut report = ScenarioReport {
            history,
            outcomes,
            figures,
            coverage,
            verdict: RunVerdict::Valid,
            retried_as: None,
        };
        report.verdict = report.judged();
        report
    }

    /// The verdict of the outcomes; a valid one is `unknown` while a named fault never fired
    /// (the scenario did not test what it names).
    fn judged(&self) -> RunVerdict {
        let verdict = RunVerdict::of(&self.outcomes);
        if verdict == RunVerdict::Valid && self.coverage.unfired_named().next().is_some() {
            RunVerdict::Unknown
        } else {
            verdict
        }
    }
}

/// Everything `analyzer check` found.
#[derive(Debug)]
pub struct Report {
    /// The loaded files and histories.
    pub loaded: Loaded,
    /// One report per history, in the same order.
    pub scenarios: Vec<ScenarioReport>,
    /// The combined verdict over all scenarios.
    pub verdict: RunVerdict,
}

impl Report {
    /// The verdict of the (first) scenario named `name`, if the report holds one.
    pub fn verdict_of(&self, name: &str) -> Option<RunVerdict> {
        self.scenarios
            .iter()
            .find(|s| {
                let h = &self.loaded.histories[s.history];
                self.loaded.names.name(h.scenario) == name
            })
            .map(|s| s.verdict)
    }

    /// Leaves `skip` out of every scenario's verdict and the combined one: their outcomes say
    /// [`Verdict::Skipped`] and nothing else.
    pub fn skip(&mut self, skip: &[super::Invariant]) {
        if skip.is_empty() {
            return;
        }
        for s in &mut self.scenarios {
            for o in s
                .outcomes
                .iter_mut()
                .filter(|o| skip.contains(&o.invariant))
            {
                *o = Outcome {
                    verdict: Verdict::Skipped,
                    ..Outcome::pass(o.invariant, None)
                };
            }
            s.verdict = s.judged();
        }
        self.verdict = Self::combined(&self.scenarios);
    }

    /// The combined verdict of scenarios, those tried again left out; nothing to check is not a
    /// pass.
    fn combined(scenarios: &[ScenarioReport]) -> RunVerdict {
        scenarios
            .iter()
            .filter(|s| s.retried_as.is_none())
            .map(|s| s.verdict)
            .max()
            .unwrap_or(RunVerdict::Unknown)
    }

    /// The report on `scenarios` of `loaded`; nothing to check is not a pass.
    pub(crate) fn of(loaded: Loaded, mut scenarios: Vec<ScenarioReport>) -> Self {
        link_retries(&loaded, &mut scenarios);
        let verdict = Self::combined(&scenarios);
        Report {
            loaded,
            scenarios,
            verdict,
        }
    }
}

/// Marks each scenario that could not run and that a scenario of the same run tried again
/// (`run_start.detail.retry_of`) with the name of that one.
fn link_retries(loaded: &Loaded, scenarios: &mut [ScenarioReport]) {
    let names = &loaded.names;
    let key = |s: &ScenarioReport| {
        let h = &loaded.histories[s.history];
        (
            names.name(h.run_id).to_string(),
            names.name(h.scenario).to_string(),
        )
    };
    let retries: std::collections::HashMap<(String, String), String> = scenarios
        .iter()
        .filter_map(|s| {
            let of = s.coverage.retry_of.clone()?;
            let (run, name) = key(s);
            Some(((run, of), name))
        })
        .collect();
    if retries.is_empty() {
        return;
    }
    for s in scenarios.iter_mut().filter(|s| s.coverage.could_not_run) {
        s.retried_as = retries.get(&key(s)).cloned();
    }
}
