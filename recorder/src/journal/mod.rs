//! The trace's path to disk: who writes a row ([`author`]), when on the run's clock ([`clock`],
//! read by every process), and the one writer that gives every row of a run its `seq`
//! ([`writer`]).

pub mod author;
pub mod clock;
pub mod writer;
