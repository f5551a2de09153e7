//! The JSON report of `analyzer check --json`. This shape is stable: fields may be added, none
//! removed or renamed without a new `format` number.
//!
//! ```text
//! {
//!   "format": 1,
//!   "verdict": "valid" | "invalid" | "unknown",      // over all scenarios
//!   "files": [
//!     { "path": "traces/run.parquet", "rows": 1234, "notes": ["unknown kind `x` ignored (2 row(s))"] }
//!   ],
//!   "scenarios": [
//!     {
//!       "file": "traces/run.parquet",
//!       "run_id": "r1", "scenario": "lost-consumer-ack", "backend": "etcd-jetstream",
//!       "verdict": "valid" | "invalid" | "unknown",
//!       "notes": ["..."],                              // e.g. rows lacking a required field
//!       "invariants": [
//!         {
//!           "id": "ack-after-commit",
//!           "class": "safety" | "liveness",
//!           "verdict": "pass" | "fail" | "unknown" | "skipped",   // skipped: `check --skip`
//!           "reason": null | "run_end.recovered is false",
//!           "violations": [                           // at most 3, earliest first
//!             {
//!               "event_id": "evt-7" | null,
//!               "task_id": "t-7" | null,
//!               "explanation": "worker#0 ACKed delivery 3 of evt-7 ...",
//!               "witness": [                          // in seq order
//!                 { "seq": 41, "actor": "worker", "incarnation": 0, "kind": "acked",
//!                   "event_id": "evt-7", "broker_seq": 3 }   // plus every non-null optional column
//!               ]
//!             }
//!           ],
//!           "more": 0                                  // violations not shown
//!         }
//!       ],
//!       "tasks": 3, "publish_attempts": 4, "publish_acks_lost": 1, "stream_copies": 3,
//!       "stream_messages": 4 | null, "deliveries": 4, "redeliveries": 1, "suppressions": 1,
//!       "effects": 3, "acks": 4, "crashes": 0, "conflicts": 0, "counter": 10 | null,
//!       "results": 3 | null, "dedup_keys": 3 | null, "outbox_pending": 0 | null,
//!       "counts": { ... }                              // the same figures again, as format 1 had them
//!     }
//!     }
//!   ]
//! }
//! ```
//!
//! Witness rows carry `seq`, `actor`, `incarnation`, `kind`, then each optional column that is set
//! (`task_id`, `event_id`, `aggregate_id`, `aggregate_seq`, `attempt`, `broker_seq`, `partition`, `store_rev`,
//! `amount`, `counter`, `counter_key`, `source` (`wire` or `span`, from a step's `detail.source`), and
//! `detail` for the kinds whose detail the analyzer keeps: `run_start`, `crash`, `fault`, `observed`,
//! `run_end`). Numbers are numbers, but for a `broker_seq` that packs
//! a Redis Stream entry id, which is the text `<ms>-<n>` (its packed value is past 2^53, where JSON
//! readers lose digits).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::check::{Outcome, Violation};
use crate::check::{Report, ScenarioReport};
use crate::explain::{self, Value};
use crate::model::history::History;
use crate::model::intern::Interner;
use outbox_trace::Figures;

/// The version of this shape.
pub const FORMAT: u32 = 1;

#[derive(Serialize)]
struct Doc<'a> {
    format: u32,
    verdict: &'static str,
    files: Vec<FileDoc>,
    scenarios: Vec<ScenarioDoc<'a>>,
}

#[derive(Serialize)]
struct FileDoc {
    path: String,
    rows: u64,
    notes: Vec<String>,
}

#[derive(Serialize)]
struct ScenarioDoc<'a> {
    file: String,
    run_id: &'a str,
    scenario: &'a str,
    backend: &'a str,
    verdict: &'static str,
    notes: Vec<String>,
    invariants: Vec<InvariantDoc>,
    /// What the scenario tried (`run_end.detail.faults`), each fault with its origin.
    faults: Vec<FaultDoc<'a>>,
    /// Named faults that never fired: the scenario is `unknown` for them unless it failed.
    unfired_named: usize,
    /// The figures, also under their own keys beside `scenario`.
    counts: &'a Figures,
    #[serde(flatten)]
    figures: &'a Figures,
}

#[derive(Serialize)]
struct FaultDoc<'a> {
    spec: &'a str,
    origin: &'static str,
    fired: u64,
    why: Option<&'a str>,
}

#[derive(Serialize)]
struct InvariantDoc {
    id: &'static str,
    class: &'static str,
    verdict: &'static str,
    reason: Option<String>,
    violations: Vec<ViolationDoc>,
    more: usize,
}

#[derive(Serialize)]
struct ViolationDoc {
    event_id: Option<String>,
    task_id: Option<String>,
    explanation: String,
    witness: Vec<Map<String, Json>>,
}

/// Writes the JSON report (one document, pretty-printed, newline-terminated).
pub fn write(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    let loaded = &report.loaded;
    let doc = Doc {
        format: FORMAT,
        verdict: report.verdict.as_str(),
        files: loaded
            .files
            .iter()
            .map(|f| FileDoc {
                path: f.path.display().to_string(),
                rows: f.rows,
                notes: f.notes.iter().map(explain::file_note).collect(),
            })
            .collect(),
        scenarios: report
            .scenarios
            .iter()
            .map(|s| scenario(report, s))
            .collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

fn scenario<'a>(report: &'a Report, s: &'a ScenarioReport) -> ScenarioDoc<'a> {
    let names = &report.loaded.names;
    let h = &report.loaded.histories[s.history];
    ScenarioDoc {
        file: report.loaded.files[h.file].path.display().to_string(),
        run_id: names.name(h.run_id),
        scenario: names.name(h.scenario),
        backend: names.name(h.backend),
        verdict: s.verdict.as_str(),
        notes: explain::scenario_notes(h, names),
        invariants: s.outcomes.iter().map(|o| invariant(o, h, names)).collect(),
        faults: s
            .coverage
            .faults
            .iter()
            .map(|f| FaultDoc {
                spec: &f.spec,
                origin: f.origin.as_str(),
                fired: f.fired,
                why: f.why.as_deref(),
            })
            .collect(),
        unfired_named: s.coverage.unfired_named().count(),
        counts: &s.figures,
        figures: &s.figures,
    }
}

fn invariant(o: &Outcome, h: &History, names: &Interner) -> InvariantDoc {
    InvariantDoc {
        id: o.invariant.id(),
        class: o.invariant.class().as_str(),
        verdict: o.verdict.as_str(),
        reason: o.reason.as_ref().map(explain::reason),
        violations: o
            .violations
            .iter()
            .map(|v| violation(v, h, names))
            .collect(),
        more: o.more,
    }
}

fn violation(v: &Violation, h: &History, names: &Interner) -> ViolationDoc {
    ViolationDoc {
        event_id: names.name_opt(v.event).map(str::to_string),
        task_id: names.name_opt(v.task).map(str::to_string),
        explanation: explain::violation(v, h, names),
        witness: v
            .witness
            .iter()
            .map(|&at| {
                let w = explain::witness_row(h.row(at), h, names);
                let mut m = Map::new();
                m.insert("seq".into(), w.seq.into());
                m.insert("actor".into(), w.actor.into());
                m.insert("incarnation".into(), w.incarnation.into());
                m.insert("kind".into(), w.kind.as_str().into());
                for (k, v) in w.fields {
                    let v: Json = match v {
                        Value::Text(s) => s.into(),
                        Value::Int(i) => i.into(),
                        Value::UInt(u) => u.into(),
                    };
                    m.insert(k.into(), v);
                }
                m
            })
            .collect(),
    }
}
