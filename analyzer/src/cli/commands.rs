//! The glue of every command: take its resolved configuration, call the library, write the
//! result where it was asked to go, and say which exit code that is. Errors are
//! [`Error`]s, each with its exit class.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use super::args::{Cli, Command};
use super::config::{
    BoundariesConfig, ChainConfig, CheckConfig, CheckFormat, CompareConfig, DiffConfig,
    ImportConfig, ReportConfig, ReportOutput, SqlConfig, TimelineConfig,
};
use super::error::{Error, ResultExt};
use super::exit::Exit;
use crate::explain;
use crate::render::{self, figure::Figure, layout, Format};
use crate::views::boundaries;
use crate::views::chain;
use crate::views::chain::ChainError;
use crate::views::compare::{self, CompareError};
use crate::views::diff;
use crate::views::scene::file_stem;
use crate::views::scene::Scenes;
use crate::views::timeline;

/// Runs the command, writing its output to `out`. An error says which exit code it means.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<Exit, Error> {
    match cli.command {
        Command::Check(args) => check(&args.into(), out),
        Command::Chain(args) => chain(&args.into(), out),
        Command::Boundaries(args) => boundaries(&args.into(), out),
        Command::Report(args) => report(&args.into(), out),
        Command::Compare(args) => compare(&args.into(), out),
        Command::Diff(args) => diff(&args.into(), out),
        Command::Timeline(args) => timeline(&args.into(), out),
        Command::Import(args) => import(&args.into(), out),
        Command::Sql(args) => sql(&args.into(), out),
    }
}

/// Refuses, before anything is read, an output that is one of the inputs (by any spelling or
/// symlink), that exists and is not a regular file (a device stays a device), or that another
/// output names too.
fn outputs_apart<P: AsRef<Path>>(
    inputs: &[P],
    outputs: &[(&str, Option<&Path>)],
) -> Result<(), Error> {
    let named: Vec<(&str, &Path)> = outputs
        .iter()
        .filter_map(|&(label, path)| Some((label, path?)))
        .collect();
    outbox_trace::output::check(&named, &outbox_trace::output::Inputs::new(inputs))?;
    Ok(())
}

/// Runs `analyzer sql`.
pub fn sql(config: &SqlConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    let req = &config.request;
    let mut text = crate::sql::statement(req)?;
    if let Some(n) = config.witnesses {
        text.push_str(";\n");
        text.push_str(&crate::sql::witnesses(req, n)?);
    }
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(Exit::Valid)
}

