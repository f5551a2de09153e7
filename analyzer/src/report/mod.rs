//! `analyzer report`: the lab's deliverables from one recording ([`deliverables`]), and the whole
//! report as one self-contained HTML page: [`page`] gathers what it shows as data, [`html`]
//! writes the file.

pub mod deliverables;
pub mod html;
pub mod page;

pub use deliverables::{write_html, write_report, ReportError};
