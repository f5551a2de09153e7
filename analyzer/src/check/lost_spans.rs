//! The contract's rule for rows a killed process never reported (spans it never exported): an
//! actor life whose own `crash` row is present is complete up to it; a life that ends without one
//! while a later life of the same actor exists may have lost its last rows, and so may one whose
//! `crash` row says `announced: false`. A violation that such
//! missing rows could remove is `unknown` with that reason, never a failure.
//!
//! Which violations missing rows could remove (the `lost_spans` column of the invariant table,
//! [`LostSpans`]):
//! - `ack-after-commit`, `mark-after-puback`, `intent-atomic`, `aggregate-order` ([`Touched`]):
//!   a missing row (a commit, a publish ACK, an intent, an earlier publication) would sit in the
//!   life of a witness row, so those whose witness touches a possibly incomplete life;
//! - `no-lost-task`, `counter-exact` ([`Any`]): the missing row (an effect, a step of the
//!   counter) could come from any life, so every violation when the scenario has a possibly
//!   incomplete life;
//! - `observed-agrees` ([`Never`] here): only a total the store holds more of than the trace
//!   (see `lost_rows`).
//!
//! `single-effect` and `external-single-effect` ([`Never`]) count rows that are there: missing
//! rows only hide violations, so they stay as found. When some violations stay, the verdict stays
//! FAIL with those; it becomes unknown only when every violation found could go away. The rule
//! holds for every source; the recorder writes a `crash` row for every life it ends.
//!
//! [`Touched`]: LostSpans::Touched
//! [`Any`]: LostSpans::Any
//! [`Never`]: LostSpans::Never

use std::collections::BTreeSet;

use outbox_trace::{Detail, Kind};

use super::{LostSpans, Outcome, Reason, Verdict, Violation};
use crate::model::history::History;
use crate::model::intern::{FastMap, Id, Interner};
use crate::model::row::Row;

/// Makes the outcomes honest about the `lossy` lives (see [`Lives::incomplete`]). `h` holds at
/// least the witness rows.
pub fn apply(lossy: &BTreeSet<(Id, u32)>, h: &History, names: &Interner, outcomes: &mut [Outcome]) {
    if lossy.is_empty() {
        return;
    }
    let first = *lossy.iter().next().expect("not empty");
    for o in outcomes.iter_mut().filter(|o| o.verdict == Verdict::Fail) {
        let touched = |v: &Violation| {
            v.witness.iter().find_map(|&at| {
                let r = h.row(at);
                lossy
                    .contains(&(r.actor, r.incarnation))
                    .then_some((r.actor, r.incarnation))
            })
        };
        let mut life = None;
        let keep: Vec<Violation> = match o.invariant.lost_spans() {
            LostSpans::Touched => o
                .violations
                .iter()
                .filter(|v| match touched(v) {
                    Some(l) => {
                        life.get_or_insert(l);
                        false
                    }
                    None => true,
                })
                .cloned()
                .collect(),
            LostSpans::Any => {
                life = Some(o.violations.iter().find_map(touched).unwrap_or(first));
                Vec::new()
            }
            // Missing rows only hide violations; for totals, `lost_rows` decides which of them a
            // lost row explains.
            LostSpans::Never => continue,
        };
        let Some((actor, incarnation)) = life else {
            continue;
        };
        if keep.is_empty() && o.more == 0 {
            let reason = Reason::MayHaveLostSpans {
                actor: names.name(actor).to_string(),
                incarnation,
            };
            *o = Outcome::unknown(o.invariant, reason);
        } else if !keep.is_empty() {
            o.violations = keep;
        }
    }
}

/// The actor lives of a scenario, seen row by row: which ended with their own `crash` row, and
/// each actor's latest incarnation.
#[derive(Debug, Default)]
pub struct Lives {
    /// Every life, and whether it has its own `crash` row.
    crashed: FastMap<(Id, u32), bool>,
    /// Each actor's latest incarnation, from its first row on (a map: a scenario has few actors,
    /// and a table by id would cost each scenario room for every id interned before them).
    last: FastMap<Id, u32>,
    /// The life of the previous row: rows of one life come in runs, which skip the maps.
    current: Option<(Id, u32)>,
    /// Lives whose `crash` row says `announced: false`: rows of them may be missing.
    unannounced: BTreeSet<(Id, u32)>,
}

impl Lives {
    /// Takes a row and its decoded detail.
    #[inline]
    pub fn row(&mut self, r: &Row, detail: Option<&Detail>) {
        let life = (r.actor, r.incarnation);
        if self.current != Some(life) {
            let last = self.last.get(&r.actor).copied();
            // The actor's latest life is in `crashed` already; only an earlier or a new one
            // needs the map.
            if last != Some(r.incarnation) {
                self.crashed.entry(life).or_insert(false);
                let latest = last.map_or(r.incarnation, |l| l.max(r.incarnation));
                self.last.insert(r.actor, latest);
            }
            self.current = Some(life);
        }
        if r.kind == Kind::Crash {
            self.crashed.insert(life, true);
            let announced = detail.and_then(Detail::crash).and_then(|c| c.announced);
            if announced == Some(false) {
                self.unannounced.insert(life);
            }
        }
    }

    /// The lives `(actor, incarnation)` that may have lost rows: without a `crash` row of their
    /// own while a later life of the same actor has rows, or with one that says
    /// `announced: false` (the process was killed or exited with rows perhaps unexported).
    pub fn incomplete(&self) -> BTreeSet<(Id, u32)> {
        let mut lives: BTreeSet<(Id, u32)> = self
            .crashed
            .iter()
            .filter(|&(&(actor, inc), &crashed)| {
                !crashed && self.last.get(&actor).is_some_and(|&l| l > inc)
            })
            .map(|(&life, _)| life)
            .collect();
        lives.extend(self.unannounced.iter().copied());
        lives
    }
}
