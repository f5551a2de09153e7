//! One recording, for either subject (the built-in lab, or a team's own system): `--out` checked
//! and locked (an interrupted run's segments joined first), the run's temporary directory, what
//! the subject shares across its scenarios started in it, one journal, every scenario in turn
//! (up to the first failure or the shutdown), the trace joined (a failed run's rows beside
//! `--out`, never over it), `--otlp`, the summary and `--report`.
//!
//! What differs between the subjects is a [`Subject`]: [`super::lab`] and [`super::system`].

use std::path::Path;

use anyhow::Context as _;
use outbox_trace::detail;
use tokio_util::sync::CancellationToken;

use super::summary::{lab_json, print_summary, Heading};
use crate::cli::exit::Failure;
use crate::journal::clock::RunClock;
use crate::journal::output::{self, OutLock};
use crate::journal::writer::{salvage, Journal, Recorder, Tallies, Target};

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// Scenarios that did not recover.
    pub unrecovered: Vec<String>,
    /// True if the shutdown (Ctrl-C, SIGTERM, SIGHUP) cut the run short.
    pub interrupted: bool,
}

/// Where a recording goes.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// The Parquet trace.
    pub out: &'a Path,
    /// The same trace as OTLP JSON Lines.
    pub otlp: Option<&'a Path>,
    /// The lab's JSON.
    pub report: Option<&'a Path>,
    /// Print a line as each scenario begins.
    pub progress: bool,
}

/// What a subject tells the recording once its shared parts are up.
pub struct Opened {
    /// The trace's `backend` (`etcd-jetstream`, `system:NAME`).
    pub backend: String,
    /// The protocol variant, for the summary (the lab only).
    pub protocol: Option<&'static str>,
    /// The run's metadata, stored in the file.
    pub metadata: detail::RunConfig,
    /// The scenarios, in order.
    pub scenarios: Vec<String>,
}

/// What every scenario of a recording shares.
pub struct Run<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The journal's sender.
    pub recorder: &'a Recorder,
    /// The live counts per scenario.
    pub tallies: Tallies,
    /// The run's clock.
    pub clock: RunClock,
    /// Unix nanoseconds at the clock's zero.
    pub epoch_unix_ns: u64,
    /// The run's temporary directory.
    pub workdir: &'a Path,
    /// Cancelled by Ctrl-C, SIGTERM or SIGHUP: every loop awaits it.
    pub shutdown: &'a CancellationToken,
}

/// What differs between the lab and a team's system.
pub trait Subject {
    /// Starts what the whole run shares (the lab's own services) in the run's directory.
    fn open(
        &mut self,
        workdir: &Path,
    ) -> impl std::future::Future<Output = Result<Opened, Failure>>;

    /// Runs scenario number `index`; returns whether it recovered.
    fn scenario(
        &mut self,
        run: &Run<'_>,
        index: usize,
    ) -> impl std::future::Future<Output = Result<bool, Failure>>;

    /// Stops what [`Subject::open`] started (and waits until it is gone), whatever the run's end.
    fn close(&mut self) -> impl std::future::Future<Output = ()> {
        async {}
    }

    /// After a complete trace is written: files of the subject's own (the lab's lines).
    fn finish(&mut self, _tallies: &Tallies) -> Result<(), Failure> {
        Ok(())
    }
}

/// A subject lent to a recording, to read what it kept once the recording is over.
impl<S: Subject> Subject for &mut S {
    fn open(
        &mut self,
        workdir: &Path,
    ) -> impl std::future::Future<Output = Result<Opened, Failure>> {
        (**self).open(workdir)
    }

    fn scenario(
        &mut self,
        run: &Run<'_>,
        index: usize,
    ) -> impl std::future::Future<Output = Result<bool, Failure>> {
        (**self).scenario(run, index)
    }

    fn close(&mut self) -> impl std::future::Future<Output = ()> {
        (**self).close()
    }

    fn finish(&mut self, tallies: &Tallies) -> Result<(), Failure> {
        (**self).finish(tallies)
    }
}

/// Records every scenario of `subject` to `output`.
pub async fn record(
    output: Output<'_>,
    mut subject: impl Subject,
    shutdown: CancellationToken,
) -> Result<RunOutcome, Failure> {
    let _guard = OutGuard::take(output.out)?;
    let workdir = super::workdir::create()
        .context("creating the run's temporary directory")
        .map_err(Failure::run)?;
    let opened = match subject.open(workdir.path()).await {
        Ok(opened) => opened,
        Err(e) => {
            subject.close().await;
            return Err(e);
        }
    };
    let run_id = new_run_id();
    let run_json = serde_json::to_string(&opened.metadata).map_err(|e| Failure::run(e.into()))?;
    let (journal, recorder) =
        Journal::start(output.out, &run_id, &opened.backend, run_json).map_err(Failure::run)?;
    let tallies = journal.tallies();
    let clock = RunClock::start();
    let epoch_unix_ns = epoch_of(clock);
    let run = Run {
        run_id: &run_id,
        recorder: &recorder,
        tallies: tallies.clone(),
        clock,
        epoch_unix_ns,
        workdir: workdir.path(),
        shutdown: &shutdown,
    };
    let (unrecovered, failure) =
        every_scenario(&run, &mut subject, &opened.scenarios, output.progress).await;
    drop(run);
    drop(recorder);
    // A failed run's rows never replace a complete trace: they go beside it, in
    // `<out-stem>.failed.parquet` (the error stays one line).
    let target = match failure {
        Some(_) => Target::Series("failed"),
        None => Target::Out,
    };
    let finished = journal.finish(target).await;
    subject.close().await;
    let (events, _) = finished?;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(path) = output.otlp {
        write_otlp(output.out, path, epoch_unix_ns).map_err(Failure::run)?;
    }
    let heading = Heading {
        backend: &opened.backend,
        protocol: opened.protocol,
        out: output.out,
    };
    summarize(output, &run_id, &heading, &tallies, events, &mut subject)?;
    Ok(RunOutcome {
        unrecovered,
        interrupted: shutdown.is_cancelled(),
    })
}

