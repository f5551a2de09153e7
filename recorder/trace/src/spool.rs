//! Inputs that can be read only once: standard input (`-`) and a FIFO (or another character
//! device) named as a trace. Such an input is never opened twice: its first open tees every
//! byte read into an anonymous temporary file as it streams in, and every later open of the
//! same input in this process reads that file, pulling from the input only what no reader has
//! read yet. A command that reads a trace twice (`check` gathering its witnesses) therefore
//! works on a pipe, and the spool costs the input's own (compressed) size on disk, no memory.
//!
//! An input is known by what it is, not by how it was spelled: standard input by `-`, a FIFO by
//! its device and inode (so `/dev/fd/63` and its target are one input).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::TraceError;

/// The path that names standard input.
pub const STDIN: &str = "-";

/// Whether `path` names standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Which single-pass input a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Stdin,
    Device { dev: u64, ino: u64 },
}

/// The bytes of one single-pass input read so far, and the input itself until its end.
struct Spool {
    /// The input, until it has been read to its end.
    origin: Option<Box<dyn Read + Send>>,
    /// Every byte read from the input, in order.
    file: File,
    /// How many bytes `file` holds.
    written: u64,
}

/// The spools of this process, by input.
static SPOOLS: Mutex<Vec<(Key, Arc<Mutex<Spool>>)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The single-pass input `path` names, if it names one (`-`, a FIFO, a character device).
/// Looking does not open it (a FIFO's open would wait for a writer).
fn key(path: &Path) -> Option<Key> {
    if is_stdin(path) {
        return Some(Key::Stdin);
    }
    let meta = std::fs::metadata(path).ok()?;
    let t = meta.file_type();
    (t.is_fifo() || t.is_char_device()).then(|| Key::Device {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

/// Whether `path` names an input that can be read only once (standard input, a FIFO, a
/// character device): such an input is spooled as it is first read.
pub fn is_single_pass(path: &Path) -> bool {
    key(path).is_some()
}

/// The spool of the single-pass input `path`, made (and the input opened) on the first call.
/// `None` when `path` names an ordinary file or directory.
fn spool(path: &Path) -> Result<Option<Arc<Mutex<Spool>>>, TraceError> {
    let Some(key) = key(path) else {
        return Ok(None);
    };
    let mut spools = lock(&SPOOLS);
    if let Some((_, spool)) = spools.iter().find(|(k, _)| *k == key) {
        return Ok(Some(spool.clone()));
    }
    let origin: Box<dyn Read + Send> = match key {
        Key::Stdin => Box::new(io::stdin()),
        Key::Device { .. } => Box::new(File::open(path).map_err(|e| TraceError::io(path, e))?),
    };
    let file = tempfile::tempfile().map_err(|e| TraceError::io(path, e))?;
    let spool = Arc::new(Mutex::new(Spool {
        origin: Some(origin),
        file,
        written: 0,
    }));
    spools.push((key, spool.clone()));
    Ok(Some(spool))
}

/// Reads a single-pass input from its start: first what the spool holds, then the input itself
/// (spooling it on the way).
pub(crate) struct SpoolReader {
    spool: Arc<Mutex<Spool>>,
    at: u64,
}

impl Read for SpoolReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut spool = lock(&self.spool);
        if self.at < spool.written {
            let left = usize::try_from(spool.written - self.at).unwrap_or(usize::MAX);
            let want = buf.len().min(left);
            let n = spool.file.read_at(&mut buf[..want], self.at)?;
            self.at += n as u64;
            return Ok(n);
        }
        let Some(origin) = spool.origin.as_mut() else {
            return Ok(0);
        };
        let n = origin.read(buf)?;
        if n == 0 {
            spool.origin = None;
            return Ok(0);
        }
        let written = spool.written;
        spool.file.write_all_at(&buf[..n], written)?;
        spool.written += n as u64;
        self.at += n as u64;
        Ok(n)
    }
}

/// A reader of `path` from its start: the file itself, or for a single-pass input its spool.
pub(crate) fn open(path: &Path) -> Result<Box<dyn Read + Send>, TraceError> {
    match spool(path)? {
        Some(spool) => Ok(Box::new(SpoolReader { spool, at: 0 })),
        None => Ok(Box::new(
            File::open(path).map_err(|e| TraceError::io(path, e))?,
        )),
    }
}

/// The whole of `path` as a file to seek in (a Parquet reader needs its footer): the file
/// itself, or for a single-pass input its spool once the input has been read to its end.
pub(crate) fn whole_file(path: &Path) -> Result<File, TraceError> {
    let Some(spool) = spool(path)? else {
        return File::open(path).map_err(|e| TraceError::io(path, e));
    };
    let mut reader = SpoolReader {
        spool: spool.clone(),
        at: 0,
    };
    // Read to the end: the bytes already spooled are skipped, the rest is spooled.
    let held = lock(&spool).written;
    reader.at = held;
    io::copy(&mut reader, &mut io::sink()).map_err(|e| TraceError::io(path, e))?;
    let file = lock(&spool)
        .file
        .try_clone()
        .map_err(|e| TraceError::io(path, e))?;
    Ok(file)
}
