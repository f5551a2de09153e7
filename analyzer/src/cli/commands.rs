//! The glue of the drawing, report and comparison commands: resolve arguments, call the library,
//! write the result where it was asked to go.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use super::args::{
    BoundariesArgs, ChainArgs, Cli, Command, CompareArgs, DiffArgs, ImportArgs, ReportArgs,
    SqlArgs, TimelineArgs,
};
use super::config::{CheckConfig, CheckFormat};
use super::error::{Error, ResultExt};
use super::exit::Exit;
use crate::explain;
use crate::render::{self, figure::Figure, layout, Format};
use crate::views::boundaries;
use crate::views::chain::ChainError;
use crate::views::chain::{self, Selector};
use crate::views::compare::{self, CompareError};
use crate::views::diff;
use crate::views::scene::file_stem;
use crate::views::scene::Scenes;
use crate::views::timeline;

/// Runs the command, writing its output to `out`. An error says which exit code it means.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<Exit, Error> {
    match cli.command {
        Command::Check(args) => check(&args.into(), out),
        Command::Chain(args) => chain(&args, out),
        Command::Boundaries(args) => boundaries(&args, out),
        Command::Report(args) => report(&args, out),
        Command::Compare(args) => compare(&args, out),
        Command::Diff(args) => diff(&args, out),
        Command::Timeline(args) => timeline(&args, out),
        Command::Import(args) => import(&args, out),
        Command::Sql(args) => sql(&args, out),
    }
}

/// Runs `analyzer sql`.
pub fn sql(args: &SqlArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let req = crate::sql::Request {
        dialect: args.dialect,
        invariants: args.invariants.clone(),
        source: args.source.clone(),
    };
    let mut text = crate::sql::statement(&req)?;
    if let Some(n) = args.witnesses {
        text.push_str(";\n");
        text.push_str(&crate::sql::witnesses(&req, n)?);
    }
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(Exit::Valid)
}

