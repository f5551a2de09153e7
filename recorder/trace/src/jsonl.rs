//! Reading `outbox-trace/1` as JSON Lines: one JSON object per line, one event per object, keys =
//! the contract's column names. An absent key or `null` is null; integers may be JSON numbers or
//! decimal strings; `detail` may be a JSON string holding an object (as DuckDB writes it) or an
//! object. An optional first line `{"outbox_trace": {"schema_version": "1", "run": {...}}}`
//! carries the file metadata (`"seq_source": "span-clocks"` there as in Parquet's metadata). Validation is the Parquet reader's: required columns present and
//! not null, integers in range, kinds the contract lacks kept by name (readers count them).

use std::collections::BTreeSet;
use std::io::BufRead;

use serde_json::{Map, Value};

use crate::input::{lines, Chunker, Decoded};
use crate::schema::{ColumnType, COLUMNS, SCHEMA_VERSION};
use crate::{Event, Kind, TraceError};

/// The key of the optional metadata line.
const META_KEY: &str = "outbox_trace";

/// Decodes JSON Lines text into canonical batches.
pub(crate) fn decode(text: impl BufRead) -> Result<Decoded, TraceError> {
    let mut out = Decoded::default();
    let mut chunker = Chunker::default();
    let mut extra = BTreeSet::new();
    let mut first = true;
    lines(text, |line, text| {
        let at = |reason: String| TraceError::Line { line, reason };
        let object: Map<String, Value> =
            serde_json::from_str(text).map_err(|e| at(format!("not a JSON object: {e}")))?;
        if std::mem::take(&mut first) && object.len() == 1 && object.contains_key(META_KEY) {
            return metadata(&object[META_KEY], &mut out).map_err(at);
        }
        for key in object.keys() {
            if !COLUMNS.iter().any(|c| c.name == key) && !extra.contains(key) {
                extra.insert(key.clone());
            }
        }
        let (event, unknown) = event(&object).map_err(at)?;
        chunker.push(event, unknown)
    })?;
    let (batches, rows) = chunker.finish()?;
    out.batches = batches;
    out.rows = rows;
    out.extra_columns = extra.into_iter().collect();
    Ok(out)
}

fn metadata(meta: &Value, out: &mut Decoded) -> Result<(), String> {
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

/// One event from one line's object; the second value is the kind's name when the contract does
/// not define it.
fn event(o: &Map<String, Value>) -> Result<(Event, Option<String>), String> {
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
    let i64s = || int(i64::MIN as i128, i64::MAX as i128);
    e.store_rev = optional(o, "store_rev", i64s())?;
    e.amount = optional(o, "amount", i64s())?;
    e.counter = optional(o, "counter", i64s())?;
    e.counter_key = string(o, "counter_key")?;
    e.detail = match o.get("detail") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err("column `detail` must be a JSON object or a string".into()),
    };
    Ok((e, unknown))
}

fn null_in(column: &'static str) -> String {
    TraceError::NullInRequired { column, nulls: 1 }.to_string()
}

fn string(o: &Map<String, Value>, column: &'static str) -> Result<Option<String>, String> {
    match o.get(column) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("column `{column}` must be a string")),
    }
}

fn required_string(o: &Map<String, Value>, column: &'static str) -> Result<String, String> {
    string(o, column)?.ok_or_else(|| null_in(column))
}

/// A range check from an integer to a column's type.
type Fit<T> = (i128, i128, fn(i128) -> T);

fn uint<T: TryFrom<i128> + Default>(max: i128) -> Fit<T> {
    (0, max, |v| T::try_from(v).unwrap_or_default())
}

fn int<T: TryFrom<i128> + Default>(min: i128, max: i128) -> Fit<T> {
    (min, max, |v| T::try_from(v).unwrap_or_default())
}

fn optional<T>(
    o: &Map<String, Value>,
    column: &'static str,
    fit: Fit<T>,
) -> Result<Option<T>, String> {
    let value = match o.get(column) {
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
            ColumnType::Utf8 => "Utf8",
        })
        .unwrap_or("an integer");
    let parsed: Option<i128> = match value {
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
    if v < min || v > max {
        return Err(format!(
            "column `{column}` holds a value that does not fit {expected}: {v}"
        ));
    }
    Ok(Some(convert(v)))
}

fn required<T>(o: &Map<String, Value>, column: &'static str, fit: Fit<T>) -> Result<T, String> {
    optional(o, column, fit)?.ok_or_else(|| null_in(column))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::batch_events;

    fn events(text: &str) -> Vec<Event> {
        let decoded = decode(text.as_bytes()).unwrap();
        let mut unknown = std::collections::BTreeMap::new();
        decoded
            .batches
            .iter()
            .flat_map(|b| batch_events(b, &mut unknown))
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
}
