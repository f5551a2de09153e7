//! `analyzer report`: the lab's deliverables from one recording. For every scenario: the lab JSON
//! figures, the most eventful task's chain (SVG and Mermaid), the boundaries diagram and the
//! invariant table; then `report.md` embedding them, the SQLite + Redis lab lines, and the facts an
//! ADR on retention, atomic scope and the shared counter needs; `coverage.svg`, the coverage
//! matrix (where the scenarios recorded what they tried); and `report.html`, the whole report
//! as one self-contained page ([`crate::report::page`], [`crate::report::html`]). Same input, same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use outbox_trace::lab::{LabJson, LabScenario};
use outbox_trace::output::escape::{fence, markdown};
use outbox_trace::output::{path_component, Inputs, OutputError};
use outbox_trace::{detail_key, Kind};

use crate::check::Verdict;
use crate::model::intern::{FastMap, IdTable};
use crate::render::{self, layout, RenderError};
use crate::report::page;
use crate::views::boundaries::{self, Boundaries};
use crate::views::chain;
use crate::views::scene::{Scene, Scenes};

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A picture could not be drawn.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// A file of the report would overwrite an input, or is not a regular file.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// The HTML page's data could not be serialised.
    #[error("the HTML report's data: {0}")]
    Html(#[from] serde_json::Error),
}

/// A scenario's directory name: the scenario, or run and scenario when several runs share it,
/// as one path component ([`path_component`]: nothing that leaves `dir`, names kept apart).
fn slugs(scenes: &[Scene]) -> Vec<String> {
    scenes
        .iter()
        .map(|s| {
            let shared = scenes.iter().filter(|o| o.scenario == s.scenario).count() > 1;
            if shared {
                path_component(&format!("{}-{}", s.run_id, s.scenario))
            } else {
                path_component(s.scenario)
            }
        })
        .collect()
}

/// The `lab.json` entry of one scenario: the contract's one shape, with this analyzer's verdicts.
pub fn lab_scenario(scene: &Scene) -> LabScenario {
    LabScenario {
        scenario: scene.scenario.to_string(),
        run_id: scene.run_id.to_string(),
        backend: scene.backend.to_string(),
        protocol: scene.protocol.map(String::from),
        figures: scene.figures.clone(),
        recovered: scene.recovered(),
        // The model keeps no run timing; `recorder run --report` fills it.
        duration_ms: None,
        verdict: Some(scene.verdict.as_str().to_string()),
        invariants: scene
            .outcomes
            .iter()
            .map(|o| (o.invariant.id().to_string(), o.verdict.as_str().to_string()))
            .collect(),
    }
}

/// The `lab.json` of the whole recording (the same type `recorder run --report` writes).
pub fn lab_json(scenes: &[Scene], traces: &[PathBuf]) -> LabJson {
    LabJson {
        traces: traces.iter().map(|p| p.display().to_string()).collect(),
        scenarios: scenes.iter().map(lab_scenario).collect(),
    }
}

/// The SQLite + Redis lab's lines (`dualwrite.out`, `order_check.out`, `atleastonce.out`,
/// `report.txt`), from the scenarios' last `observed` rows. Empty for other backends.
pub fn lab_lines(scenes: &[Scene]) -> Vec<(String, String)> {
    let observed: Vec<(&str, &outbox_trace::detail::Observed)> = scenes
        .iter()
        .filter(|s| s.backend == "sqlite-redis")
        .filter_map(|s| {
            let (at, o) = s.history.observed()?;
            s.history.detail(&s.history.rows[at])?;
            Some((s.scenario, o))
        })
        .collect();
    if observed.is_empty() {
        return Vec::new();
    }
    outbox_trace::lab::lab_files(&observed)
        .into_iter()
        .map(|f| (f.name.to_string(), f.lines.join(" ")))
        .collect()
}

