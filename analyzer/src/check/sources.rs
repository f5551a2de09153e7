//! One source judged: where a scenario reads steps of some kinds from the wire
//! (`run_start.detail.wire_steps`), its rows of those kinds that say `detail.source = "span"` are
//! the process's own account of steps the wire already shows. [`WireSteps`] tells them apart;
//! the scan ([`crate::check::Scan`]) hands them only to the rule comparing the two sources
//! (`sources-agree`), never to the other rules, the evidence rules or the counts.

use outbox_trace::detail::RunStart;
use outbox_trace::Kind;

use crate::model::row::{Row, Source};

/// The kinds a scenario reads from the wire, one bit per kind (by its position in
/// [`Kind::ALL`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireSteps(u32);

const _: () = assert!(Kind::ALL.len() <= 32, "a bit per kind");

impl WireSteps {
    /// The kinds `run_start.detail.wire_steps` lists (names the contract lacks are ignored).
    pub fn of(start: &RunStart) -> Self {
        let bits = start
            .wire_steps
            .iter()
            .filter_map(|name| name.parse::<Kind>().ok())
            .fold(0, |bits, kind| bits | 1 << kind as u32);
        WireSteps(bits)
    }

    /// Whether the scenario reads any step from the wire.
    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether it reads steps of `kind` from the wire.
    pub fn lists(self, kind: Kind) -> bool {
        self.0 & 1 << kind as u32 != 0
    }

    /// Whether `r` is a span's account of a step read from the wire: compared, not judged.
    #[inline]
    pub fn account(self, r: &Row) -> bool {
        r.source == Source::Span && self.lists(r.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_span_rows_of_listed_kinds_are_accounts() {
        let start = RunStart {
            wire_steps: vec!["effect_committed".into(), "no_such_kind".into()],
            ..RunStart::default()
        };
        let wire = WireSteps::of(&start);
        assert!(wire.any() && wire.lists(Kind::EffectCommitted) && !wire.lists(Kind::Acked));
        let mut names = crate::model::intern::Interner::default();
        let actor = names.intern("worker").expect("intern");
        let mut row = Row::new(1, Kind::EffectCommitted, actor, 0);
        assert!(!wire.account(&row));
        row.source = Source::Span;
        assert!(wire.account(&row));
        row.source = Source::Wire;
        assert!(!wire.account(&row));
        row.kind = Kind::Acked;
        row.source = Source::Span;
        assert!(!wire.account(&row));
        assert!(!WireSteps::default().any());
    }
}
