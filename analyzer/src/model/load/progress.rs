//! A progress line for a long read, rewritten in place on standard error: shown only once it is
//! switched on ([`show`]: `analyzer check` on a terminal, without `--quiet`) and once a file has
//! taken more than a second to read, so short reads and pipes stay silent.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static SHOWN: AtomicBool = AtomicBool::new(false);

/// How long a read runs before its line appears, and how often it is rewritten.
const EVERY: Duration = Duration::from_secs(1);

/// Switches progress lines on for this process.
pub fn show() {
    SHOWN.store(true, Ordering::Relaxed);
}

/// The progress of one file's read.
pub(crate) struct Meter {
    name: String,
    total: Option<u64>,
    rows: u64,
    started: Instant,
    last: Instant,
    drawn: bool,
}

impl Meter {
    /// A read of `path`, of `total` rows when that is known up front (Parquet).
    pub(crate) fn new(path: &Path, total: Option<u64>) -> Meter {
        let now = Instant::now();
        Meter {
            name: path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            total,
            rows: 0,
            started: now,
            last: now,
            drawn: false,
        }
    }

    /// `rows` more were read.
    pub(crate) fn add(&mut self, rows: u64) {
        self.rows += rows;
        if !SHOWN.load(Ordering::Relaxed)
            || self.started.elapsed() < EVERY
            || self.last.elapsed() < EVERY
        {
            return;
        }
        self.last = Instant::now();
        self.drawn = true;
        eprint!("\r{}   ", self.line());
        let _ = std::io::stderr().flush();
    }

    fn line(&self) -> String {
        let read = self.started.elapsed().as_secs_f64();
        match self.total.filter(|t| *t > 0) {
            Some(total) => {
                let part = self.rows as f64 / total as f64;
                let left = read * (1.0 - part) / part.max(f64::MIN_POSITIVE);
                format!(
                    "analyzer: reading {}: {:.0}% ({} of {} rows), about {:.0} s left",
                    self.name,
                    part * 100.0,
                    self.rows,
                    total,
                    left
                )
            }
            None => format!("analyzer: reading {}: {} rows", self.name, self.rows),
        }
    }
}

impl Drop for Meter {
    /// A line that was drawn ends with its last figures and a newline.
    fn drop(&mut self) {
        if self.drawn {
            eprintln!("\r{}   ", self.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_how_far_and_how_long_is_left() {
        let mut m = Meter::new(Path::new("/tmp/run.parquet"), Some(1000));
        m.rows = 250;
        let line = m.line();
        assert!(line.starts_with("analyzer: reading run.parquet: 25% (250 of 1000 rows), about "));
        assert!(line.ends_with(" s left"), "{line}");
        let mut stream = Meter::new(Path::new("t.jsonl"), None);
        stream.add(7);
        assert_eq!(stream.line(), "analyzer: reading t.jsonl: 7 rows");
        assert!(!stream.drawn, "nothing drawn unless switched on and slow");
    }
}