/// Runs `analyzer check`.
pub fn check(config: &CheckConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    outputs_apart(&config.paths, &[("--junit", config.junit.as_deref())])?;
    if config.progress {
        crate::model::load::progress::show();
    }
    let mut report = crate::check::check_paths(&config.paths)?;
    report.skip(&config.skip);
    // The shards of a search that enumerated different lists: at best unknown.
    let differ = crate::check::shards::plans_differ(&report);
    for line in &differ {
        eprintln!("analyzer: {line}");
    }
    if !differ.is_empty() {
        report.verdict = report.verdict.max(crate::check::RunVerdict::Unknown);
    }
    if let Some(path) = &config.junit {
        let mut xml = Vec::new();
        explain::junit::write(&report, &mut xml)?;
        std::fs::write(path, xml)
            .with_context(|| format!("{}: cannot write", path.display()))
            .or_bad_input()?;
    }
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

/// Loads the traces whole, as every view needs them; a broken file is bad input.
fn load(paths: &[PathBuf]) -> Result<Scenes, Error> {
    Ok(Scenes::load(paths)?)
}

/// Runs `analyzer chain`.
pub fn chain(config: &ChainConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    outputs_apart(&[&config.path], &[("-o", config.output.as_deref())])?;
    let scenes = load(std::slice::from_ref(&config.path))?;
    let chain = chain::select(&scenes, config.scenario.as_deref(), &config.selector)?;
    let lay = layout::layout(&chain);
    emit(
        config.format,
        || render::chain_figure(&lay),
        |f| match f {
            Format::Mermaid => render::mermaid::chain_mermaid(&lay),
            _ => render::text::chain_text(&lay),
        },
        config.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer boundaries`.
pub fn boundaries(config: &BoundariesConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    outputs_apart(&[&config.path], &[("-o", config.output.as_deref())])?;
    let scenes = load(std::slice::from_ref(&config.path))?;
    let candidates = scenes.select(config.scenario.as_deref());
    let scene = candidates
        .iter()
        .find(|s| s.figures.effects > 0)
        .or(candidates.first())
        .ok_or_else(|| ChainError::NoScenario(config.scenario.clone().unwrap_or_default()))?;
    let b = boundaries::derive(scene);
    emit(
        config.format,
        || render::boundaries::boundaries_figure(&b),
        |f| match f {
            Format::Mermaid => render::boundaries::boundaries_mermaid(&b),
            _ => render::boundaries::boundaries_text(&b),
        },
        config.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer report`.
pub fn report(config: &ReportConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    // The directory's files are checked one by one as they are written.
    if let ReportOutput::Html(html) = &config.output {
        outputs_apart(&config.paths, &[("--html", Some(html.as_path()))])?;
    }
    let scenes = load(&config.paths)?;
    let dir = match &config.output {
        ReportOutput::Html(html) => {
            crate::report::write_html(&scenes, &config.paths, html)?;
            let _ = writeln!(out, "wrote {}", html.display());
            return Ok(Exit::Valid);
        }
        ReportOutput::Directory(dir) => dir,
    };
    let files = crate::report::write_report(&scenes, &config.paths, dir, config.lab)?;
    let md = dir.join("report.md");
    let html = dir.join("report.html");
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
pub fn compare(config: &CompareConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    let plot = config.plot.as_ref().map(|(p, _)| p.as_path());
    outputs_apart(&config.paths, &[("--plot", plot)])?;
    let scenes = load(&config.paths)?;
    let all: Vec<_> = scenes.scenes().collect();
    let c = compare::compare(&all, config.scenario.as_deref())?;
    if let Some((plot, format)) = &config.plot {
        emit(
            *format,
            || render::compare::compare_figure(&c),
            |_| String::new(),
            Some(plot),
            out,
        )?;
    }
    let text = if config.json {
        serde_json::to_string_pretty(&c)? + "\n"
    } else {
        render::compare::compare_text(&c)
    };
    write_text(&text, None, out)?;
    Ok(Exit::Valid)
}

/// Runs `analyzer diff`.
pub fn diff(config: &DiffConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    outputs_apart(&[&config.a, &config.b], &[("-o", config.output.as_deref())])?;
    // The two runs load side by side (each is a model of its own).
    let (a, b) = std::thread::scope(|scope| {
        let b = scope.spawn(|| load(std::slice::from_ref(&config.b)));
        let a = load(std::slice::from_ref(&config.a));
        (
            a,
            b.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        )
    });
    let (a, b) = (a?, b?);
    let (na, nb) = (file_stem(&config.a), file_stem(&config.b));
    let mut diffs = Vec::new();
    for sa in a.select(config.scenario.as_deref()) {
        if let Some(sb) = b.scenes().find(|s| s.scenario == sa.scenario) {
            let d = diff::diff(&sa, &sb);
            diffs.push((sa, sb, d));
        }
    }
    if diffs.is_empty() {
        return Err(CompareError::NothingShared(format!("{na}, {nb}")).into());
    }
    let format = config.format;
    let output = config.output.as_deref();
    let diverged = diffs.iter().any(|(_, _, d)| d.first.is_some());
    match format {
        Format::Svg | Format::Png => {
            let (sa, sb, d) = diffs
                .iter()
                .find(|(_, _, d)| d.first.is_some())
                .unwrap_or(&diffs[0]);
            let fig = render::diff::side_by_side(sa, sb, d, &na, &nb);
            emit(format, || fig, |_| String::new(), output, out)?;
        }
        _ => {
            let text: Vec<String> = diffs
                .iter()
                .map(|(_, _, d)| render::diff::diff_text(d, &na, &nb))
                .collect();
            write_text(&text.join("\n"), output, out)?;
        }
    }
    Ok(if diverged { Exit::Invalid } else { Exit::Valid })
}

/// Runs `analyzer timeline`.
pub fn timeline(config: &TimelineConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    outputs_apart(&[&config.path], &[("-o", config.output.as_deref())])?;
    let scenes = load(std::slice::from_ref(&config.path))?;
    let chosen = timeline::select(&scenes, config.run.as_deref(), config.scenario.as_deref())?;
    let t = timeline::timeline(&chosen, config.buckets)?;
    emit(
        config.format,
        || render::timeline::timeline_figure(&t),
        |_| String::new(),
        config.output.as_deref(),
        out,
    )?;
    Ok(Exit::Valid)
}

/// Runs `analyzer import`: any accepted encoding in, Parquet out.
pub fn import(config: &ImportConfig, out: &mut dyn Write) -> Result<Exit, Error> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    use outbox_trace::schema::column;
    use outbox_trace::{SeqCheck, TraceFile, TraceWriter};

    let input = &config.input;
    // Written next to the output and renamed at the end, so a bad input leaves no partial file.
    let partial = config.output.with_extension("parquet.partial");
    outputs_apart(
        &[input],
        &[
            ("-o", Some(&config.output)),
            ("-o (its partial file)", Some(&partial)),
        ],
    )?;
    let bad = |e: outbox_trace::TraceError| {
        let text = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        anyhow!("{}: {text}", input.display())
    };
    let file = TraceFile::open(input).map_err(bad).or_bad_input()?;
    let mut info = file.info().clone();
    let tally = file.tally();
    let mut writer = TraceWriter::create_with(&partial, &info.metadata())
        .with_context(|| format!("{}: cannot write", config.output.display()))
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
        std::fs::rename(&partial, &config.output)
            .with_context(|| format!("{}: cannot write", config.output.display()))?;
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.or_bad_input()?;
    tally.fill(&mut info);
    writeln!(
        out,
        "wrote {} ({} rows, from {})",
        config.output.display(),
        info.rows,
        info.encoding.as_str()
    )?;
    Ok(Exit::Valid)
}
