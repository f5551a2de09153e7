//! The trace's place on disk, guarded so that nothing overwrites what exists until it is complete:
//!
//! - [`check`]: `--out` is looked at before the run (a directory, a device, a place the recorder
//!   cannot write in: refused at once);
//! - [`OutLock`]: one recorder per `--out`, through `<out>.lock` held with `flock` (the kernel
//!   lets go of it when its holder dies, so a stale lock is simply taken over); opened without
//!   following a symlink, and refused when it is not a plain file of its own (a symlink or a hard
//!   link planted there would have the recorder overwrite what it leads to);
//! - [`persist_new`]: a file moved to the first free name of a series (`run.interrupted.parquet`,
//!   `run.interrupted-2.parquet`, ...), never over an existing one;
//! - [`OutputError::NoSpace`]: a full disk, named, with where the recorded rows were kept
//!   ([`WatchedFile`] keeps the operating system's error, which the Parquet writer's own error
//!   may carry only as text).

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the trace cannot be written where asked, or could not be finished.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// `--out` names a directory.
    #[error("--out {0} is a directory; name the trace file (e.g. {0}/run.parquet)")]
    IsDirectory(PathBuf),
    /// `--out` names something that is not a regular file (a device, a FIFO, a socket).
    #[error("--out {0} is not a regular file; name the trace file")]
    NotAFile(PathBuf),
    /// The recorder cannot create files where `--out` is.
    #[error("--out {out}: cannot write in {dir}: {source}")]
    Unwritable {
        /// The `--out` given.
        out: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// `<out>.lock` is a symlink, or not a regular file with one name: the lock is not taken
    /// through it.
    #[error("{}: is not a plain lock file (a symlink, a link or not a file); remove it", .0.display())]
    LockPlanted(PathBuf),
    /// Another recorder holds the lock on `--out`.
    #[error(
        "another recorder (pid {pid}) is writing {out}; wait for it to end or choose another --out"
    )]
    Busy {
        /// The `--out` given.
        out: PathBuf,
        /// The running recorder's pid, as its lock file says.
        pid: String,
    },
    /// The disk filled up while the trace was written.
    #[error(
        "no space left on {disk} while writing {path}; what was recorded is kept in {kept} \
         (free some space and run the recorder again with the same --out to join it)"
    )]
    NoSpace {
        /// The file system, as its mount point and device.
        disk: String,
        /// The file being written.
        path: PathBuf,
        /// Where the recorded rows are.
        kept: PathBuf,
    },
    /// Anything else that went wrong writing the trace.
    #[error("{0:#}")]
    Write(anyhow::Error),
}

impl From<anyhow::Error> for OutputError {
    fn from(e: anyhow::Error) -> Self {
        OutputError::Write(e)
    }
}

impl OutputError {
    /// True for a command line the recorder refuses before it starts (`--out` unusable or
    /// in use), false for a write that failed.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, OutputError::NoSpace { .. } | OutputError::Write(_))
    }
}

