//! Reading a detail object: the one mechanism every detail struct reads its fields by.
//!
//! [`detail_struct!`] declares a detail struct: each field is read from its key through
//! [`Lenient`] (by the field's type) or through a reader the declaration names, a missing key (or
//! `null`) gives the field's default, and keys the struct does not name are kept in `other`. An
//! integer may be a JSON number or a decimal string (lenient in spelling); a value of the wrong
//! type (`counter_start: [1, 2]`, a list item or an object entry of the wrong type) makes the
//! object unreadable, naming the field: the contract gives each field its type, and a value
//! read as absent would decide a verdict on what the producer never said. A field is written
//! only when it says something ([`Lenient::is_absent`]).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::fault::{CrashSite, FaultKind};

/// A type a detail field holds, read from any JSON value.
pub trait Lenient: Sized {
    /// The value `v` holds; `None` when it holds none of this type.
    fn from_json(v: Value) -> Option<Self>;

    /// Whether a field holding this is left out when written (absent, or empty).
    fn is_absent(&self) -> bool {
        false
    }
}

/// A field's value from `v`: the field's default for `null`, else what [`Lenient`] reads;
/// `Err` says what `v` holds instead.
pub fn read<T: Lenient + Default>(v: Value) -> Result<T, &'static str> {
    if v.is_null() {
        return Ok(T::default());
    }
    let found = shape(&v);
    T::from_json(v).ok_or(found)
}

/// What a JSON value is, for a message.
fn shape(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The error of a detail field holding a value of the wrong type.
pub fn wrong<E: serde::de::Error>(field: &str, found: &str) -> E {
    E::custom(format!(
        "detail field `{field}` holds {found} of the wrong type"
    ))
}

/// An integer from a JSON number or a decimal string.
pub fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().and_then(|u| i64::try_from(u).ok())),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

impl Lenient for i64 {
    fn from_json(v: Value) -> Option<Self> {
        int_of(&v)
    }
}

/// A non-negative integer (a negative one reads as absent).
impl Lenient for u64 {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// An integer that fits 32 bits (a larger one reads as absent).
impl Lenient for i32 {
    fn from_json(v: Value) -> Option<Self> {
        int_of(&v).and_then(|n| i32::try_from(n).ok())
    }
}

impl Lenient for bool {
    fn from_json(v: Value) -> Option<Self> {
        v.as_bool()
    }
}

impl Lenient for String {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Any value but `null`.
impl Lenient for Value {
    fn from_json(v: Value) -> Option<Self> {
        (!v.is_null()).then_some(v)
    }
}

impl Lenient for FaultKind {
    fn from_json(v: Value) -> Option<Self> {
        String::from_json(v).map(FaultKind::from)
    }
}

impl Lenient for CrashSite {
    fn from_json(v: Value) -> Option<Self> {
        String::from_json(v).map(CrashSite::from)
    }
}

/// Absent for `null`; otherwise the value must read as `T`.
impl<T: Lenient> Lenient for Option<T> {
    fn from_json(v: Value) -> Option<Self> {
        if v.is_null() {
            return Some(None);
        }
        T::from_json(v).map(Some)
    }

    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

/// A list whose every item reads as `T`.
impl<T: Lenient> Lenient for Vec<T> {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::Array(items) => items.into_iter().map(T::from_json).collect(),
            _ => None,
        }
    }

    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

/// An object whose every value reads as `T`.
impl<T: Lenient> Lenient for BTreeMap<String, T> {
    fn from_json(v: Value) -> Option<Self> {
        match v {
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| Some((k, T::from_json(v)?)))
                .collect(),
            _ => None,
        }
    }

    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

/// A list of texts: strings as they are, any other item as its JSON text. An object of lists
/// (the form older recorders wrote, faults by role) gives the items of every list; a lone value
/// is a list of one.
pub fn texts(v: Value) -> Vec<String> {
    fn item(v: Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s),
            Value::Null => {}
            other => out.push(other.to_string()),
        }
    }
    let mut out = Vec::new();
    match v {
        Value::Array(items) => items.into_iter().for_each(|v| item(v, &mut out)),
        Value::Object(map) => {
            for (_, v) in map {
                match v {
                    Value::Array(items) => items.into_iter().for_each(|v| item(v, &mut out)),
                    other => item(other, &mut out),
                }
            }
        }
        other => item(other, &mut out),
    }
    out
}

/// Declares a detail struct whose every field reads by its type.
///
/// Each field is read from the key of its name by [`Lenient`] (`pub tasks: Option<i64>,`), or by
/// the reader named after `=` (`pub faults: Vec<String> = lenient::texts,`, a function from a
/// [`Value`] that reads anything). A missing key or `null` gives the field's default; a value of
/// the wrong type fails the whole object, naming the field. The struct gets a last field `other`
/// with the keys it does not name, written back after the named ones. Fields are written under
/// their own names, and only when [`Lenient::is_absent`] is false.
macro_rules! detail_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* pub $field:ident : $ty:ty $(= $reader:path)? , )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
        pub struct $name {
            $(
                $(#[$field_meta])*
                #[serde(skip_serializing_if = "crate::detail::lenient::Lenient::is_absent")]
                pub $field: $ty,
            )*
            /// Keys this contract does not name.
            #[serde(flatten)]
            pub other: serde_json::Map<String, serde_json::Value>,
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                type Object = serde_json::Map<String, serde_json::Value>;
                let mut other = <Object as serde::Deserialize>::deserialize(d)?;
                Ok($name {
                    $(
                        $field: match other.remove(stringify!($field)) {
                            Some(v) => $crate::detail::lenient::detail_struct!(
                                @read v $(, $reader)?
                            )
                            .map_err(|found| {
                                $crate::detail::lenient::wrong::<D::Error>(
                                    stringify!($field),
                                    found,
                                )
                            })?,
                            None => Default::default(),
                        },
                    )*
                    other,
                })
            }
        }
    };
    (@read $v:ident) => {
        $crate::detail::lenient::read($v)
    };
    (@read $v:ident, $reader:path) => {
        Ok::<_, &'static str>($reader($v))
    };
}

pub(crate) use detail_struct;

/// Reads each named detail struct as a nested value: an object, or absent.
macro_rules! objects {
    ($($name:ident),* $(,)?) => {$(
        impl $crate::detail::lenient::Lenient for $name {
            fn from_json(v: serde_json::Value) -> Option<Self> {
                match v {
                    serde_json::Value::Object(_) => serde_json::from_value(v).ok(),
                    _ => None,
                }
            }
        }
    )*};
}

pub(crate) use objects;