/// Runs `analyzer check`.
pub fn check(config: &CheckConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    let report = crate::check::check_paths(&config.paths)?;
    let written = match config.format {
        CheckFormat::Text => explain::text::write(&report, out),
        CheckFormat::Json => explain::json::write(&report, out),
    };
    match written.and_then(|()| out.flush()) {
        // A reader that closed the pipe early (`| head`) still gets the exit code.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(report.verdict.into())
}

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
pub fn write_text(text: &str, output: Option<&Path>, out: &mut dyn Write) -> Result<(), Error> {
    match output {
        Some(p) => std::fs::write(p, text)
            .with_context(|| format!("{}: cannot write", p.display()))
            .or_bad_input(),
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
) -> Result<(), Error> {
    match format {
        Format::Svg => write_text(&render::svg::to_svg(&figure())?, output, out),
        Format::Png => {
            let Some(path) = output else {
                return Err(Error::bad_input(anyhow!(
                    "PNG output needs a file: add -o FILE.png"
                )));
            };
            render::png::write_png(&figure(), path)?;
            Ok(())
        }
        Format::Mermaid | Format::Text => write_text(&text(format), output, out),
    }
}

fn load(paths: &[PathBuf]) -> Result<Scenes, Error> {
    Ok(Scenes::load(paths)?)
}

/// Runs `analyzer chain`.
pub fn chain(args: &ChainArgs, out: &mut dyn Write) -> Result<Exit, Error> {
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
pub fn boundaries(args: &BoundariesArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let scenes = load(std::slice::from_ref(&args.path))?;
    let candidates = scenes.select(args.scenario.as_deref());
    let scene = candidates
        .iter()
        .find(|s| s.figures.effects > 0)
        .or(candidates.first())
        .ok_or_else(|| ChainError::NoScenario(args.scenario.clone().unwrap_or_default()))?;
    let b = boundaries::derive(scene);
    let format = resolve_format(args.format, args.output.as_deref(), Format::Text);
    emit(
        format,
        || render::boundaries::boundaries_figure(&b),
        |f| match f {
            Format::Mermaid => render::boundaries::boundaries_mermaid(&b),
            _ => render::boundaries::boundaries_text(&b),
        },
        args.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer report`.
pub fn report(args: &ReportArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let scenes = load(&args.paths)?;
    if let Some(html) = &args.html {
        crate::report::write_html(&scenes, &args.paths, html)?;
        let _ = writeln!(out, "wrote {}", html.display());
        return Ok(Exit::Valid);
    }
    let files = crate::report::write_report(&scenes, &args.paths, &args.output)?;
    let md = args.output.join("report.md");
    let html = args.output.join("report.html");
    let _ = writeln!(
        out,
        "wrote {} files; open {} or {}",
        files.len(),
        md.display(),
        html.display()
    );
    Ok(Exit::Valid)
}

/// Runs `analyzer compare`.
pub fn compare(args: &CompareArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let scenes = load(&args.paths)?;
    let all: Vec<_> = scenes.scenes().collect();
    let c = compare::compare(&all, args.scenario.as_deref())?;
    if let Some(plot) = &args.plot {
        let format = resolve_format(None, Some(plot), Format::Svg);
        let format = if format == Format::Png {
            Format::Png
        } else {
            Format::Svg
        };
        emit(
            format,
            || render::compare::compare_figure(&c),
            |_| String::new(),
            Some(plot),
            out,
        )?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&c)? + "\n"
    } else {
        render::compare::compare_text(&c)
    };
    write_text(&text, None, out)?;
    Ok(Exit::Valid)
}

/// Runs `analyzer diff`.
pub fn diff(args: &DiffArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let (a, b) = (
        load(std::slice::from_ref(&args.a))?,
        load(std::slice::from_ref(&args.b))?,
    );
    let (na, nb) = (file_stem(&args.a), file_stem(&args.b));
    let mut diffs = Vec::new();
    for sa in a.select(args.scenario.as_deref()) {
        if let Some(sb) = b.scenes().find(|s| s.scenario == sa.scenario) {
            let d = diff::diff(&sa, &sb);
            diffs.push((sa, sb, d));
        }
    }
    if diffs.is_empty() {
        return Err(CompareError::NothingShared(format!("{na}, {nb}")).into());
    }
    let format = resolve_format(args.format, args.output.as_deref(), Format::Text);
    let diverged = diffs.iter().any(|(_, _, d)| d.first.is_some());
    match format {
        Format::Svg | Format::Png => {
            let (sa, sb, d) = diffs
                .iter()
                .find(|(_, _, d)| d.first.is_some())
                .unwrap_or(&diffs[0]);
            let fig = side_by_side(sa, sb, d, &na, &nb);
            emit(
                format,
                || fig,
                |_| String::new(),
                args.output.as_deref(),
                out,
            )?;
        }
        _ => {
            let text: Vec<String> = diffs
                .iter()
                .map(|(_, _, d)| render::diff::diff_text(d, &na, &nb))
                .collect();
            write_text(&text.join("\n"), args.output.as_deref(), out)?;
        }
    }
    Ok(if diverged { Exit::Invalid } else { Exit::Valid })
}

/// Runs `analyzer timeline`.
pub fn timeline(args: &TimelineArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    let scenes = load(std::slice::from_ref(&args.path))?;
    let chosen = timeline::select(&scenes, args.run.as_deref(), args.scenario.as_deref())?;
    let t = timeline::timeline(&chosen, usize::from(args.buckets))?;
    let format = match resolve_format(None, args.output.as_deref(), Format::Svg) {
        Format::Png => Format::Png,
        _ => Format::Svg,
    };
    emit(
        format,
        || render::timeline::timeline_figure(&t),
        |_| String::new(),
        args.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// The diverging task's two chains side by side, the diverging steps marked.
fn side_by_side<'a>(
    a: &crate::views::scene::Scene<'a>,
    b: &crate::views::scene::Scene<'a>,
    d: &diff::Diff,
    na: &str,
    nb: &str,
) -> Figure {
    use crate::render::figure::{Align, INK, RED};
    let (ta, tb) = match &d.first {
        Some(f) => (f.task_a.clone(), f.task_b.clone()),
        None => d
            .tasks
            .first()
            .map(|(x, y, _)| (x.clone(), y.clone()))
            .unwrap_or_default(),
    };
    let chain_of = |s: &crate::views::scene::Scene<'a>, t: &str| -> Option<chain::Chain<'a>> {
        Some(chain::task_chain(*s, s.id(t)?))
    };
    let (Some(mut ca), Some(mut cb)) = (chain_of(a, &ta), chain_of(b, &tb)) else {
        return Figure::new(40, 40);
    };
    if let Some(f) = &d.first {
        ca.marked.extend(f.a.as_ref().map(|s| s.seq));
        cb.marked.extend(f.b.as_ref().map(|s| s.seq));
    }
    ca.title = format!("{na} · {}", ca.title);
    cb.title = format!("{nb} · {}", cb.title);
    let (fa, fb) = (
        render::chain_figure(&layout::layout(&ca)),
        render::chain_figure(&layout::layout(&cb)),
    );
    let mut fig = Figure::new(fa.width + fb.width + 20, fa.height.max(fb.height) + 40);
    let head = d
        .first
        .as_ref()
        .map_or_else(|| "no divergence".to_string(), |f| f.describe());
    fig.text(
        (20, 18),
        &layout::fit(&head, fig.width - 40),
        14,
        if d.first.is_some() { RED } else { INK },
        Align::Left,
    );
    fig.overlay(&fa, 0, 36);
    fig.line(
        (fa.width + 10, 40),
        (fa.width + 10, fig.height - 4),
        (200, 200, 200),
        1,
        false,
    );
    fig.overlay(&fb, fa.width + 20, 36);
    fig
}

/// Runs `analyzer import`: any accepted encoding in, Parquet out.
pub fn import(args: &ImportArgs, out: &mut dyn Write) -> Result<Exit, Error> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    use outbox_trace::schema::column;
    use outbox_trace::{SeqCheck, TraceFile, TraceWriter};

    let input = &args.input;
    let bad = |e: outbox_trace::TraceError| {
        let text = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        anyhow!("{}: {text}", input.display())
    };
    let file = TraceFile::open(input).map_err(bad).or_bad_input()?;
    let info = file.info().clone();
    // Write next to the output and rename at the end, so a bad input leaves no partial file.
    let partial = args.output.with_extension("parquet.partial");
    let mut writer = TraceWriter::create(&partial, info.run_json.as_deref())
        .with_context(|| format!("{}: cannot write", args.output.display()))
        .or_bad_input()?;
    let mut seqs = SeqCheck::default();
    let written = (|| -> anyhow::Result<()> {
        for batch in file.batches() {
            let batch = batch.map_err(bad)?;
            let runs = batch.column(column("run_id")).as_string::<i32>();
            let seq = batch.column(column("seq")).as_primitive::<UInt64Type>();
            for i in 0..batch.num_rows() {
                seqs.push(runs.value(i), seq.value(i));
            }
            writer.write_batch(&batch)?;
        }
        seqs.finish().map_err(bad)?;
        writer.finish()?;
        std::fs::rename(&partial, &args.output)
            .with_context(|| format!("{}: cannot write", args.output.display()))?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.or_bad_input()?;
    writeln!(
        out,
        "wrote {} ({} rows, from {})",
        args.output.display(),
        info.rows,
        info.encoding.as_str()
    )?;
    Ok(Exit::Valid)
}
