//! Joining a run's segments into one trace file.
//!
//! The join streams: the joined file is written beside the segments and gets a footer every
//! [`CHECKPOINT_ROWS`] rows; once that is on disk the segments it holds are removed. `<out>` is
//! replaced only by a whole trace, with a rename.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use outbox_trace::{TraceFile, TraceWriter};

use super::place::{failed, parts_dir, Target};
use crate::journal::output::{self, OutputError};

/// Joins segments left by a killed run into the first free name of `<stem>.interrupted.parquet`,
/// `<stem>.interrupted-2.parquet`, ...; returns its path.
pub fn salvage(out: &Path) -> Result<Option<PathBuf>, OutputError> {
    let parts = parts_dir(out);
    if !parts.is_dir() {
        return Ok(None);
    }
    join_segments(&parts, out, Target::Series("interrupted"))
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
pub(super) fn join_segments(
    parts: &Path,
    out: &Path,
    target: Target,
) -> Result<Option<PathBuf>, OutputError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use outbox_trace::{read_trace, Event, Kind};

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
