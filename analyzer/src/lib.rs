//! `outbox-analyzer`: reads `outbox-trace/1` recordings and decides the outbox invariants.
//!
//! The crate is layered; a module uses only the layers below it, and no two files import each
//! other (`scripts/layers.py analyzer/src` checks the latter):
//!
//! - [`model`]: a recording loaded into compact per-scenario histories (interned strings, small
//!   rows, indices, figures) and the synthetic recordings of the benchmarks;
//! - [`check`]: the invariant table, one rule per invariant, the engine that feeds them, and the
//!   in-memory and streamed runs; its outcomes are data (row positions and values), never text;
//! - [`explain`]: those outcomes in words, printed as text or JSON;
//! - [`views`]: what the drawing commands show, as data (scenes, chains, boundaries, timelines,
//!   comparisons, diffs);
//! - [`render`]: views drawn as SVG, PNG, Mermaid or text;
//! - [`report`]: the lab's deliverables and the self-contained HTML report;
//! - [`sql`]: the same invariants as one SQL statement (uses `check` and `explain`);
//! - [`cli`]: the command line: arguments, resolved configurations, exit codes, the error type
//!   that carries them, and the glue.
//!
//! The pipeline stays data until the last step: files become histories ([`model`]), each
//! invariant returns an outcome ([`check`]), and only [`explain`], [`render`] and [`report`] turn
//! data into words and pictures.
#![deny(missing_docs)]

pub mod check;
pub mod cli;
pub mod explain;
pub mod model;
pub mod render;
pub mod report;
pub mod sql;
pub mod views;
