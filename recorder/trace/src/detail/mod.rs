//! The `detail` column, typed: one struct per kind that carries a detail object, decoded once.
//!
//! `detail` is JSON text in the file. Writers build these structs and serialize them; readers
//! decode them with [`Detail::parse`]. Decoding is lenient in spelling, as a reader of other
//! producers' files must be: an integer may be a JSON number or a decimal string, and keys this
//! contract does not name are kept in `other`; a value of the wrong type is a [`BadDetail`] naming
//! its field, never read as absent (one mechanism does it for every struct: see `lenient`). Nothing outside this module looks a `detail` key up by its name.

use serde_json::Value;

use crate::Kind;

mod counter;
mod failure;
mod lenient;
mod note;
mod observed;
mod run;
#[cfg(test)]
mod tests;

pub use counter::CounterValue;
pub use failure::{Crash, Fault};
pub use note::Note;
pub use observed::Observed;
pub use run::{
    ArmedStep, ChaosArmed, FaultForm, FaultTried, KindShape, Refused, RoleShape, RunConfig, RunEnd,
    RunStart, SearchMark, Unmapped, WireTraffic, COULD_NOT_RUN, INTERRUPTED, NO_KIND,
    UNMAPPED_NAMES,
};

/// The JSON key of a detail field: `detail_key!(Observed.counter)` is the [`DetailKey`]
/// `counter`.
///
/// The detail structs serialize every field under its own name (no serde renames; a test holds
/// that), so the key is the field's name; naming a field the struct does not have fails to
/// compile. Code that spells a key outside this crate (the SQL the analyzer writes) takes a
/// [`DetailKey`], which only this macro makes, so renaming a field breaks the build, not a query.
#[macro_export]
macro_rules! detail_key {
    ($detail:ident . $field:ident) => {{
        let _check = |d: &$crate::detail::$detail| {
            let _ = &d.$field;
        };
        $crate::detail::DetailKey::of_field(stringify!($field))
    }};
}

/// A key of a `detail` object, named by [`detail_key!`] after a field of the detail types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DetailKey(&'static str);

impl DetailKey {
    /// For [`detail_key!`] only, which has checked that the field exists.
    #[doc(hidden)]
    pub const fn of_field(name: &'static str) -> Self {
        DetailKey(name)
    }

    /// The key as written in the JSON text.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for DetailKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// A decoded `detail`, by the kind of its row.
#[derive(Debug, Clone, PartialEq)]
pub enum Detail {
    /// Of `run_start`.
    RunStart(RunStart),
    /// Of `crash`.
    Crash(Crash),
    /// Of `fault`.
    Fault(Fault),
    /// Of `observed`.
    Observed(Observed),
    /// Of `run_end`.
    RunEnd(RunEnd),
    /// Of any other kind.
    Note(Note),
    /// The text is not a JSON object.
    NotAnObject,
}

/// A `detail` object holding a field of the wrong type (`counter_start: [1, 2]`): bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct BadDetail {
    /// The kind of the row.
    pub kind: Kind,
    /// Which field, and what it holds.
    pub message: String,
}

impl Detail {
    /// Decodes the `detail` text of a row of `kind`. Text that is not a JSON object gives
    /// [`Detail::NotAnObject`]; an object with a field of the wrong type is a [`BadDetail`].
    pub fn parse(kind: Kind, text: &str) -> Result<Detail, BadDetail> {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
            return Ok(Detail::NotAnObject);
        };
        let value = Value::Object(map);
        let typed = match kind {
            Kind::RunStart => serde_json::from_value(value).map(Detail::RunStart),
            Kind::Crash => serde_json::from_value(value).map(Detail::Crash),
            Kind::Fault => serde_json::from_value(value).map(Detail::Fault),
            Kind::Observed => serde_json::from_value(value).map(Detail::Observed),
            Kind::RunEnd => serde_json::from_value(value).map(Detail::RunEnd),
            _ => serde_json::from_value(value).map(Detail::Note),
        };
        typed.map_err(|e| BadDetail {
            kind,
            message: e.to_string(),
        })
    }

    /// The JSON text of this detail; `null` for [`Detail::NotAnObject`].
    pub fn to_json(&self) -> String {
        let text = match self {
            Detail::RunStart(d) => serde_json::to_string(d),
            Detail::Crash(d) => serde_json::to_string(d),
            Detail::Fault(d) => serde_json::to_string(d),
            Detail::Observed(d) => serde_json::to_string(d),
            Detail::RunEnd(d) => serde_json::to_string(d),
            Detail::Note(d) => serde_json::to_string(d),
            Detail::NotAnObject => Ok("null".to_string()),
        };
        // Maps with string keys and plain values always serialize.
        text.unwrap_or_else(|_| "{}".to_string())
    }

    /// The run's start detail, if this is one.
    pub fn run_start(&self) -> Option<&RunStart> {
        match self {
            Detail::RunStart(d) => Some(d),
            _ => None,
        }
    }
    /// The crash detail, if this is one.
    pub fn crash(&self) -> Option<&Crash> {
        match self {
            Detail::Crash(d) => Some(d),
            _ => None,
        }
    }
    /// The fault detail, if this is one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            Detail::Fault(d) => Some(d),
            _ => None,
        }
    }
    /// The observed ground truth, if this is one.
    pub fn observed(&self) -> Option<&Observed> {
        match self {
            Detail::Observed(d) => Some(d),
            _ => None,
        }
    }
    /// The run's end detail, if this is one.
    pub fn run_end(&self) -> Option<&RunEnd> {
        match self {
            Detail::RunEnd(d) => Some(d),
            _ => None,
        }
    }
    /// The note of a protocol step, if this is one.
    pub fn note(&self) -> Option<&Note> {
        match self {
            Detail::Note(d) => Some(d),
            _ => None,
        }
    }
}
