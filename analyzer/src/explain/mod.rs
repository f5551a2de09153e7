//! Words for a check's data: [`findings`] explains violations; [`words`] explains reasons and notes
//! and picks a witness row's relevant fields; [`faults`] says what a scenario tried; [`junit`]
//! writes JUnit XML for CI; [`text`] prints a [`crate::check::Report`] for people and [`json`] for
//! programs, both from those words.

pub mod faults;
pub mod findings;
pub mod json;
pub mod junit;
pub mod text;
pub mod words;

pub use faults::fault_lines;
pub use findings::violation;
pub use words::{file_note, reason, scenario_notes, witness_row, Value, WitnessRow};
