//! The model every layer above reads: a recording loaded into compact per-scenario histories.
//! Strings are interned ([`intern`]), rows are small ([`row`]), each `(run_id, scenario)` is one
//! [`history::History`] with its [`index`]es, [`load`] reads files into them (decoded ahead by
//! [`decode`]), [`figures`] counts
//! them, and [`synth`] writes large synthetic recordings for benchmarks and tests.

mod decode;
pub mod figures;
pub mod history;
pub mod index;
pub mod intern;
pub mod load;
pub mod row;
pub mod synth;
