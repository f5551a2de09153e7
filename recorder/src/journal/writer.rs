//! The single writer of trace events.
//!
//! Every event of a run, from every actor process and from the recorder itself, goes through one
//! bounded queue to one task, which assigns `seq` in arrival order. A full queue makes senders wait:
//! nothing is dropped. The task closes a Parquet segment at least once a second
//! (`<out>.parts/seg-NNNNNN.parquet`), so if the recorder itself is killed, everything recorded up
//! to about a second before is on disk in readable files; at the end the segments are joined into
//! `<out>` and removed. A run that finds segments left over from a killed run joins them into the
//! first free name of `<out-stem>.interrupted.parquet`, `<out-stem>.interrupted-2.parquet`, ...
//! first.
//!
//! The join streams: the joined file is written beside the segments and gets a footer every
//! [`CHECKPOINT_ROWS`] rows; once that is on disk the segments it holds are removed. `<out>` is
//! replaced only by a whole trace, with a rename.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use outbox_trace::{Event, FigureRow, FigureTally, Identity, Step, TraceFile, TraceWriter};
use tokio::sync::mpsc;

use std::io::Write as _;

use crate::journal::author::Author;
use crate::journal::output::{self, OutputError};

/// How often a segment is closed while events flow.
const SEGMENT_INTERVAL: Duration = Duration::from_secs(1);
/// Rows that close a segment early.
const SEGMENT_ROWS: usize = 256 * 1024;
/// Queue capacity between senders and the writer.
const QUEUE: usize = 64 * 1024;

/// Per-scenario counts kept while events pass, for progress and the summary.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// The scenario's figures (the last `observed` ground truth included).
    pub figures: FigureTally<String>,
    /// `run_end.recovered`.
    pub recovered: Option<bool>,
    /// First and last `ts_ns`.
    pub span_ns: Option<(i64, i64)>,
    /// The recorded `effect_committed` rows, as (store revision, event).
    pub committed: HashSet<(i64, String)>,
    /// The tasks with a recorded `task_accepted`.
    pub accepted: HashSet<String>,
    /// The events with a recorded `intent_recorded`.
    pub intents: HashSet<String>,
}

impl Tally {
    /// Milliseconds from the scenario's first row to its last.
    pub fn duration_ms(&self) -> i64 {
        self.span_ns
            .map(|(first, last)| (last - first) / 1_000_000)
            .unwrap_or(0)
    }

    /// Takes what the tally needs of a step's typed detail and ids.
    fn take(&mut self, step: &Step) {
        match step {
            Step::Observed(observed) => self.figures.observe(observed),
            Step::RunEnd(end) => self.recovered = end.recovered,
            Step::EffectCommitted {
                about, store_rev, ..
            } => {
                self.committed.insert((*store_rev, about.event_id.clone()));
            }
            Step::TaskAccepted { about, .. } => {
                self.accepted.insert(about.task_id.clone());
            }
            Step::IntentRecorded { about, .. } => {
                self.intents.insert(about.event_id.clone());
            }
            _ => {}
        }
    }

    /// Counts the row made from a step.
    fn count(&mut self, event: &Event) {
        let row = FigureRow::of(event);
        self.figures.add(FigureRow {
            kind: row.kind,
            task: row.task.map(str::to_string),
            broker_seq: row.broker_seq,
            store_rev: row.store_rev,
            counter: row.counter,
        });
        let first = self.span_ns.map_or(event.ts_ns, |(first, _)| first);
        self.span_ns = Some((first, event.ts_ns));
    }
}

/// A step on its way into the trace: who reported it, in which scenario, and when. The journal
/// adds the run, the backend and `seq`.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The scenario's name: the row's `scenario` column, and the tally it counts toward.
    pub scenario: String,
    /// Who reported it; it gives the row's `actor` column.
    pub author: Author,
    /// The author's life.
    pub incarnation: u32,
    /// Nanoseconds on the run's clock.
    pub ts_ns: i64,
    /// The step, holding the columns its kind requires.
    pub step: Step,
}

/// Tallies by scenario, in the order scenarios started.
pub type Tallies = Arc<Mutex<Vec<(String, Tally)>>>;

/// A handle to send events; cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<Message>,
}

