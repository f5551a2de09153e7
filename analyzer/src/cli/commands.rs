//! The glue of the drawing, report and comparison commands: resolve arguments, call the library,
//! write the result where it was asked to go.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::{BoundariesArgs, ChainArgs, Exit, ReportArgs};
use crate::boundaries;
use crate::chain::ChainError;
use crate::chain::{self, Selector};
use crate::render::{self, figure::Figure, layout, Format};
use crate::scene::Scenes;

/// The format asked for, or the one the output file's extension names, or text.
pub fn resolve_format(format: Option<Format>, output: Option<&Path>, default: Format) -> Format {
    if let Some(f) = format {
        return f;
    }
    match output
        .and_then(|p| p.extension())
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        Some("mmd" | "mermaid") => Format::Mermaid,
        Some("txt") => Format::Text,
        _ => default,
    }
}

/// Writes text to the file, or to `out` when there is none.
pub fn write_text(text: &str, output: Option<&Path>, out: &mut dyn Write) -> anyhow::Result<()> {
    match output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("{}: cannot write", p.display()))
        }
        None => {
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other?,
            }
            Ok(())
        }
    }
}

/// Writes a figure as SVG or PNG, or the given text forms.
pub fn emit(
    format: Format,
    figure: impl FnOnce() -> Figure,
    text: impl FnOnce(Format) -> String,
    output: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    match format {
        Format::Svg => write_text(&render::svg::to_svg(&figure())?, output, out),
        Format::Png => {
            let Some(path) = output else {
                bail!("PNG output needs a file: add -o FILE.png");
            };
            render::png::write_png(&figure(), path)?;
            Ok(())
        }
        Format::Mermaid | Format::Text => write_text(&text(format), output, out),
    }
}

fn load(paths: &[PathBuf]) -> anyhow::Result<Scenes> {
    Ok(Scenes::load(paths)?)
}

/// Runs `analyzer chain`.
pub fn chain(args: &ChainArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let selector = match (&args.task, &args.event, args.violation) {
        (Some(t), _, _) => Selector::Task(t.clone()),
        (_, Some(e), _) => Selector::Event(e.clone()),
        (_, _, Some(n)) => Selector::Violation(n),
        _ => Selector::MostEventful,
    };
    let scenes = load(std::slice::from_ref(&args.path))?;
    let chain = chain::select(&scenes, args.scenario.as_deref(), &selector)?;
    let lay = layout::layout(&chain);
    let format = resolve_format(args.format, args.output.as_deref(), Format::Text);
    emit(
        format,
        || render::chain_figure(&lay),
        |f| match f {
            Format::Mermaid => render::mermaid::chain_mermaid(&lay),
            _ => render::text::chain_text(&lay),
        },
        args.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer boundaries`.
pub fn boundaries(args: &BoundariesArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let scenes = load(std::slice::from_ref(&args.path))?;
    let candidates = scenes.select(args.scenario.as_deref());
    let scene = candidates
        .iter()
        .find(|s| s.counts.effects > 0)
        .or(candidates.first())
        .ok_or_else(|| ChainError::NoScenario(args.scenario.clone().unwrap_or_default()))?;
    let b = boundaries::derive(scene);
    let format = resolve_format(args.format, args.output.as_deref(), Format::Text);
    emit(
        format,
        || render::boundaries::boundaries_figure(&b),
        |f| match f {
            Format::Mermaid => boundaries::mermaid(&b),
            _ => boundaries::text(&b),
        },
        args.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer report`.
pub fn report(args: &ReportArgs, out: &mut dyn Write) -> anyhow::Result<Exit> {
    let scenes = load(&args.paths)?;
    let files = crate::report::write_report(&scenes, &args.paths, &args.output)?;
    let md = args.output.join("report.md");
    let _ = writeln!(out, "wrote {} files; open {}", files.len(), md.display());
    Ok(Exit::Valid)
}
