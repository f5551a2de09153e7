//! Page checksums: the Parquet reader verifies each page's CRC32 where the file has one (the
//! `parquet` crate's `crc` feature; pyarrow, Spark and others write them). A mismatch stops the
//! batch reader with a bare "Page CRC checksum mismatch"; [`locate`] then reads the file page by
//! page to name the column and the row group, so the error says where the file is corrupt.

use std::fs::File;

use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;

use crate::TraceError;

/// What the `parquet` crate says when a page's checksum does not match its bytes.
const MISMATCH: &str = "CRC checksum mismatch";

/// Whether the batch reader stopped on a page checksum mismatch.
pub(crate) fn is_mismatch(e: &arrow_schema::ArrowError) -> bool {
    e.to_string().contains(MISMATCH)
}

/// The error for a checksum mismatch in `file`, naming the first column and row group whose
/// pages do not verify (a plain [`TraceError::PageChecksum`] when they cannot be told).
pub(crate) fn locate(file: &File) -> TraceError {
    let unknown = || TraceError::PageChecksum("(page not located)".into());
    let Ok(file) = file.try_clone() else {
        return unknown();
    };
    let Ok(reader) = SerializedFileReader::new(file) else {
        return unknown();
    };
    for g in 0..reader.num_row_groups() {
        let Ok(group) = reader.get_row_group(g) else {
            continue;
        };
        for c in 0..group.num_columns() {
            let column = group.metadata().column(c).column_path().string();
            let Ok(mut pages) = group.get_column_page_reader(c) else {
                continue;
            };
            loop {
                match pages.get_next_page() {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) if e.to_string().contains(MISMATCH) => {
                        return TraceError::PageChecksum(format!(
                            "in column `{column}`, row group {g}"
                        ));
                    }
                    Err(_) => break,
                }
            }
        }
    }
    unknown()
}