/// What goes through the queue.
enum Message {
    /// A step to record.
    Step(Box<Entry>),
    /// Answer once everything queued before has been taken in (and tallied).
    Sync(tokio::sync::oneshot::Sender<()>),
}

impl Recorder {
    /// Queues one step, waiting if the queue is full. Fails only if the writer died.
    pub async fn record(&self, entry: Entry) -> anyhow::Result<()> {
        self.send(Message::Step(Box::new(entry))).await
    }

    /// Waits until every event queued so far is taken in, so the tallies include them.
    pub async fn sync(&self) -> anyhow::Result<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Message::Sync(tx)).await?;
        rx.await.map_err(|_| stopped())
    }

    async fn send(&self, message: Message) -> anyhow::Result<()> {
        self.tx.send(message).await.map_err(|_| stopped())
    }
}

fn stopped() -> anyhow::Error {
    anyhow::anyhow!("the trace writer stopped; see the error above")
}

/// The writer task and its output.
pub struct Journal {
    task: tokio::task::JoinHandle<anyhow::Result<u64>>,
    out: PathBuf,
    tallies: Tallies,
}

impl Journal {
    /// Starts the writer for `out`. `run_json` is stored as the file's `outbox_trace.run`.
    pub fn start(
        out: &Path,
        run_id: &str,
        backend: &str,
        run_json: String,
    ) -> anyhow::Result<(Journal, Recorder)> {
        let parts = parts_dir(out);
        std::fs::create_dir_all(&parts).with_context(|| format!("creating {}", parts.display()))?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let tallies: Tallies = Arc::default();
        let writer = Writer {
            parts,
            run_id: run_id.to_string(),
            backend: backend.to_string(),
            run_json,
            segment: 0,
            buffer: Vec::new(),
            seq: 0,
            tallies: tallies.clone(),
        };
        let task = tokio::spawn(writer.run(rx));
        Ok((
            Journal {
                task,
                out: out.to_path_buf(),
                tallies,
            },
            Recorder { tx },
        ))
    }

    /// A shared handle on the tallies, updated as each step is taken in (the summary and `--report`
    /// read them).
    pub fn tallies(&self) -> Tallies {
        self.tallies.clone()
    }

    /// Waits for every sender to be dropped, then joins the segments into `<out>` (for
    /// [`Target::Out`]) or into the first free name of a series beside it (a failed run's rows,
    /// which must not replace a complete trace). Returns the number of events written and the
    /// file they are in (none when nothing was recorded: `<out>` is then left as it was).
    pub async fn finish(self, target: Target) -> Result<(u64, Option<PathBuf>), OutputError> {
        let parts = parts_dir(&self.out);
        let rows = match self.task.await {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => return Err(failed(e, &parts, &parts)),
            Err(_) => {
                return Err(OutputError::Write(anyhow::anyhow!(
                    "the trace writer panicked"
                )))
            }
        };
        let path = join_segments(&parts, &self.out, target)?;
        Ok((rows, path))
    }
}

/// Where [`Journal::finish`] puts the joined trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `--out` itself, replaced only once the new trace is whole.
    Out,
    /// The first free name of the series `<out-stem>.<tag>.parquet`, `<out-stem>.<tag>-2.parquet`.
    Series(&'static str),
}

/// Joins segments left by a killed run into the first free name of `<stem>.interrupted.parquet`,
/// `<stem>.interrupted-2.parquet`, ...; returns its path.
pub fn salvage(out: &Path) -> Result<Option<PathBuf>, OutputError> {
    let parts = parts_dir(out);
    if !parts.is_dir() {
        return Ok(None);
    }
    join_segments(&parts, out, Target::Series("interrupted"))
}

/// `<out>.parts`, where the segments are.
pub fn parts_dir(out: &Path) -> PathBuf {
    output::sibling(out, ".parts")
}

/// The joined file while it is written, inside the parts directory.
const PARTIAL: &str = "joining.partial";
/// `<length> <segment>`: the partial file cut at `length` is a complete trace of every segment up
/// to `segment` (by name), and those segments may be gone.
const THROUGH: &str = "joining.through";
/// The name a recovered partial file takes: it sorts before every segment the writer makes.
const PREFIX_SEGMENT: &str = "seg-000000.parquet";
/// Rows joined between two checkpoints: one row group of the joined file.
const CHECKPOINT_ROWS: usize = 1 << 20;

