//! Words for a check's data: [`words`] explains violations, reasons and notes and picks a witness
//! row's relevant fields; [`faults`] says what a scenario tried; [`junit`] writes JUnit XML for CI; [`text`] prints a [`crate::check::Report`] for people and [`json`] for
//! programs, both from those words.

pub mod faults;
pub mod json;
pub mod junit;
pub mod text;
pub mod words;

pub use faults::fault_lines;
pub use words::{file_note, reason, scenario_notes, violation, witness_row, Value, WitnessRow};
