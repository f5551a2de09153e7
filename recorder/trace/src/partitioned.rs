//! A partitioned directory as one trace: every `*.parquet` file under it, at any depth (for
//! example hive-style `run_id=R/scenario=S/part-0.parquet`), read in path order. A path part
//! `column=value` naming a contract column fills that column for the files below it when their
//! rows lack it; a column the rows carry keeps the rows' values. Files and directories whose names
//! start with `.` or `_` (`_SUCCESS`, `_temporary`, `.crc` files) are skipped, as Spark and Hive
//! skip them.
//!
//! The walk follows symbolic links, but reaches each directory (by device and inode) only once,
//! so links that loop back end nowhere; it never opens anything but a regular file, and a FIFO,
//! socket or device file met on the way is refused with one line (opening a FIFO would wait for
//! a writer).

use std::path::{Path, PathBuf};

use crate::schema::COLUMNS;
use crate::TraceError;

/// One file of a partitioned directory and the column values its path gives.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// The Parquet file's path, below the directory given.
    pub path: PathBuf,
    /// `(column, value)` from the path's `column=value` parts, innermost last.
    pub fills: Vec<(&'static str, String)>,
}

/// The Parquet files under `dir`, sorted by path, with their partition values. A directory
/// without any is [`TraceError::NoParquetFiles`].
pub(crate) fn parts(dir: &Path) -> Result<Vec<Part>, TraceError> {
    let mut files = Vec::new();
    let mut seen = Seen::default();
    let root = std::fs::metadata(dir).map_err(|e| TraceError::io(dir, e))?;
    seen.first_visit(&root);
    walk(dir, &mut files, &mut seen)?;
    files.sort();
    if files.is_empty() {
        return Err(TraceError::NoParquetFiles(dir.to_path_buf()));
    }
    Ok(files
        .into_iter()
        .map(|path| {
            let fills = partition_values(dir, &path);
            Part { path, fills }
        })
        .collect())
}

/// The directories reached so far, by device and inode.
#[derive(Default)]
struct Seen(std::collections::HashSet<(u64, u64)>);

impl Seen {
    /// Whether the directory `meta` describes is reached for the first time.
    fn first_visit(&mut self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.0.insert((meta.dev(), meta.ino()))
    }
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>, seen: &mut Seen) -> Result<(), TraceError> {
    use std::os::unix::fs::FileTypeExt;
    let entries = std::fs::read_dir(dir).map_err(|e| TraceError::io(dir, e))?;
    let mut entries = entries
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TraceError::io(dir, e))?;
    // In name order, so which of two links to one directory is followed does not vary.
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        // Follows symbolic links, as a reader of the directory would; a dangling link is skipped.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let t = meta.file_type();
        if t.is_dir() {
            if seen.first_visit(&meta) {
                walk(&path, files, seen)?;
            }
        } else if t.is_fifo() || t.is_socket() || t.is_block_device() || t.is_char_device() {
            let what = if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else {
                "a device file"
            };
            return Err(TraceError::SpecialFile { path, what });
        } else if name.ends_with(".parquet") {
            files.push(path);
        }
    }
    Ok(())
}

/// The `column=value` parts of `file`'s path below `dir` that name contract columns; a value is
/// percent-decoded (Hive writes `%3A` for `:`).
fn partition_values(dir: &Path, file: &Path) -> Vec<(&'static str, String)> {
    let Ok(relative) = file.strip_prefix(dir) else {
        return Vec::new();
    };
    let mut fills: Vec<(&'static str, String)> = Vec::new();
    let parents = relative.parent().into_iter().flat_map(|p| p.components());
    for part in parents {
        let part = part.as_os_str().to_string_lossy();
        let Some((key, value)) = part.split_once('=') else {
            continue;
        };
        if let Some(column) = COLUMNS.iter().find(|c| c.name == key) {
            fills.retain(|(c, _)| *c != column.name);
            fills.push((column.name, percent_decoded(value)));
        }
    }
    fills
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_parts_name_columns_and_are_decoded() {
        let dir = Path::new("/data/trace");
        let file = dir.join("run_id=r%3A1/x=y/scenario=lost-ack/part-0.parquet");
        assert_eq!(
            partition_values(dir, &file),
            [
                ("run_id", "r:1".to_string()),
                ("scenario", "lost-ack".to_string())
            ]
        );
        assert_eq!(percent_decoded("50%"), "50%");
        assert_eq!(percent_decoded("a%2"), "a%2");
    }
}