/// What `--out` holds for the whole run: the run's watchdog, and the lock (released last).
struct OutGuard {
    _watchdog: crate::process::watchdog::Watchdog,
    _lock: OutLock,
}

impl OutGuard {
    /// `--out` checked, then locked for the whole run, before anything else: the salvage below
    /// must never take the segments of a recorder still writing them. What an earlier run on
    /// this `--out` left running stops now; what this run starts dies with it, however it dies.
    fn take(out: &Path) -> Result<OutGuard, Failure> {
        output::check(out)?;
        let lock = OutLock::take(out)?;
        let left = crate::process::watchdog::stop_leftovers(out);
        if left > 0 {
            eprintln!(
                "recorder: stopped {left} process(es) an earlier run on this --out left running"
            );
        }
        let watchdog = crate::process::watchdog::start(out)
            .context("starting the run's watchdog")
            .map_err(Failure::run)?;
        if let Some(saved) = salvage(out)? {
            eprintln!(
                "recorder: joined the segments of an interrupted run into {}",
                saved.display()
            );
        }
        Ok(OutGuard {
            _watchdog: watchdog,
            _lock: lock,
        })
    }
}

/// The wall-clock time of ts_ns = 0 on `clock`, for the spans of --otlp and those a system
/// exports.
fn epoch_of(clock: RunClock) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .saturating_sub(u64::try_from(clock.now()).unwrap_or(0))
}

/// Runs the scenarios in turn, up to the first failure or the shutdown: the names of those that
/// did not recover, and the failure.
async fn every_scenario(
    run: &Run<'_>,
    subject: &mut impl Subject,
    scenarios: &[String],
    progress: bool,
) -> (Vec<String>, Option<Failure>) {
    let mut unrecovered = Vec::new();
    for (i, name) in scenarios.iter().enumerate() {
        if run.shutdown.is_cancelled() {
            break;
        }
        if progress {
            eprintln!("[{}/{}] {name} ...", i + 1, scenarios.len());
        }
        match subject.scenario(run, i).await {
            Ok(true) => {}
            Ok(false) => unrecovered.push(name.clone()),
            // Cut short by the shutdown: the run ends as an interrupted run does.
            Err(_) if run.shutdown.is_cancelled() => break,
            Err(e) => return (unrecovered, Some(e.context(format!("scenario {name}")))),
        }
    }
    (unrecovered, None)
}

/// After a complete trace: the summary printed, the subject's own files, and `--report`.
fn summarize(
    output: Output<'_>,
    run_id: &str,
    heading: &Heading<'_>,
    tallies: &Tallies,
    events: u64,
    subject: &mut impl Subject,
) -> Result<(), Failure> {
    {
        let tallies = tallies.lock().expect("tally lock").clone();
        print_summary(run_id, heading, &tallies, events);
    }
    subject.finish(tallies)?;
    if let Some(path) = output.report {
        let tallies = tallies.lock().expect("tally lock").clone();
        let body = serde_json::to_string_pretty(&lab_json(run_id, heading, &tallies))
            .map_err(|e| Failure::run(e.into()))?;
        std::fs::write(path, body + "\n")
            .with_context(|| format!("writing {}", path.display()))
            .map_err(Failure::run)?;
    }
    Ok(())
}

/// Writes the finished trace `parquet` again as OTLP JSON Lines at `path`: the rows read back
/// from the file the run wrote, so both files hold the same rows.
pub fn write_otlp(parquet: &Path, path: &Path, epoch: u64) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let trace = outbox_trace::read_trace(parquet)
        .with_context(|| format!("reading back {}", parquet.display()))?;
    // Written beside the file it replaces and renamed into place once whole.
    let tmp = tempfile::Builder::new()
        .prefix(".outbox-trace-otlp")
        .tempfile_in(output::directory(path))
        .with_context(|| format!("writing {}", path.display()))?;
    outbox_trace::otlp::write::create(tmp.path(), &trace.events, epoch)?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// A run id: the time and a salt from this process.
pub fn new_run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let salt = (now.subsec_nanos() ^ std::process::id().rotate_left(16)) & 0xffff;
    format!("run-{}-{salt:04x}", now.as_secs())
}
