//! [`CounterValue`]: a counter's value in a detail, for the run's one counter or by
//! `counter_key`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::lenient;

/// A counter's value in a detail: one number for the run's one counter, or one number per
/// `counter_key` (stock per item). Written as a JSON number or a JSON object of numbers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CounterValue {
    /// The run's one counter.
    One(i64),
    /// One counter per `counter_key`.
    ByKey(BTreeMap<String, i64>),
}

impl CounterValue {
    /// The value of the one counter; `None` when the value is given per key.
    pub fn one(&self) -> Option<i64> {
        match self {
            CounterValue::One(n) => Some(*n),
            CounterValue::ByKey(_) => None,
        }
    }

    /// The value of the counter `key` names (`None` = the run's one counter), if this value
    /// gives it: a number gives only the one counter, an object only keyed ones.
    pub fn of_key(&self, key: Option<&str>) -> Option<i64> {
        match (self, key) {
            (CounterValue::One(n), None) => Some(*n),
            (CounterValue::ByKey(map), Some(k)) => map.get(k).copied(),
            _ => None,
        }
    }

    /// Decodes a JSON value: a number or decimal string is one counter, an object whose every
    /// value is one counters by key; anything else is `None`.
    pub fn from_json(v: &Value) -> Option<CounterValue> {
        match v {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| lenient::int_of(v).map(|n| (k.clone(), n)))
                .collect::<Option<_>>()
                .map(CounterValue::ByKey),
            other => lenient::int_of(other).map(CounterValue::One),
        }
    }
}

impl From<i64> for CounterValue {
    fn from(n: i64) -> Self {
        CounterValue::One(n)
    }
}

impl lenient::Lenient for CounterValue {
    fn from_json(v: serde_json::Value) -> Option<Self> {
        CounterValue::from_json(&v)
    }
}
