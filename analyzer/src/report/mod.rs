//! `analyzer report`: the lab's deliverables from one recording ([`deliverables`], the ADR's facts
//! in [`adr`]), and the whole report as one self-contained HTML page: [`page`] gathers what it
//! shows as data, [`drawing`] what its script draws with, [`html`] writes the file.

pub mod adr;
pub mod deliverables;
pub mod drawing;
pub mod html;
pub mod page;

pub use deliverables::{write_html, write_report, ReportError};