fn segments(parts: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(parts)
        .with_context(|| format!("reading {}", parts.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    Ok(files)
}

/// Joins the segments in `parts` into one file and moves it to `target`, streaming: every
/// [`CHECKPOINT_ROWS`] rows the joined file gets a footer and is made durable, and only then are
/// the segments it holds removed, so the join needs little more disk than the trace itself. A
/// join that fails (or a recorder killed meanwhile) leaves the joined part as the first segment
/// and the rest as they were: the next join picks them up, nothing twice, nothing lost.
fn join_segments(parts: &Path, out: &Path, target: Target) -> Result<Option<PathBuf>, OutputError> {
    recover(parts)?;
    let files = segments(parts)?;
    if files.is_empty() {
        std::fs::remove_dir_all(parts).ok();
        return Ok(None);
    }
    let partial = parts.join(PARTIAL);
    if let Err(e) = join_into(&files, parts, &partial, CHECKPOINT_ROWS) {
        let kept = recover(parts);
        return Err(match kept {
            Err(again) => again,
            Ok(()) => failed(e, &partial, parts),
        });
    }
    let moved = match target {
        Target::Out => std::fs::rename(&partial, out).map(|()| out.to_path_buf()),
        Target::Series(tag) => output::persist_new(&partial, out, tag),
    };
    let dest = moved
        .with_context(|| format!("moving the joined trace to {}", out.display()))
        .map_err(|e| match recover(parts) {
            Err(again) => again,
            Ok(()) => failed(e, out, parts),
        })?;
    output::sync_dir(output::directory(out)).ok();
    std::fs::remove_dir_all(parts).ok();
    Ok(Some(dest))
}

/// Writes every row of `files` into `partial`, removing each segment once a durable checkpoint
/// holds it (one every `every` rows); at the end every segment is removed and `partial` is the
/// whole trace.
fn join_into(files: &[PathBuf], parts: &Path, partial: &Path, every: usize) -> anyhow::Result<()> {
    let run_json = TraceFile::open(&files[0])
        .with_context(|| format!("reading {}", files[0].display()))?
        .info()
        .run_json
        .clone();
    let (file, watch) = output::WatchedFile::create(partial)
        .with_context(|| format!("creating {}", partial.display()))?;
    let joined = join_rows(files, parts, file, run_json.as_deref(), every);
    joined.map_err(|e| watch.explain(e))
}

fn join_rows(
    files: &[PathBuf],
    parts: &Path,
    file: output::WatchedFile,
    run_json: Option<&str>,
    every: usize,
) -> anyhow::Result<()> {
    let mut writer = TraceWriter::new(file, run_json)?;
    let mut pending: Vec<PathBuf> = Vec::new();
    let mut since_checkpoint = 0;
    for file in files {
        let segment =
            TraceFile::open(file).with_context(|| format!("reading {}", file.display()))?;
        let rows = segment.info().rows as usize;
        if since_checkpoint > 0 && since_checkpoint + rows > every {
            if let Some(len) = writer.checkpoint()? {
                writer.sink().file().sync_data()?;
                holds_through(parts, len, &mut pending)?;
            }
            since_checkpoint = 0;
        }
        for batch in segment.batches() {
            writer.write_batch(&batch?)?;
        }
        since_checkpoint += rows;
        pending.push(file.clone());
    }
    let sink = writer.finish()?;
    sink.file().sync_all()?;
    let len = sink.file().metadata()?.len();
    holds_through(parts, len, &mut pending)
}

/// Records that `partial` cut at `len` holds every segment in `pending`, then removes them.
fn holds_through(parts: &Path, len: u64, pending: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let Some(last) = pending.last().and_then(|p| p.file_name()) else {
        return Ok(());
    };
    let tmp = parts.join(format!("{THROUGH}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    writeln!(file, "{len} {}", last.to_string_lossy())?;
    file.sync_all()?;
    std::fs::rename(&tmp, parts.join(THROUGH))?;
    output::sync_dir(parts)?;
    for segment in pending.drain(..) {
        std::fs::remove_file(&segment)
            .with_context(|| format!("removing {}", segment.display()))?;
    }
    Ok(())
}

/// Puts back in order what a join cut short left in `parts`: the joined file cut at its last
/// checkpoint becomes the first segment, and the segments it holds are removed.
fn recover(parts: &Path) -> Result<(), OutputError> {
    let partial = parts.join(PARTIAL);
    let through = parts.join(THROUGH);
    if !partial.exists() {
        std::fs::remove_file(&through).ok();
        return Ok(());
    }
    let mark = std::fs::read_to_string(&through).ok().and_then(|text| {
        let (len, last) = text.trim().split_once(' ')?;
        Some((len.parse::<u64>().ok()?, last.to_string()))
    });
    let held = partial.metadata().map(|m| m.len()).unwrap_or(0);
    match mark {
        Some((len, last)) if held >= len => {
            let cut = || -> anyhow::Result<()> {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&partial)?
                    .set_len(len)?;
                for segment in segments(parts)? {
                    if segment
                        .file_name()
                        .is_some_and(|n| *n.to_string_lossy() <= *last)
                    {
                        std::fs::remove_file(&segment)?;
                    }
                }
                std::fs::rename(&partial, parts.join(PREFIX_SEGMENT))?;
                output::sync_dir(parts)?;
                std::fs::remove_file(&through)?;
                Ok(())
            };
            cut().with_context(|| format!("recovering the joined part in {}", parts.display()))?;
        }
        // No checkpoint yet: every segment is still there.
        _ => {
            std::fs::remove_file(&partial).ok();
            std::fs::remove_file(&through).ok();
        }
    }
    Ok(())
}

/// The error for a failed write of `path`: a full disk is named, with where the rows are kept.
fn failed(e: anyhow::Error, path: &Path, kept: &Path) -> OutputError {
    if output::is_no_space(&e) {
        OutputError::NoSpace {
            disk: output::disk_of(path),
            path: path.to_path_buf(),
            kept: kept.to_path_buf(),
        }
    } else {
        OutputError::Write(e)
    }
}

struct Writer {
    parts: PathBuf,
    run_id: String,
    backend: String,
    run_json: String,
    segment: u32,
    buffer: Vec<Event>,
    seq: u64,
    tallies: Tallies,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Message>) -> anyhow::Result<u64> {
        let mut last_flush = Instant::now();
        loop {
            let wait = SEGMENT_INTERVAL.saturating_sub(last_flush.elapsed());
            match tokio::time::timeout(wait, rx.recv()).await {
                Ok(Some(Message::Step(entry))) => self.accept(*entry),
                Ok(Some(Message::Sync(done))) => {
                    let _ = done.send(());
                }
                Ok(None) => break,
                Err(_) => {}
            }
            if self.buffer.len() >= SEGMENT_ROWS || last_flush.elapsed() >= SEGMENT_INTERVAL {
                self.flush()?;
                last_flush = Instant::now();
            }
        }
        self.flush()?;
        Ok(self.seq)
    }

    fn accept(&mut self, entry: Entry) {
        self.seq += 1;
        let Entry {
            scenario,
            author,
            incarnation,
            ts_ns,
            step,
        } = entry;
        let identity = Identity {
            run_id: self.run_id.clone(),
            scenario,
            seq: self.seq,
            ts_ns,
            backend: self.backend.clone(),
            actor: author.to_string(),
            incarnation,
        };
        let mut tallies = self.tallies.lock().expect("tally lock");
        let index = match tallies.iter().position(|(s, _)| *s == identity.scenario) {
            Some(i) => i,
            None => {
                tallies.push((identity.scenario.clone(), Tally::default()));
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[index].1;
        tally.take(&step);
        // The one conversion from the typed step to the row.
        let event = step.into_event(identity);
        tally.count(&event);
        drop(tallies);
        self.buffer.push(event);
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.segment += 1;
        let path = self.parts.join(format!("seg-{:06}.parquet", self.segment));
        let tmp = path.with_extension("tmp");
        let (file, watch) = output::WatchedFile::create(&tmp)
            .with_context(|| format!("writing {}", path.display()))?;
        let written = (|| -> anyhow::Result<()> {
            let mut writer = TraceWriter::new(file, Some(&self.run_json))?;
            writer.write(&self.buffer)?;
            writer.finish()?;
            std::fs::rename(&tmp, &path)?;
            Ok(())
        })();
        if let Err(e) = written {
            std::fs::remove_file(&tmp).ok();
            return Err(watch
                .explain(e)
                .context(format!("writing {}", path.display())));
        }
        self.buffer.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_trace::{read_trace, Kind};

    /// A segment of `rows` events numbered from `first`.
    fn segment(parts: &Path, n: u32, first: u64, rows: u64) {
        let events: Vec<Event> = (first..first + rows)
            .map(|seq| Event {
                run_id: "r".into(),
                scenario: "s".into(),
                seq,
                actor: "recorder".into(),
                ..Event::new(Kind::RunStart)
            })
            .collect();
        let mut writer =
            TraceWriter::create(&parts.join(format!("seg-{n:06}.parquet")), Some("{}")).unwrap();
        writer.write(&events).unwrap();
        writer.finish().unwrap();
    }

    fn seqs(path: &Path) -> Vec<u64> {
        read_trace(path)
            .unwrap()
            .events
            .iter()
            .map(|e| e.seq)
            .collect()
    }

    #[test]
    fn a_join_cut_short_keeps_every_row_once_and_the_next_join_finishes_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.parquet");
        let parts = parts_dir(&out);
        std::fs::create_dir_all(&parts).unwrap();
        for n in 1..=3 {
            segment(&parts, n, u64::from(n - 1) * 10 + 1, 10);
        }
        // The fourth segment cannot be read: the join stops there, as on a full disk.
        std::fs::write(parts.join("seg-000004.parquet"), b"not parquet").unwrap();
        let files = segments(&parts).unwrap();
        let partial = parts.join(PARTIAL);
        // A checkpoint every 15 rows: after segments 1 and 2, each removed once held.
        assert!(join_into(&files, &parts, &partial, 15).is_err());
        assert!(!parts.join("seg-000001.parquet").exists());
        assert!(!parts.join("seg-000002.parquet").exists());
        assert!(parts.join("seg-000003.parquet").exists());
        recover(&parts).unwrap();
        // What the checkpoints held is now the first segment, a complete trace on its own.
        assert_eq!(
            seqs(&parts.join(PREFIX_SEGMENT)),
            (1..=20).collect::<Vec<_>>()
        );
        assert!(!partial.exists() && !parts.join(THROUGH).exists());
        // The next join takes the rest, each row once and in order.
        std::fs::remove_file(parts.join("seg-000004.parquet")).unwrap();
        segment(&parts, 4, 31, 5);
        let joined = join_segments(&parts, &out, Target::Out).unwrap();
        assert_eq!(joined.as_deref(), Some(out.as_path()));
        assert_eq!(seqs(&out), (1..=35).collect::<Vec<_>>());
        assert!(!parts.exists());
    }

    #[test]
    fn a_recorder_killed_between_checkpoint_and_removal_loses_and_repeats_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.parquet");
        let parts = parts_dir(&out);
        std::fs::create_dir_all(&parts).unwrap();
        for n in 1..=2 {
            segment(&parts, n, u64::from(n - 1) * 10 + 1, 10);
        }
        // The joined part holds both segments and says so, but neither was removed yet.
        let partial = parts.join(PARTIAL);
        let mut writer = TraceWriter::create(&partial, Some("{}")).unwrap();
        for n in 1..=2 {
            let file = TraceFile::open(&parts.join(format!("seg-{n:06}.parquet"))).unwrap();
            for batch in file.batches() {
                writer.write_batch(&batch.unwrap()).unwrap();
            }
        }
        let len = writer.checkpoint().unwrap().unwrap();
        // More rows after the checkpoint, never made whole.
        writer
            .write_batch(&outbox_trace::to_batch(&[Event::new(Kind::RunEnd)]).unwrap())
            .unwrap();
        drop(writer);
        std::fs::write(parts.join(THROUGH), format!("{len} seg-000002.parquet\n")).unwrap();
        let saved = salvage(&out).unwrap().unwrap();
        assert_eq!(saved, dir.path().join("run.interrupted.parquet"));
        assert_eq!(seqs(&saved), (1..=20).collect::<Vec<_>>());
        assert!(!parts.exists());
    }
}
