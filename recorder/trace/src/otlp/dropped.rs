//! Spans that gave no row, as the contract's "Refused spans" counts them: a span that names a kind
//! but lacks a column the kind requires is *refused* (counted by kind, with the missing
//! columns), and so is a span with `outbox.*` attributes but no kind (counted under
//! [`NO_KIND`], missing `kind`); a span that maps to no kind at all is *unmapped* (counted, with
//! up to five names); a span whose trace and span id were already taken is a *copy* (counted).
//! The recorder writes the counts into `run_end.detail` ([`Tally::fill`]); a whole file keeps
//! them in the `run_end` of each scenario, or in one it synthesizes.

use std::collections::BTreeMap;

use crate::detail::{Refused, RunEnd, Unmapped, NO_KIND};
use crate::step::MissingFields;

/// One span that gave no row, and the run and scenario its attributes name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// `outbox.run_id`, else the mapping's default.
    pub run_id: String,
    /// `outbox.scenario`, else `default`.
    pub scenario: String,
    /// Why it gave no row.
    pub why: Why,
}

/// Why a span gave no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// It names a kind but lacks columns the kind requires.
    Refused(MissingFields),
    /// It maps to no kind; its name.
    Unmapped(String),
    /// It carries `outbox.*` attributes of its own but no kind, and none of its events names one.
    Kindless,
    /// Its trace id and span id were already taken: a copy of a span already mapped.
    Copy,
    /// It names a kind, but is not taken for `reason`: the kind is the recorder's own, the
    /// export carried no token of a process the recorder started, the span claims another actor
    /// than the process that sent it, or its time is past any the trace can hold.
    Rejected {
        /// The kind it names.
        kind: crate::Kind,
        /// Why it is not taken.
        reason: &'static str,
    },
}

/// The counts of one scenario: refused spans by kind, and unmapped spans.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// By kind name.
    pub refused: BTreeMap<String, Refused>,
    /// The spans that mapped to no kind.
    pub unmapped: Unmapped,
    /// The copies of spans already mapped.
    pub copies: u64,
}

impl Counts {
    /// Counts one more span.
    pub fn add(&mut self, why: &Why) {
        match why {
            Why::Refused(m) => self
                .refused
                .entry(m.kind.as_str().to_string())
                .or_default()
                .add(m.fields.iter().map(|f| f.column().to_string())),
            Why::Unmapped(name) => self.unmapped.add(name),
            Why::Kindless => self
                .refused
                .entry(NO_KIND.to_string())
                .or_default()
                .add(std::iter::once("kind".to_string())),
            Why::Copy => self.copies += 1,
            Why::Rejected { kind, reason } => self
                .refused
                .entry(kind.as_str().to_string())
                .or_default()
                .add_reason(reason),
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.refused.is_empty() && self.unmapped.spans == 0 && self.copies == 0
    }

    /// Writes the counts into a `run_end` detail, adding to any it holds.
    pub fn fill(&self, end: &mut RunEnd) {
        for (kind, r) in &self.refused {
            let into = end.refused.entry(kind.clone()).or_default();
            into.spans += r.spans;
            for m in &r.missing {
                if !into.missing.contains(m) {
                    into.missing.push(m.clone());
                }
            }
            for m in &r.reasons {
                if !into.reasons.contains(m) {
                    into.reasons.push(m.clone());
                }
            }
        }
        if self.copies > 0 {
            *end.duplicate_spans.get_or_insert(0) += self.copies;
        }
        if self.unmapped.spans > 0 {
            end.unmapped
                .get_or_insert_with(Unmapped::default)
                .merge(&self.unmapped);
        }
    }
}

/// The counts of every scenario, by `(run_id, scenario)`.
#[derive(Debug, Clone, Default)]
pub struct Tally(pub BTreeMap<(String, String), Counts>);

impl Tally {
    /// Counts `d` under its run and scenario.
    pub fn add(&mut self, d: &Dropped) {
        self.0
            .entry((d.run_id.clone(), d.scenario.clone()))
            .or_default()
            .add(&d.why);
    }
}

/// The `run_end` rows of a whole file, completed with the counts as the rows are handed out: a
/// scenario's `run_end` gets its counts added to its detail; a scenario with counts and no
/// `run_end` gets one, after its run's last row, carrying only them.
#[derive(Debug, Default)]
pub(crate) struct Ending {
    tally: Tally,
    /// The scenarios with counts and no `run_end` of their own.
    missing: Vec<(String, String)>,
    /// Per run, its last `seq` and latest `ts_ns` handed out, and its backend.
    last: BTreeMap<String, (u64, i64, String)>,
}

impl Ending {
    /// The counts of `tally`, for a file whose scenarios `ended` have a `run_end`.
    pub fn new(tally: Tally, ended: &std::collections::HashSet<(String, String)>) -> Self {
        let missing = tally
            .0
            .keys()
            .filter(|k| !ended.contains(*k))
            .cloned()
            .collect();
        Ending {
            tally,
            missing,
            last: BTreeMap::new(),
        }
    }

    /// How many `run_end` rows [`Ending::rest`] will add.
    pub fn added(&self) -> u64 {
        self.missing.len() as u64
    }

    /// Takes a row as it is handed out.
    pub fn pass(&mut self, e: &mut crate::Event) {
        if self.tally.0.is_empty() {
            return;
        }
        let last = self
            .last
            .entry(e.run_id.clone())
            .or_insert_with(|| (0, 0, e.backend.clone()));
        last.0 = last.0.max(e.seq);
        last.1 = last.1.max(e.ts_ns);
        if e.kind != crate::Kind::RunEnd {
            return;
        }
        let key = (e.run_id.clone(), e.scenario.clone());
        let Some(counts) = self.tally.0.get(&key) else {
            return;
        };
        let mut end = e
            .detail
            .as_deref()
            .and_then(|t| serde_json::from_str::<RunEnd>(t).ok())
            .unwrap_or_default();
        counts.fill(&mut end);
        e.detail = serde_json::to_string(&end).ok();
    }

    /// The `run_end` rows of the scenarios with counts and none of their own.
    pub fn rest(&mut self) -> Vec<crate::Event> {
        let mut out = Vec::new();
        for (run_id, scenario) in std::mem::take(&mut self.missing) {
            let Some(counts) = self.tally.0.get(&(run_id.clone(), scenario.clone())) else {
                continue;
            };
            let last = self
                .last
                .entry(run_id.clone())
                .or_insert_with(|| (0, 0, "otel".into()));
            last.0 += 1;
            let mut end = RunEnd::default();
            counts.fill(&mut end);
            let mut e = crate::Event::new(crate::Kind::RunEnd);
            e.run_id = run_id;
            e.scenario = scenario;
            e.seq = last.0;
            e.ts_ns = last.1;
            e.backend = last.2.clone();
            e.actor = "recorder".into();
            e.detail = serde_json::to_string(&end).ok();
            out.push(e);
        }
        out
    }
}
