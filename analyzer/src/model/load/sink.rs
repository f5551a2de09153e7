//! Where the loader puts each row it decodes: a [`Sink`]; [`Keep`] keeps every row in its
//! history (the in-memory load), the streamed check has its own.

use super::LoadError;
use crate::model::history::History;
use crate::model::intern::Id;
use crate::model::row::Row;

/// Where the loader puts each row it decodes.
pub(crate) trait Sink {
    /// Takes a row of known kind for history `h`, with its `detail` text when the analyzer keeps
    /// that kind's details.
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError>;

    /// Takes the `(run_id, seq)` of a row of a kind the contract lacks (its `seq` still counts).
    fn unknown(&mut self, run: Id, seq: u64) -> Result<(), LoadError>;

    /// Whether the sink keeps (nearly) every row, so a history should reserve room for them.
    fn keeps_rows(&self) -> bool {
        true
    }

    /// Columns the sink never reads, left undecoded (their values in the rows are zero or
    /// absent).
    fn skips(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Keeps every row in its history.
#[derive(Default)]
pub(super) struct Keep {
    /// `(run_id, seq)` of rows of unknown kinds.
    pub(super) unknown_seqs: Vec<(Id, u64)>,
}

impl Sink for Keep {
    fn row(
        &mut self,
        histories: &mut [History],
        h: usize,
        row: &Row,
        detail: Option<&str>,
    ) -> Result<(), LoadError> {
        let history = &mut histories[h];
        let mut row = row.clone();
        if let Some(text) = detail {
            history
                .attach_detail(&mut row, text)
                .map_err(LoadError::bad_detail(row.seq))?;
        }
        history.push(row);
        Ok(())
    }

    fn unknown(&mut self, run: Id, seq: u64) -> Result<(), LoadError> {
        self.unknown_seqs.push((run, seq));
        Ok(())
    }
}
