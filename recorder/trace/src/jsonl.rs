//! Reading `outbox-trace/1` as JSON Lines: one JSON object per line, one event per object, keys =
//! the contract's column names. An absent key or `null` is null; integers may be JSON numbers or
//! decimal strings; `detail` may be a JSON string holding an object (as DuckDB writes it) or an
//! object. An optional first line `{"outbox_trace": {"schema_version": "1", "run": {...}}}`
//! carries the file metadata (`"seq_source": "span-clocks"` there as in Parquet's metadata). Validation is the Parquet reader's: required columns present and
//! not null, integers in range, kinds the contract lacks kept by name (readers count them).

use std::collections::BTreeSet;
use std::io::BufRead;

use arrow_array::RecordBatch;
use serde_json::Value;

use crate::input::{Chunker, Header, Lines, Tally};
use crate::schema::{ColumnType, COLUMNS, SCHEMA_VERSION};
use crate::{Event, Kind, TraceError};

/// The key of the optional metadata line.
const META_KEY: &str = "outbox_trace";

/// JSON Lines decoded as they stream: a batch of at most [`crate::input::CHUNK_ROWS`] rows at a
/// time, so memory holds one batch (and one line), never the file. The first batch is decoded
/// when the decoder is made, so the metadata line is known then (and a short file's every
/// error); the rows and extra keys are counted into a [`Tally`] as batches are handed out.
pub(crate) struct Decoder<R> {
    lines: Lines<R>,
    chunker: Chunker,
    header: Header,
    tally: Tally,
    /// Whether the next non-blank line is the file's first.
    first: bool,
    /// The batch decoded ahead (the first), not yet handed out.
    ahead: Option<RecordBatch>,
    /// Keys seen that are not columns of the contract.
    extra: BTreeSet<String>,
    /// Set after the last batch or an error: nothing more is read.
    done: bool,
}

impl<R: BufRead> Decoder<R> {
    /// Reads the metadata line, if any, and the first batch of `text`.
    pub(crate) fn new(text: R) -> Result<Self, TraceError> {
        let mut decoder = Decoder {
            lines: Lines::new(text),
            chunker: Chunker::default(),
            header: Header::default(),
            tally: Tally::default(),
            first: true,
            ahead: None,
            extra: BTreeSet::new(),
            done: false,
        };
        decoder.ahead = decoder.decode_batch()?;
        if decoder.ahead.is_none() {
            return Err(TraceError::Empty);
        }
        Ok(decoder)
    }

    /// What the file said about itself (its metadata line).
    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// The rows and extra keys, counted as batches are handed out.
    pub(crate) fn tally(&self) -> Tally {
        self.tally.clone()
    }

    /// The next batch; `None` after the last.
    fn decode_batch(&mut self) -> Result<Option<RecordBatch>, TraceError> {
        if self.done {
            return Ok(None);
        }
        let batch = loop {
            let Some((line, text)) = self.lines.next_line()? else {
                self.done = true;
                break self.chunker.flush()?;
            };
            let at = |reason: String| TraceError::Line { line, reason };
            let mut fields: Fields =
                serde_json::from_str(text).map_err(|e| at(format!("not a JSON object: {e}")))?;
            if std::mem::take(&mut self.first) && fields.keys == 1 {
                if let Some(meta) = &fields.meta {
                    metadata(meta, &mut self.header).map_err(at)?;
                    continue;
                }
            }
            if fields.meta.is_some() {
                fields.extra.push(META_KEY.into());
            }
            for key in fields.extra.drain(..) {
                if !self.extra.contains(&key) {
                    self.extra.insert(key);
                }
            }
            let (event, unknown) = event(&mut fields.cells).map_err(at)?;
            if let Some(batch) = self.chunker.push(event, unknown)? {
                break Some(batch);
            }
        };
        if let Some(b) = &batch {
            self.tally.add(b.num_rows() as u64, &self.extra);
        }
        if self.done {
            self.tally.complete();
        }
        Ok(batch)
    }
}

