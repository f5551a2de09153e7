//! `outbox-analyzer`: reads `outbox-trace/1` recordings and decides the outbox invariants.
//!
//! The pipeline stays data until the last step: files are loaded into compact per-scenario
//! histories ([`load`], [`history`]), each invariant returns an outcome with violations as row
//! references ([`check`]), [`explain`] turns those into words, and [`output`] prints text or JSON.
#![deny(missing_docs)]

pub mod analysis;
pub mod boundaries;
pub mod chain;
pub mod check;
pub mod cli;
pub mod compare;
pub mod diff;
pub mod explain;
pub mod figures;
pub mod history;
pub mod index;
pub mod intern;
pub mod load;
pub mod output;
pub mod page;
pub mod render;
pub mod report;
pub mod scene;
pub mod sql;
pub mod stream;
pub mod synth;
pub mod timeline;