/// The delay from the last delivery of a copy to its redelivery, in ms, for every redelivery.
fn redelivery_delays(scene: &Scene) -> Vec<i64> {
    let mut last: FastMap<(crate::model::intern::Id, Option<u64>), i64> = FastMap::default();
    let mut out = Vec::new();
    for r in scene.rows().filter(|r| r.row.is_delivery()) {
        let Some(event) = r.row.event else { continue };
        let copy = (event, r.row.broker_seq());
        if r.kind() == Kind::Redelivered {
            if let Some(d) = last.get(&copy) {
                out.push((r.ts_ns() - d) / 1_000_000);
            }
        }
        last.insert(copy, r.ts_ns());
    }
    out
}

/// How long after its commit each dedup key was last needed (a suppression), in ms.
fn key_uses(scene: &Scene) -> Vec<i64> {
    let mut committed = IdTable::new(scene.history.id_bound(), None);
    for c in scene.of(Kind::EffectCommitted) {
        if let Some(e) = c.row.event {
            committed.get_mut(e).get_or_insert(c.ts_ns());
        }
    }
    scene
        .of(Kind::DuplicateSuppressed)
        .filter_map(|e| {
            let c = (*committed.get(e.row.event?))?;
            Some((e.ts_ns() - c) / 1_000_000)
        })
        .collect()
}

/// The ADR's facts, as Markdown.
pub fn adr_facts(scenes: &[Scene], bounds: &[Boundaries]) -> String {
    let mut md = String::new();
    let waits: BTreeSet<i64> = scenes.iter().filter_map(|s| s.ack_wait_ms()).collect();
    let delays: Vec<(i64, &str)> = scenes
        .iter()
        .flat_map(|s| redelivery_delays(s).into_iter().map(|d| (d, s.scenario)))
        .collect();
    let uses: Vec<(i64, &str)> = scenes
        .iter()
        .flat_map(|s| key_uses(s).into_iter().map(|d| (d, s.scenario)))
        .collect();
    let _ = writeln!(md, "### Retention: dedup keys against redelivery\n");
    let waits: Vec<String> = waits.iter().map(|w| format!("{w} ms")).collect();
    let waits = if waits.is_empty() {
        "not recorded".into()
    } else {
        waits.join(", ")
    };
    let _ = writeln!(
        md,
        "- AckWait (`{}.detail.{}`): {waits}.",
        Kind::RunStart,
        detail_key!(RunStart.ack_wait_ms)
    );
    match delays.iter().max() {
        Some((d, s)) => {
            let s = markdown(s);
            let _ = writeln!(
                md,
                "- Longest redelivery delay seen: {d} ms after the delivery (scenario {s}); {} redelivery(ies) in all.",
                delays.len()
            );
        }
        None => {
            let _ = writeln!(md, "- No redelivery was recorded.");
        }
    }
    if let Some((d, s)) = uses.iter().max() {
        let s = markdown(s);
        let _ = writeln!(md, "- Latest use of a dedup key: a suppression {d} ms after the key's commit (scenario {s}).");
    }
    let mut lost = Vec::new();
    let mut shortest_life: Option<(i64, &str)> = None;
    for s in scenes {
        let effects = s.figures.effects as i64;
        if let Some(keys) = s.figures.dedup_keys {
            if keys < effects {
                lost.push(format!(
                    "{} ({keys} keys for {effects} effects)",
                    markdown(s.scenario)
                ));
            }
        }
        let end = s.of(Kind::Observed).next_back().map(|e| e.ts_ns());
        let last_commit = s.of(Kind::EffectCommitted).map(|e| e.ts_ns()).max();
        if let (Some(end), Some(c)) = (end, last_commit) {
            let life = (end - c) / 1_000_000;
            if shortest_life.is_none_or(|(l, _)| life < l) {
                shortest_life = Some((life, s.scenario));
            }
        }
    }
    if lost.is_empty() {
        if let Some((l, s)) = shortest_life {
            let s = markdown(s);
            let _ = writeln!(md, "- Every dedup key was still present when the observer read the store: keys lived at least {l} ms (shortest, the last key of {s}).");
        }
    } else {
        let _ = writeln!(md, "- Dedup keys were gone by the end in {}: a redelivery after that would take effect again.", lost.join(", "));
    }
    let _ = writeln!(md, "\n### Atomic scope: what each transaction held\n");
    let mut shapes: BTreeSet<String> = BTreeSet::new();
    for b in bounds {
        for s in &b.shapes {
            shapes.insert(format!(
                "{} transaction: {}",
                s.role.as_str(),
                s.kinds_text()
            ));
        }
    }
    for s in &shapes {
        let _ = writeln!(md, "- {s}");
    }
    let split: Vec<String> = bounds
        .iter()
        .filter(|b| {
            b.shapes.iter().any(|s| s.role == boundaries::Role::Create) && !b.create_is_atomic()
        })
        .map(|b| markdown(&b.scenario))
        .collect();
    if split.is_empty() {
        let _ = writeln!(md, "- The task and its outbox record were committed in one transaction in every scenario; the publish ACK and the consumer ACK sit outside every transaction.");
    } else {
        let _ = writeln!(
            md,
            "- The task and its outbox record were NOT committed together in: {}.",
            split.join(", ")
        );
    }
    let _ = writeln!(md, "\n### The shared counter\n");
    let conflicts: usize = bounds.iter().map(|b| b.conflicts).sum();
    let per: Vec<String> = bounds
        .iter()
        .filter(|b| b.conflicts > 0)
        .map(|b| format!("{} {}", markdown(&b.scenario), b.conflicts))
        .collect();
    let per = if per.is_empty() {
        String::new()
    } else {
        format!(" ({})", per.join(", "))
    };
    let _ = writeln!(md, "- Revision conflicts on the counter (`{}`): {conflicts}{per}. Every commit is one guarded transaction on one key: the counter serialises all workers.", Kind::CommitConflict);
    md
}