impl<R: BufRead> Iterator for Decoder<R> {
    type Item = Result<RecordBatch, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(batch) = self.ahead.take() {
            return Some(Ok(batch));
        }
        match self.decode_batch() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                // After an error nothing more is read.
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn metadata(meta: &Value, out: &mut Header) -> Result<(), String> {
    let meta = meta.as_object().ok_or("`outbox_trace` must be an object")?;
    if let Some(v) = meta.get("schema_version") {
        let v = match v {
            Value::String(s) => s.trim().to_string(),
            other => other.to_string(),
        };
        if v != SCHEMA_VERSION {
            return Err(TraceError::SchemaVersion(v).to_string());
        }
        out.version_declared = true;
    }
    out.seq_from_clocks =
        meta.get("seq_source").and_then(Value::as_str) == Some(crate::schema::SEQ_FROM_SPAN_CLOCKS);
    out.run_json = match meta.get("run") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    Ok(())
}

/// One line's object as read: the contract's columns by their place in [`COLUMNS`], the
/// metadata key, and the names of other keys (their values are skipped, never held).
struct Fields {
    cells: Vec<Option<Value>>,
    meta: Option<Value>,
    extra: Vec<String>,
    /// Keys in the object.
    keys: usize,
}

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> serde::de::Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut out = Fields {
            cells: vec![None; COLUMNS.len()],
            meta: None,
            extra: Vec::new(),
            keys: 0,
        };
        while let Some(key) = map.next_key::<Key<'de>>()? {
            out.keys += 1;
            let name: &str = &key.0;
            if let Some(i) = COLUMNS.iter().position(|c| c.name == name) {
                out.cells[i] = Some(map.next_value()?);
            } else if name == META_KEY {
                out.meta = Some(map.next_value()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
                out.extra.push(name.to_string());
            }
        }
        Ok(out)
    }
}

/// A key, borrowed from the line where it has no escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// The cell of `column`, taken out of `cells`.
fn take(cells: &mut [Option<Value>], column: &'static str) -> Option<Value> {
    COLUMNS
        .iter()
        .position(|c| c.name == column)
        .and_then(|i| cells[i].take())
}

/// One event from one line's cells; the second value is the kind's name when the contract does
/// not define it.
fn event(o: &mut [Option<Value>]) -> Result<(Event, Option<String>), String> {
    let kind_name = required_string(o, "kind")?;
    let (kind, unknown) = match kind_name.parse::<Kind>() {
        Ok(k) => (k, None),
        Err(_) => (Kind::RunStart, Some(kind_name)),
    };
    let mut e = Event::new(kind);
    e.run_id = required_string(o, "run_id")?;
    e.scenario = required_string(o, "scenario")?;
    e.backend = required_string(o, "backend")?;
    e.actor = required_string(o, "actor")?;
    e.seq = required(o, "seq", uint(u64::MAX as i128))?;
    e.ts_ns = required(o, "ts_ns", int(i64::MIN as i128, i64::MAX as i128))?;
    e.incarnation = required(o, "incarnation", uint(u32::MAX as i128))?;
    e.task_id = string(o, "task_id")?;
    e.event_id = string(o, "event_id")?;
    e.aggregate_id = string(o, "aggregate_id")?;
    e.aggregate_seq = optional(o, "aggregate_seq", uint(u64::MAX as i128))?;
    e.attempt = optional(o, "attempt", uint(u32::MAX as i128))?;
    e.broker_seq = optional(o, "broker_seq", uint(u64::MAX as i128))?;
    e.partition = optional(o, "partition", int(i32::MIN as i128, i32::MAX as i128))?;
    let i64s = || int(i64::MIN as i128, i64::MAX as i128);
    e.store_rev = optional(o, "store_rev", i64s())?;
    e.amount = optional(o, "amount", i64s())?;
    e.counter = optional(o, "counter", i64s())?;
    e.counter_key = string(o, "counter_key")?;
    e.detail = match take(o, "detail") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err("column `detail` must be a JSON object or a string".into()),
    };
    Ok((e, unknown))
}

fn null_in(column: &'static str) -> String {
    TraceError::NullInRequired { column, nulls: 1 }.to_string()
}

fn string(o: &mut [Option<Value>], column: &'static str) -> Result<Option<String>, String> {
    match take(o, column) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("column `{column}` must be a string")),
    }
}

fn required_string(o: &mut [Option<Value>], column: &'static str) -> Result<String, String> {
    string(o, column)?.ok_or_else(|| null_in(column))
}

/// A range check from an integer to a column's type, and the conversion (`None`: out of range).
type Fit<T> = (i128, i128, fn(i128) -> Option<T>);

