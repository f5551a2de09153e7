//! The trace's path to disk: who writes a row ([`author`]), when on the run's clock ([`clock`],
//! read by every process), the one writer that gives every row of a run its `seq` ([`writer`]),
//! and the guards on the trace's place on disk ([`output`]: checked before the run, locked while
//! it runs, never overwritten by what is not complete).

pub mod author;
pub mod clock;
pub mod output;
pub mod writer;