/// Checks that `out` can be the trace file: not a directory nor a device, in a directory the
/// recorder can create files in (created if missing).
pub fn check(out: &Path) -> Result<(), OutputError> {
    if let Ok(meta) = std::fs::metadata(out) {
        if meta.is_dir() {
            return Err(OutputError::IsDirectory(out.to_path_buf()));
        }
        if !meta.is_file() {
            return Err(OutputError::NotAFile(out.to_path_buf()));
        }
    }
    let dir = directory(out);
    let unwritable = |source| OutputError::Unwritable {
        out: out.to_path_buf(),
        dir: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(unwritable)?;
    tempfile::Builder::new()
        .prefix(".outbox-trace-check")
        .tempfile_in(dir)
        .map_err(unwritable)?;
    Ok(())
}

/// The directory `out` is in (`.` for a bare file name).
pub fn directory(out: &Path) -> &Path {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The lock on one `--out`, held for the whole run; removed when dropped.
#[derive(Debug)]
pub struct OutLock {
    path: PathBuf,
    /// Holds the `flock` while open.
    _file: File,
}

impl OutLock {
    /// Takes the lock on `out` (`<out>.lock`), or says which recorder holds it.
    pub fn take(out: &Path) -> Result<OutLock, OutputError> {
        let path = sibling(out, ".lock");
        let io = |source| OutputError::Unwritable {
            out: out.to_path_buf(),
            dir: directory(out).to_path_buf(),
            source,
        };
        loop {
            let opened = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&path);
            let mut file = match opened {
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(OutputError::LockPlanted(path))
                }
                other => other.map_err(io)?,
            };
            let plain = file.metadata().map_err(io)?;
            if !plain.is_file() || plain.nlink() > 1 {
                return Err(OutputError::LockPlanted(path));
            }
            // SAFETY: flock on a descriptor we own; it only takes or refuses an advisory lock.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(io(e));
                }
                return Err(OutputError::Busy {
                    out: out.to_path_buf(),
                    pid: holder(&mut file),
                });
            }
            // The holder before us may have removed the file between our open and our lock:
            // then the lock is on a file nobody else will open, and we try again.
            let same = std::fs::metadata(&path).ok().zip(file.metadata().ok());
            if !same.is_some_and(|(a, b)| a.dev() == b.dev() && a.ino() == b.ino()) {
                continue;
            }
            file.set_len(0).map_err(io)?;
            writeln!(file, "{}", std::process::id()).map_err(io)?;
            return Ok(OutLock { path, _file: file });
        }
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        // Removed while still locked, so whoever opens the path next makes a new lock file.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The pid written in a lock file by its holder (who may be writing it right now).
fn holder(file: &mut File) -> String {
    let started = Instant::now();
    loop {
        let mut text = String::new();
        let _ = file.read_to_string(&mut text);
        let pid = text.trim();
        if !pid.is_empty() || started.elapsed() > Duration::from_millis(500) {
            return if pid.is_empty() {
                "unknown".to_string()
            } else {
                pid.to_string()
            };
        }
        std::thread::sleep(Duration::from_millis(20));
        let _ = std::io::Seek::rewind(file);
    }
}

/// `out` with `suffix` added to its file name (`run.parquet` -> `run.parquet.lock`).
pub fn sibling(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    out.with_file_name(name)
}

/// The `n`-th name of the series `<out-stem>.<tag>.parquet`, `<out-stem>.<tag>-2.parquet`, ...
pub fn numbered(out: &Path, tag: &str, n: u32) -> PathBuf {
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    match n {
        1 => out.with_file_name(format!("{stem}.{tag}.parquet")),
        n => out.with_file_name(format!("{stem}.{tag}-{n}.parquet")),
    }
}

/// Moves `file` to the first name of the series `tag` of `out` that does not exist yet (a hard
/// link, which fails rather than replace a file that appeared meanwhile); returns that name.
pub fn persist_new(file: &Path, out: &Path, tag: &str) -> std::io::Result<PathBuf> {
    for n in 1.. {
        let target = numbered(out, tag, n);
        match std::fs::hard_link(file, &target) {
            Ok(()) => {
                std::fs::remove_file(file)?;
                return Ok(target);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    unreachable!("the series of names is endless")
}

/// A file being written that remembers the operating system's error of a failed write.
#[derive(Debug)]
pub struct WatchedFile {
    file: File,
    failed: std::sync::Arc<std::sync::atomic::AtomicI32>,
}

/// What a [`WatchedFile`] saw, kept after the writer that owned the file is gone.
#[derive(Debug, Clone)]
pub struct Watch(std::sync::Arc<std::sync::atomic::AtomicI32>);

impl WatchedFile {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> std::io::Result<(WatchedFile, Watch)> {
        let failed = std::sync::Arc::default();
        let file = File::create(path)?;
        let watch = Watch(std::sync::Arc::clone(&failed));
        Ok((WatchedFile { file, failed }, watch))
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }

    fn note<T>(&self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            if let Some(code) = e.raw_os_error() {
                self.failed
                    .store(code, std::sync::atomic::Ordering::Relaxed);
            }
        }
        result
    }
}

impl std::io::Write for WatchedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.file.write(buf);
        self.note(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.file.flush();
        self.note(result)
    }
}

impl Watch {
    /// `e` with the operating system's error the file saw, if any, as its cause.
    pub fn explain(&self, e: anyhow::Error) -> anyhow::Error {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            0 => e,
            code => anyhow::Error::new(std::io::Error::from_raw_os_error(code))
                .context(format!("{e:#}")),
        }
    }
}

