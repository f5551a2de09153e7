//! The names of what goes wrong in a run, typed: the fault kinds of `fault` rows
//! (`detail.fault`, [`FaultKind`]) and the crash sites of `crash` rows (`detail.point`,
//! [`CrashSite`]).
//!
//! Both are names first: each value is the text written in the trace, and compares, hashes and
//! orders as that text. A name this contract does not define (from an older or a foreign trace)
//! is kept as it is in an `Other` variant and written back unchanged, so reading never fails.

mod crash;
pub mod duration;
mod kind;
#[cfg(test)]
mod tests;

pub use crash::{AfterStep, CrashSite};
pub use kind::FaultKind;

/// The impls that make a type with `as_str` and an infallible `from_name(String)` behave as its
/// name: serde as a plain string, `Display`, `FromStr`, conversions from and to strings, and
/// equality, hashing and order by the name.
macro_rules! named {
    ($ty:ident) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                // `pad`, so widths and alignment apply as they do to strings.
                f.pad(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = std::convert::Infallible;
            /// Never fails: a name this contract does not define is kept as it is.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok($ty::from_name(s.to_string()))
            }
        }

        impl From<&str> for $ty {
            fn from(s: &str) -> Self {
                $ty::from_name(s.to_string())
            }
        }

        impl From<String> for $ty {
            fn from(s: String) -> Self {
                $ty::from_name(s)
            }
        }

        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                v.into_string()
            }
        }

        impl PartialEq for $ty {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $ty {}

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<String> for $ty {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl std::hash::Hash for $ty {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                std::hash::Hash::hash(self.as_str(), state)
            }
        }

        impl PartialOrd for $ty {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $ty {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as serde::Deserialize>::deserialize(d).map($ty::from_name)
            }
        }
    };
}

use named;
