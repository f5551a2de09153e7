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
//! Joining the segments into one trace, streamed and safe against a kill at any point, is
//! `join`'s.

mod join;
mod place;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use outbox_trace::{Event, FigureRow, FigureTally, Identity, Step, TraceWriter};
use tokio::sync::mpsc;

use crate::journal::author::Author;
use crate::journal::output::{self, OutputError};
use join::join_segments;
use place::failed;

pub use join::salvage;
pub use place::{kept_parts, parts_dir, segment_path, Target};

/// How often a segment is closed while events flow.
const SEGMENT_INTERVAL: Duration = Duration::from_secs(1);
/// Rows that close a segment early.
const SEGMENT_ROWS: usize = 256 * 1024;
/// Queue capacity between senders and the writer.
const QUEUE: usize = 64 * 1024;

/// Per-scenario counts kept while events pass, for progress and the summary.
#[derive(Debug, Clone, Default)]
pub struct ScenarioCounts {
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
    /// The kinds read from the wire (`run_start.detail.wire_steps`): a span's account of one of
    /// them is kept in the trace and counted in no figure, as the analyzer does.
    pub wire_steps: Vec<String>,
}

impl ScenarioCounts {
    /// Milliseconds from the scenario's first row to its last.
    pub fn duration_ms(&self) -> i64 {
        self.span_ns
            .map(|(first, last)| (last - first) / 1_000_000)
            .unwrap_or(0)
    }

    /// Whether `step` is a span's account of a kind read from the wire (not counted).
    fn only_an_account(&self, step: &mut Step) -> bool {
        let kind = step.kind();
        let read_from_wire = self.wire_steps.iter().any(|k| k == kind.as_str());
        read_from_wire
            && step
                .note_mut()
                .is_some_and(|note| note.source.as_deref() == Some("span"))
    }

    /// Takes what the counts need of a step's typed detail and ids.
    fn take(&mut self, step: &Step) {
        match step {
            Step::RunStart(start) => self.wire_steps = start.wire_steps.clone(),
            Step::Observed(observed) => self.figures.observe(observed),
            Step::RunEnd(end) => self.recovered = end.recovered,
            Step::EffectCommitted {
                about,
                store_rev: Some(store_rev),
                ..
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
            partition: row.partition,
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
    /// The scenario's name: the row's `scenario` column, and the counts it goes toward.
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

/// Each scenario's counts, in the order scenarios started.
pub type Tallies = Arc<Mutex<Vec<(String, ScenarioCounts)>>>;

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
    /// Answer once everything queued before is on disk in closed segments, with the number of
    /// the last one.
    Seal(tokio::sync::oneshot::Sender<u32>),
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

    /// Waits until every event queued so far is in a closed segment of `parts_dir(out)`
    /// (`seg-NNNNNN.parquet`, readable as a trace of its own); returns the last segment's number.
    pub async fn seal(&self) -> anyhow::Result<u32> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Message::Seal(tx)).await?;
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
                Ok(Some(Message::Seal(done))) => {
                    self.flush()?;
                    last_flush = Instant::now();
                    let _ = done.send(self.segment);
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
            mut step,
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
                tallies.push((identity.scenario.clone(), ScenarioCounts::default()));
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[index].1;
        let counted = !tally.only_an_account(&mut step);
        if counted {
            tally.take(&step);
        }
        // The one conversion from the typed step to the row.
        let event = step.into_event(identity);
        if counted {
            tally.count(&event);
        }
        drop(tallies);
        self.buffer.push(event);
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.segment += 1;
        let path = segment_path(&self.parts, self.segment);
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
