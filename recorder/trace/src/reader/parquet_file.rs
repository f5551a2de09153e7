//! A Parquet file opened and checked against the contract: its metadata, its columns' presence
//! and types, and the projection and dictionary hint that read it as the options ask.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::input::{Encoding, Tally};
use crate::schema::{
    ColumnType, COLUMNS, META_RUN, META_SCHEMA_VERSION, META_SEQ_SOURCE, SCHEMA_VERSION,
    SEQ_FROM_SPAN_CLOCKS,
};
use crate::TraceError;

use super::normalise::{expected_name, requested_types, skipped};
use super::options::{dictionary_type, FileInfo, ReadOptions, BATCH_ROWS};
use super::source::Source;
use super::TraceFile;

impl TraceFile {
    pub(super) fn open_parquet(
        path: &Path,
        options: &ReadOptions,
        partition: &[(&'static str, String)],
    ) -> Result<Self, TraceError> {
        let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
        Self::open_parquet_file(file, path, options, partition)
    }

    /// A Parquet file already open (`path` names it in messages).
    pub(super) fn open_parquet_file(
        file: File,
        path: &Path,
        options: &ReadOptions,
        partition: &[(&'static str, String)],
    ) -> Result<Self, TraceError> {
        let metadata = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())?;
        let declared = Declared::of(&metadata)?;
        let skipped = skipped(options);
        let file_schema = metadata.schema().clone();
        let columns = Columns::of(&file_schema, &skipped, partition)?;
        let extra_columns = extra_columns(&file_schema);
        let (sorted, order) = columns.landing(&skipped);
        let row_groups = metadata.metadata().num_row_groups();
        let (metadata, types) = columns.types(metadata, options, &skipped);
        // A second handle, read only to tell which page a checksum failed in.
        let pages = file.try_clone().ok();
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, metadata);
        let mask = ProjectionMask::roots(builder.parquet_schema(), sorted);
        let mut builder = builder.with_projection(mask).with_batch_size(BATCH_ROWS);
        if let Some(groups) = &options.row_groups {
            builder = builder.with_row_groups(groups.clone());
        }
        let reader = builder.build()?;
        Ok(TraceFile {
            tally: Tally::known(declared.rows, extra_columns.clone()),
            info: FileInfo {
                path: path.to_path_buf(),
                version_declared: declared.version.is_some(),
                run_json: declared.run_json,
                rows: declared.rows,
                extra_columns,
                row_groups,
                encoding: Encoding::Parquet,
                seq_from_clocks: declared.seq_from_clocks,
            },
            reader: Source::Parquet(reader, pages),
            order,
            types,
            fills: columns.filled.into_iter().map(|(_, v)| v).collect(),
            skipped,
        })
    }
}

/// What a file's footer says of it: its key-value metadata and its rows.
struct Declared {
    /// The schema version it declares, if any.
    version: Option<String>,
    /// The run configuration, as JSON.
    run_json: Option<String>,
    /// Whether its `seq` comes from span times on separate clocks.
    seq_from_clocks: bool,
    /// Its rows (more than none).
    rows: u64,
}

impl Declared {
    /// The footer of `metadata`'s file; an error for another schema version, or no rows.
    fn of(metadata: &ArrowReaderMetadata) -> Result<Self, TraceError> {
        let meta = metadata.metadata().file_metadata();
        let kv = |key: &str| {
            meta.key_value_metadata()
                .and_then(|kvs| kvs.iter().find(|kv| kv.key == key))
                .and_then(|kv| kv.value.clone())
        };
        let version = kv(META_SCHEMA_VERSION);
        if let Some(v) = &version {
            if v.trim() != SCHEMA_VERSION {
                return Err(TraceError::SchemaVersion(v.clone()));
            }
        }
        let rows = u64::try_from(meta.num_rows()).unwrap_or(0);
        if rows == 0 {
            return Err(TraceError::Empty);
        }
        Ok(Declared {
            version,
            run_json: kv(META_RUN),
            seq_from_clocks: kv(META_SEQ_SOURCE).as_deref().map(str::trim)
                == Some(SEQ_FROM_SPAN_CLOCKS),
            rows,
        })
    }
}

/// Where the canonical columns not skipped come from: the file's columns, or fills.
struct Columns {
    /// The file's (root) columns read, in canonical order.
    roots: Vec<usize>,
    /// Columns the file lacks, filled from its partition path or (an optional column) with
    /// nulls: `(canonical index, value)`.
    filled: Vec<(usize, Option<String>)>,
}

impl Columns {
    /// Each canonical column found in `file_schema` (of the right type), else in `partition`,
    /// else null if optional; an error for a required column found nowhere.
    fn of(
        file_schema: &Schema,
        skipped: &[bool],
        partition: &[(&'static str, String)],
    ) -> Result<Self, TraceError> {
        let mut roots = Vec::with_capacity(COLUMNS.len());
        let mut filled: Vec<(usize, Option<String>)> = Vec::new();
        for (i, column) in COLUMNS.iter().enumerate() {
            let Some((index, field)) = file_schema.column_with_name(column.name) else {
                // A partition path's value, else null for a column a file may lack.
                let value = match partition.iter().find(|(c, _)| *c == column.name) {
                    Some((_, value)) => Some(value.clone()),
                    None if column.optional => None,
                    None => return Err(TraceError::MissingColumn(column.name)),
                };
                if !skipped[i] {
                    filled.push((i, value));
                }
                continue;
            };
            check_type(column.name, column.data_type, field.data_type())?;
            if !skipped[i] {
                roots.push(index);
            }
        }
        Ok(Columns { roots, filled })
    }

    /// The file's columns to project, in file order, and where each canonical column lands in
    /// a batch: projected batches keep file order, fills come after them (a skipped column
    /// lands nowhere: its entry is never used).
    fn landing(&self, skipped: &[bool]) -> (Vec<usize>, Vec<usize>) {
        let mut sorted = self.roots.clone();
        sorted.sort_unstable();
        let mut present = self
            .roots
            .iter()
            .map(|r| sorted.binary_search(r).expect("present"));
        let order: Vec<usize> = (0..COLUMNS.len())
            .map(|i| match self.filled.iter().position(|(c, _)| *c == i) {
                Some(k) => sorted.len() + k,
                None if skipped[i] => 0,
                None => present.next().unwrap_or_default(),
            })
            .collect();
        (sorted, order)
    }

    /// The metadata to read `metadata`'s file with, and the type batches hand out for each
    /// canonical column: the string columns `options` asks as dictionaries read as such when
    /// the file allows the hint.
    fn types(
        &self,
        metadata: ArrowReaderMetadata,
        options: &ReadOptions,
        skipped: &[bool],
    ) -> (ArrowReaderMetadata, Vec<DataType>) {
        // Canonical positions of the columns read from the file, for the dictionary hint.
        let read: Vec<usize> = (0..COLUMNS.len())
            .filter(|&i| !skipped[i] && !self.filled.iter().any(|(c, _)| *c == i))
            .collect();
        let mut types: Vec<DataType> = COLUMNS
            .iter()
            .zip(requested_types(options))
            .zip(skipped)
            .map(|((c, requested), &skip)| if skip { requested } else { c.data_type.arrow() })
            .collect();
        let dictionary: Vec<usize> = COLUMNS
            .iter()
            .enumerate()
            .filter(|(i, c)| {
                c.data_type == ColumnType::Utf8
                    && options.dictionary.contains(&c.name)
                    && read.contains(i)
            })
            .map(|(i, _)| read.iter().position(|r| *r == i).unwrap_or_default())
            .collect();
        match dictionary_hint(&metadata, &self.roots, &dictionary) {
            Some(hinted) => {
                for &i in &dictionary {
                    types[read[i]] = dictionary_type();
                }
                (hinted, types)
            }
            None => (metadata, types),
        }
    }
}

/// The file's columns that are no canonical column, ignored.
fn extra_columns(file_schema: &Schema) -> Vec<String> {
    file_schema
        .fields()
        .iter()
        .filter(|f| !COLUMNS.iter().any(|c| c.name == f.name()))
        .map(|f| f.name().clone())
        .collect()
}

fn check_type(column: &'static str, want: ColumnType, found: &DataType) -> Result<(), TraceError> {
    let ok = match want {
        ColumnType::Utf8 => is_string(found),
        ColumnType::UInt64 | ColumnType::UInt32 | ColumnType::Int64 | ColumnType::Int32 => {
            found.is_integer()
        }
    };
    if ok {
        Ok(())
    } else {
        Err(TraceError::WrongType {
            column,
            found: found.to_string(),
            expected: expected_name(want),
        })
    }
}

fn is_string(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string(value),
        _ => false,
    }
}

/// The file's metadata with a schema hint that reads the canonical columns `dictionary` (positions
/// in [`COLUMNS`], found at file columns `roots`) as dictionaries; `None` when the file's columns
/// cannot be read that way (the caller then reads them as they are).
fn dictionary_hint(
    metadata: &ArrowReaderMetadata,
    roots: &[usize],
    dictionary: &[usize],
) -> Option<ArrowReaderMetadata> {
    if dictionary.is_empty() {
        return None;
    }
    // The hint must match the schema Parquet itself implies (not the embedded Arrow one).
    let plain = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let inferred = ArrowReaderMetadata::try_new(metadata.metadata().clone(), plain).ok()?;
    let mut fields: Vec<Field> = inferred
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for &i in dictionary {
        let field = fields.get_mut(*roots.get(i)?)?;
        *field = Field::new(field.name(), dictionary_type(), field.is_nullable());
    }
    let hint = ArrowReaderOptions::new().with_schema(Arc::new(Schema::new(fields)));
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), hint).ok()
}
