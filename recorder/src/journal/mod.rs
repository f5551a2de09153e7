//! The trace's one writer ([`writer`]): every row of a run, from every actor process and from the
//! recorder itself, gets its `seq` there; and the run's clock ([`clock`]) that every process reads
//! `ts_ns` from.

pub mod clock;
pub mod writer;