fn uint<T: TryFrom<i128>>(max: i128) -> Fit<T> {
    (0, max, |v| T::try_from(v).ok())
}

fn int<T: TryFrom<i128>>(min: i128, max: i128) -> Fit<T> {
    (min, max, |v| T::try_from(v).ok())
}

fn optional<T>(
    o: &mut [Option<Value>],
    column: &'static str,
    fit: Fit<T>,
) -> Result<Option<T>, String> {
    let value = match take(o, column) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let expected = COLUMNS
        .iter()
        .find(|c| c.name == column)
        .map(|c| match c.data_type {
            ColumnType::UInt64 => "UInt64",
            ColumnType::UInt32 => "UInt32",
            ColumnType::Int64 => "Int64",
            ColumnType::Int32 => "Int32",
            ColumnType::Utf8 => "Utf8",
        })
        .unwrap_or("an integer");
    let parsed: Option<i128> = match &value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        Value::String(s) => s.trim().parse::<i128>().ok(),
        _ => None,
    };
    let Some(v) = parsed else {
        return Err(format!(
            "column `{column}` must be an integer (a JSON number or a decimal string), found {value}"
        ));
    };
    let (min, max, convert) = fit;
    match convert(v) {
        Some(v_) if (min..=max).contains(&v) => Ok(Some(v_)),
        _ => Err(format!(
            "column `{column}` holds a value that does not fit {expected}: {v}"
        )),
    }
}

fn required<T>(o: &mut [Option<Value>], column: &'static str, fit: Fit<T>) -> Result<T, String> {
    optional(o, column, fit)?.ok_or_else(|| null_in(column))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::batch_events;

    fn events(text: &str) -> Vec<Event> {
        let decoder = Decoder::new(text.as_bytes()).unwrap();
        let mut unknown = std::collections::BTreeMap::new();
        decoder
            .flat_map(|b| batch_events(&b.unwrap(), &mut unknown))
            .collect()
    }

    #[test]
    fn counter_key_is_a_key_of_its_own_and_may_be_absent() {
        let rows = events(
            r#"{"run_id":"r","scenario":"s","seq":1,"ts_ns":0,"backend":"b","actor":"worker","incarnation":0,"kind":"effect_committed","counter":3,"counter_key":"apple"}
{"run_id":"r","scenario":"s","seq":2,"ts_ns":1,"backend":"b","actor":"worker","incarnation":0,"kind":"acked"}"#,
        );
        assert_eq!(rows[0].counter_key.as_deref(), Some("apple"));
        assert_eq!(rows[1].counter_key, None);
    }

    #[test]
    fn partition_is_an_int32_key_that_may_be_absent_and_round_trips() {
        let rows = events(
            r#"{"run_id":"r","scenario":"s","seq":1,"ts_ns":0,"backend":"b","actor":"worker","incarnation":0,"kind":"delivered","event_id":"e","broker_seq":5,"partition":2}
{"run_id":"r","scenario":"s","seq":2,"ts_ns":1,"backend":"b","actor":"worker","incarnation":0,"kind":"acked","event_id":"e","broker_seq":5,"partition":"2"}
{"run_id":"r","scenario":"s","seq":3,"ts_ns":2,"backend":"b","actor":"worker","incarnation":0,"kind":"acked","event_id":"e","broker_seq":6}"#,
        );
        let partitions: Vec<Option<i32>> = rows.iter().map(|e| e.partition).collect();
        assert_eq!(partitions, [Some(2), Some(2), None]);
        // A row written as JSON (its keys the column names) reads back the same.
        let text: Vec<String> = rows
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        assert!(text[0].contains(r#""partition":2"#), "{}", text[0]);
        assert_eq!(events(&text.join("\n")), rows);
        // A value past Int32 is refused, naming the column.
        let wide = r#"{"run_id":"r","scenario":"s","seq":1,"ts_ns":0,"backend":"b","actor":"worker","incarnation":0,"kind":"acked","partition":2147483648}"#;
        let Err(e) = Decoder::new(wide.as_bytes()) else {
            panic!("a partition past Int32 reads")
        };
        assert!(e.to_string().contains("`partition`"), "{e}");
        assert!(e.to_string().contains("Int32"), "{e}");
    }
}
