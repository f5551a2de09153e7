//! The one error type of the `analyzer` binary. Every error carries the [`ExitClass`] it exits
//! with, decided where the error enters the command line: each library error type converts by a
//! `From` impl below that names its class, and an error without one (an `anyhow` context, a new
//! error type) does not compile until its class is chosen ([`ResultExt`]). `main` maps the class
//! to the exit code; nothing downcasts.

use std::fmt;

use super::exit::Exit;
use crate::model::load::FileError;
use crate::render::RenderError;
use crate::report::ReportError;
use crate::sql::DialectError;
use crate::views::chain::ChainError;
use crate::views::compare::CompareError;
use crate::views::timeline::TimelineError;

/// Which failing exit code an error means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// Bad input or usage (exit 2): an unreadable or broken file, a bad argument, a failed write.
    BadInput,
    /// Nothing to draw or compare (exit 4): no such scenario, task, event or violation.
    NotFound,
}

impl ExitClass {
    /// The exit code of this class.
    pub fn exit(self) -> Exit {
        match self {
            ExitClass::BadInput => Exit::BadInput,
            ExitClass::NotFound => Exit::NotFound,
        }
    }
}

/// An error of a command, with the exit code it means.
#[derive(Debug)]
pub struct Error {
    class: ExitClass,
    source: anyhow::Error,
}

impl Error {
    /// `source` as an error of `class`.
    pub fn new(class: ExitClass, source: impl Into<anyhow::Error>) -> Self {
        Error {
            class,
            source: source.into(),
        }
    }

    /// Bad input or usage (exit 2).
    pub fn bad_input(source: impl Into<anyhow::Error>) -> Self {
        Error::new(ExitClass::BadInput, source)
    }

    /// Nothing to draw or compare (exit 4).
    pub fn not_found(source: impl Into<anyhow::Error>) -> Self {
        Error::new(ExitClass::NotFound, source)
    }

    /// Which exit code the error means.
    pub fn class(&self) -> ExitClass {
        self.class
    }

    /// The exit code the error means.
    pub fn exit(&self) -> Exit {
        self.class.exit()
    }

    /// The error with its causes, for the one line on stderr.
    pub fn source(&self) -> &anyhow::Error {
        &self.source
    }
}

impl fmt::Display for Error {
    /// The error and its causes on one line (`a: b: c`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.source)
    }
}

/// Classes the errors of a fallible call that has no `From` impl (an `anyhow` context). Only an
/// `anyhow::Error` takes it: a typed error converts by its own class below.
pub trait ResultExt<T> {
    /// Its error is bad input (exit 2).
    fn or_bad_input(self) -> Result<T, Error>;
}

impl<T> ResultExt<T> for Result<T, anyhow::Error> {
    fn or_bad_input(self) -> Result<T, Error> {
        self.map_err(Error::bad_input)
    }
}

/// Each error type the commands meet, with its class.
macro_rules! classes {
    ($($ty:ty => $class:ident;)+) => {
        $(impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::new(ExitClass::$class, e)
            }
        })+
    };
}

classes! {
    FileError => BadInput;
    RenderError => BadInput;
    ReportError => BadInput;
    DialectError => BadInput;
    std::io::Error => BadInput;
    serde_json::Error => BadInput;
    outbox_trace::TraceError => BadInput;
    outbox_trace::output::OutputError => BadInput;
    ChainError => NotFound;
    CompareError => NotFound;
    TimelineError => NotFound;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_exits_with_its_documented_code() {
        assert_eq!(ExitClass::BadInput.exit() as u8, 2);
        assert_eq!(ExitClass::NotFound.exit() as u8, 4);
    }

    #[test]
    fn nothing_to_draw_is_not_found_and_a_broken_write_is_bad_input() {
        let e: Error = ChainError::NotFound("t-9".into()).into();
        assert_eq!(e.class(), ExitClass::NotFound);
        let e: Error = CompareError::NothingShared("a, b".into()).into();
        assert_eq!(e.class(), ExitClass::NotFound);
        let e: Error = std::io::Error::other("disk full").into();
        assert_eq!(e.class(), ExitClass::BadInput);
        let e = Err::<(), _>(anyhow::anyhow!("x: cannot write"))
            .or_bad_input()
            .unwrap_err();
        assert_eq!(
            (e.class(), e.to_string().as_str()),
            (ExitClass::BadInput, "x: cannot write")
        );
    }
}