fn invariant_table(scene: &Scene) -> String {
    let mut md = String::from("| invariant | class | verdict | violations |\n|---|---|---|---|\n");
    for o in scene.outcomes {
        let verdict = match o.verdict {
            Verdict::Fail => "**FAIL**",
            Verdict::Pass => "pass",
            Verdict::Unknown => "unknown",
            Verdict::Skipped => "skipped",
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {verdict} | {} |",
            o.invariant.id(),
            o.invariant.class().as_str(),
            o.violations.len() + o.more
        );
    }
    md
}

/// Writes one file of the report, refused if it is one of the traces read or not a regular file.
fn write(inputs: &Inputs, path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    inputs.check("-o", path)?;
    std::fs::write(path, bytes).map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The head of report.md: the traces, a table row per scenario, and the dual-write lab's lines;
/// every value from the traces escaped as Markdown.
fn summary_md(all: &[Scene], traces: &[PathBuf]) -> String {
    let names: Vec<String> = traces
        .iter()
        .map(|p| markdown(&p.display().to_string()))
        .collect();
    let mut md = format!("# Outbox trace report\n\nTrace: {}\n\n", names.join(", "));
    md.push_str("| scenario | backend | protocol | verdict | counter | results | stream | publishes | redeliveries | suppressions | effects |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in all {
        let f = s.figures;
        let show = |v: Option<i64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        let verdict = if s.verdict.as_str() == "invalid" {
            "**invalid**".to_string()
        } else {
            s.verdict.as_str().to_string()
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {verdict} | {} | {} | {} | {} | {} | {} | {} |",
            markdown(s.scenario),
            markdown(s.backend),
            markdown(s.protocol.unwrap_or("-")),
            show(f.counter),
            show(f.results),
            show(f.stream_messages),
            f.publish_attempts,
            f.redeliveries,
            f.suppressions,
            f.effects,
        );
    }
    md.push_str("\nThe figures per scenario are in [`lab.json`](lab.json).\n");
    let lines = lab_lines(all);
    if !lines.is_empty() {
        let mut block = String::new();
        for (file, line) in &lines {
            let _ = writeln!(block, "{file:<16} {line}");
        }
        let f = fence(&block);
        let _ = write!(
            md,
            "\n## The dual-write lab's lines (SQLite + Redis)\n\n{f}\n{block}{f}\n"
        );
    }
    md
}

/// Writes the report into `dir` (created if needed); with `lab`, report.md carries the lab's
/// templates to complete. Returns the files written, in order.
pub fn write_report(
    scenes: &Scenes,
    traces: &[PathBuf],
    dir: &Path,
    lab: bool,
) -> Result<Vec<PathBuf>, ReportError> {
    let mkdir = |p: &Path| {
        std::fs::create_dir_all(p).map_err(|source| ReportError::Write {
            path: p.to_path_buf(),
            source,
        })
    };
    let inputs = &Inputs::new(traces);
    mkdir(dir)?;
    let mut written = Vec::new();
    let all: Vec<Scene> = scenes.scenes().collect();
    let all = all.as_slice();
    let json = serde_json::to_string_pretty(&lab_json(all, traces)).unwrap_or_default() + "\n";
    write(inputs, &dir.join("lab.json"), json.as_bytes())?;
    written.push(dir.join("lab.json"));
    let mut md = summary_md(all, traces);
    let eventful = page::eventful(scenes, page::EVENTFUL);
    let mut bounds = Vec::new();
    for ((scene, slug), tasks) in all.iter().zip(slugs(all)).zip(&eventful) {
        let sub = dir.join(&slug);
        mkdir(&sub)?;
        let _ = writeln!(
            md,
            "\n## {}\n\n{}",
            markdown(scene.scenario),
            invariant_table(scene)
        );
        let b = boundaries::derive(scene);
        if let Some(&id) = tasks.first() {
            let task = markdown(scene.names.name(id));
            let c = chain::task_chain(*scene, id);
            let lay = layout::layout(&c);
            let svg = render::svg::to_svg(&render::chain_figure(&lay))?;
            write(inputs, &sub.join("chain.svg"), svg.as_bytes())?;
            let mmd = render::mermaid::chain_mermaid(&lay);
            write(inputs, &sub.join("chain.mmd"), mmd.as_bytes())?;
            written.extend([sub.join("chain.svg"), sub.join("chain.mmd")]);
            let f = fence(&mmd);
            let _ = writeln!(
                md,
                "### Chain of {task} (the most eventful task)\n\n![chain of {task}]({slug}/chain.svg)\n\n{f}mermaid\n{mmd}{f}\n"
            );
        }
        if b.task.is_some() {
            let svg = render::svg::to_svg(&render::boundaries::boundaries_figure(&b))?;
            write(inputs, &sub.join("boundaries.svg"), svg.as_bytes())?;
            written.push(sub.join("boundaries.svg"));
            let text = render::boundaries::boundaries_text(&b);
            let f = fence(&text);
            let _ = writeln!(
                md,
                "### Atomic boundaries\n\n![boundaries]({slug}/boundaries.svg)\n\n{f}\n{text}{f}"
            );
        }
        bounds.push(b);
    }
    if lab {
        md.push_str(
            "\n## ADR: retention, atomic scope, the shared counter — facts from this run\n\n",
        );
    } else {
        md.push_str("\n## Retention, atomic scope, the shared counter: facts from this run\n\n");
    }
    md.push_str(&adr_facts(all, &bounds));
    if lab {
        md.push_str("\n### Decision (to complete)\n\n_What retention for dedup keys, what atomic scope, and what limit of the shared counter you accept, and why, given the facts above._\n");
    }
    write(inputs, &dir.join("report.md"), md.as_bytes())?;
    written.push(dir.join("report.md"));
    let page = page::build(scenes, traces, &eventful)?;
    // What the scenarios tried, fault by fault, where they recorded it.
    if !page.coverage.rows.is_empty() {
        let svg = crate::views::coverage::svg(&page.coverage);
        write(inputs, &dir.join("coverage.svg"), svg.as_bytes())?;
        written.push(dir.join("coverage.svg"));
    }
    let html = super::html::to_html(&page)?;
    write(inputs, &dir.join("report.html"), html.as_bytes())?;
    written.push(dir.join("report.html"));
    Ok(written)
}

/// Writes only the self-contained HTML report, to `path`.
pub fn write_html(scenes: &Scenes, traces: &[PathBuf], path: &Path) -> Result<(), ReportError> {
    let eventful = page::eventful(scenes, page::EVENTFUL);
    let html = super::html::to_html(&page::build(scenes, traces, &eventful)?)?;
    write(&Inputs::new(traces), path, html.as_bytes())
}