/// True if `e` was caused by a full disk (or an exhausted quota).
pub fn is_no_space(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .is_some_and(|code| code == libc::ENOSPC || code == libc::EDQUOT)
    })
}

/// The file system holding `path`, as `<mount point> (<device>)` from `/proc/self/mounts`, or the
/// directory itself where that cannot be told.
pub fn disk_of(path: &Path) -> String {
    let mut existing = path;
    while !existing.exists() {
        match existing.parent() {
            Some(p) if !p.as_os_str().is_empty() => existing = p,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    let Ok(full) = existing.canonicalize() else {
        return path.display().to_string();
    };
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let device = fields.next()?;
            let point = unescape(fields.next()?);
            full.starts_with(&point)
                .then_some((point, device.to_string()))
        })
        .max_by_key(|(point, _)| point.components().count())
        .map(|(point, device)| format!("{} ({device})", point.display()))
        .unwrap_or_else(|| full.display().to_string())
}

/// `/proc/self/mounts` writes a space in a path as `\040` (and tab, newline, backslash alike).
fn unescape(field: &str) -> PathBuf {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let code = rest
            .get(i + 1..i + 4)
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    PathBuf::from(out)
}

/// Makes a rename or removal in `dir` durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_out_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.parquet");
        let lock = OutLock::take(&out).unwrap();
        match OutLock::take(&out) {
            Err(OutputError::Busy { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
            other => panic!("refused: {other:?}"),
        }
        drop(lock);
        assert!(!sibling(&out, ".lock").exists());
        // A lock file left by a dead recorder holds no lock: it is taken over.
        std::fs::write(sibling(&out, ".lock"), "999999\n").unwrap();
        let taken = OutLock::take(&out).unwrap();
        let text = std::fs::read_to_string(sibling(&out, ".lock")).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        drop(taken);
    }

    #[test]
    fn a_lock_is_never_taken_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.parquet");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let lock = sibling(&out, ".lock");
        std::os::unix::fs::symlink(&victim, &lock).unwrap();
        assert!(matches!(
            OutLock::take(&out),
            Err(e @ OutputError::LockPlanted(_)) if e.is_refusal()
        ));
        std::fs::remove_file(&lock).unwrap();
        std::fs::hard_link(&victim, &lock).unwrap();
        assert!(matches!(
            OutLock::take(&out),
            Err(OutputError::LockPlanted(_))
        ));
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_series_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.parquet");
        let mut names = Vec::new();
        for i in 0..3 {
            let file = dir.path().join("tmp");
            std::fs::write(&file, format!("{i}")).unwrap();
            names.push(persist_new(&file, &out, "interrupted").unwrap());
            assert!(!file.exists());
        }
        let expect = [
            "run.interrupted.parquet",
            "run.interrupted-2.parquet",
            "run.interrupted-3.parquet",
        ];
        for (i, (name, expected)) in names.iter().zip(expect).enumerate() {
            assert_eq!(name, &dir.path().join(expected));
            assert_eq!(std::fs::read_to_string(name).unwrap(), i.to_string());
        }
    }

    #[test]
    fn out_is_checked_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            check(dir.path()),
            Err(OutputError::IsDirectory(_))
        ));
        assert!(matches!(
            check(Path::new("/dev/null")),
            Err(OutputError::NotAFile(_))
        ));
        assert!(check(&dir.path().join("new/dir/run.parquet")).is_ok());
        assert!(matches!(
            check(Path::new("/proc/outbox/run.parquet")),
            Err(OutputError::Unwritable { .. })
        ));
    }

    #[test]
    fn the_disk_is_named_by_its_mount_point() {
        assert!(disk_of(Path::new("/proc/self/nothing")).starts_with("/proc (proc)"));
        assert_eq!(unescape(r"/mnt/my\040disk"), PathBuf::from("/mnt/my disk"));
    }
}
