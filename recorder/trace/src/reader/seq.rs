//! The check that no `seq` repeats within a run.

use std::collections::HashMap;

use crate::TraceError;

/// Detects a `seq` repeated within a run, in linear time when rows come in `seq` order (as the
/// recorder writes them) and by sorting otherwise.
#[derive(Debug, Default)]
pub struct SeqCheck {
    runs: HashMap<String, RunSeqs>,
}

#[derive(Debug, Default)]
struct RunSeqs {
    last: Option<u64>,
    sorted: bool,
    seqs: Vec<u64>,
}

impl SeqCheck {
    /// Records one row's `(run_id, seq)`.
    pub fn push(&mut self, run_id: &str, seq: u64) {
        let run = match self.runs.get_mut(run_id) {
            Some(run) => run,
            None => self.runs.entry(run_id.to_string()).or_insert(RunSeqs {
                sorted: true,
                ..Default::default()
            }),
        };
        if run.sorted {
            match run.last {
                Some(last) if seq <= last => run.sorted = false,
                _ => {}
            }
            run.last = Some(seq);
        }
        run.seqs.push(seq);
    }

    /// Fails on the first repeated `seq`.
    pub fn finish(self) -> Result<(), TraceError> {
        for (run_id, mut run) in self.runs {
            if run.sorted {
                continue;
            }
            run.seqs.sort_unstable();
            if let Some(w) = run.seqs.windows(2).find(|w| w[0] == w[1]) {
                return Err(TraceError::DuplicateSeq { run_id, seq: w[0] });
            }
        }
        Ok(())
    }
}
