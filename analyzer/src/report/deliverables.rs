//! `analyzer report`: the lab's deliverables from one recording. For every scenario: the lab JSON
//! figures, the most eventful task's chain (SVG and Mermaid), the boundaries diagram and the
//! invariant table; then `report.md` embedding them, the SQLite + Redis lab lines, and the facts an
//! ADR on retention, atomic scope and the shared counter needs ([`crate::report::adr`]);
//! `coverage.svg`, the coverage matrix (where the scenarios recorded what they tried); and
//! `report.html`, the whole report as one self-contained page ([`crate::report::page`],
//! [`crate::report::html`]). Same input, same bytes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use outbox_trace::lab::{LabJson, LabScenario};
use outbox_trace::output::escape::{fence, markdown};
use outbox_trace::output::{path_component, Inputs, OutputError};

use crate::check::Verdict;
use crate::render::{self, layout, RenderError};
use crate::report::adr;
use crate::report::page;
use crate::views::boundaries;
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
    md.push_str(&adr::adr_facts(all, &bounds));
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
