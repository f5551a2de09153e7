//! The analyzer's integration tests as one binary (one link instead of one per file): one module
//! per area, helpers in `common` and the hand-built protocol variants in `variants`.

mod common;
mod variants;

mod book;
mod bounds;
mod cli;
mod cli_draw;
mod compare;
mod contract_doc;
mod coverage;
mod encodings;
mod evidence;
mod examples;
mod foreign_producers;
mod golden;
mod honest;
mod hostile;
mod html_report;
mod intake;
mod invariants;
mod junit;
mod mermaid;
mod mutants;
mod otel_fixtures;
mod partitions;
mod report;
mod scale;
mod sources;
mod sql;
mod streamed;
mod timeline;
