//! A partitioned directory read as one trace: every file opened and checked first, then read in
//! turn, row groups numbered across the files.

use std::path::Path;

use crate::input::{Encoding, Tally};
use crate::schema::COLUMNS;
use crate::TraceError;

use super::normalise::{requested_types, skipped};
use super::options::{FileInfo, ReadOptions};
use super::source::{in_file, Batches, Many, Source};
use super::TraceFile;

impl TraceFile {
    /// A partitioned directory (see [`crate::partitioned`]): every file is opened and checked
    /// here, then read in turn; the batches have one type per column whatever each file's.
    pub(super) fn open_dir(dir: &Path, options: &ReadOptions) -> Result<Self, TraceError> {
        let parts = crate::partitioned::parts(dir)?;
        let mut info = FileInfo {
            path: dir.to_path_buf(),
            version_declared: true,
            encoding: Encoding::Parquet,
            ..FileInfo::default()
        };
        // Row groups are numbered across the files in path order.
        let mut queue = std::collections::VecDeque::new();
        for part in parts {
            let file = Self::open_parquet(&part.path, &ReadOptions::default(), &part.fills)
                .map_err(|e| in_file(&part.path, e))?;
            let f = file.info();
            info.version_declared &= f.version_declared;
            info.run_json = info.run_json.take().or_else(|| f.run_json.clone());
            info.seq_from_clocks |= f.seq_from_clocks;
            info.rows += f.rows;
            for c in &f.extra_columns {
                if !info.extra_columns.contains(c) {
                    info.extra_columns.push(c.clone());
                }
            }
            let first = info.row_groups;
            info.row_groups += f.row_groups;
            let groups = options.row_groups.as_ref().map(|wanted| {
                wanted
                    .iter()
                    .filter(|&&g| g >= first && g < info.row_groups)
                    .map(|g| g - first)
                    .collect::<Vec<usize>>()
            });
            if groups.as_ref().is_none_or(|g| !g.is_empty()) {
                queue.push_back((part, groups));
            }
        }
        Ok(TraceFile {
            tally: Tally::known(info.rows, info.extra_columns.clone()),
            info,
            reader: Source::Many(Many {
                parts: queue,
                options: ReadOptions {
                    row_groups: None,
                    ..options.clone()
                },
                open: |path, options, fills| {
                    let file = TraceFile::open_parquet(path, options, fills)?;
                    Ok(Box::new(file.batches()) as Batches)
                },
                current: None,
            }),
            order: (0..COLUMNS.len()).collect(),
            types: requested_types(options),
            fills: Vec::new(),
            skipped: skipped(options),
        })
    }
}
