//! One pass over a scenario's rows, in `seq` order, feeding every rule, the [`Ends`], the actor
//! [`Lives`] and the figures at once; then, for violations only, a second pass gathering their
//! witnesses; then the lost-spans and lost-rows rules. Both passes are where rows enter the
//! rules: there a span's account of a step read from the wire ([`super::sources`]) goes to the
//! rules comparing sources only.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use outbox_trace::{Detail, FigureTally, Figures, Kind};

use super::invariant::Invariant;
use super::lost_rows::{self, Traced};
use super::lost_spans::{self, Lives};
use super::outcome::Outcome;
use super::rule::{Ends, Gather, Rule};
use super::sources::WireSteps;
use super::{
    ack_after_commit, aggregate_order, counter_exact, external_single_effect, intent_atomic,
    mark_after_puback, no_lost_task, observed_agrees, single_effect, sources_agree,
};
use super::{cut_short, evidence};
use crate::model::history::History;
use crate::model::intern::{Id, Interner};
use crate::model::row::{Row, Source};

/// [`Invariant::rule`], from the `files` column of the table.
macro_rules! rules {
    ($($variant:ident $files:ident)+) => {
        impl Invariant {
            /// A fresh rule deciding this invariant (the invariant's own file).
            pub fn rule(self) -> Box<dyn Rule> {
                match self {
                    $(Invariant::$variant => Box::<$files::Rule>::default(),)+
                }
            }
        }
    };
}

super::invariant::invariants!(files rules);

impl Invariant {
    /// Decides this invariant alone on one history (without the lost-spans rule), its
    /// witnesses gathered.
    pub fn check(self, h: &History, names: &Interner) -> Outcome {
        let mut scan = Scan::of(&[self]);
        scan.history(h);
        let mut scanned = scan.finish(names);
        if let Some(mut gathering) = scanned.gathering() {
            for (at, r) in h.rows.iter().enumerate() {
                gathering.row(at, r);
            }
            gathering.finish(&mut scanned);
        }
        scanned.outcomes.remove(0)
    }
}

/// The rules of a scenario while its rows pass.
pub struct Scan {
    invariants: Vec<Invariant>,
    /// Each invariant's rule, made on the first row it reads: a scenario's state is only that of
    /// the rules its rows concern.
    rules: Vec<Option<Box<dyn Rule>>>,
    /// Which rules read which rows: shared by every scan of the same invariants, so a scenario
    /// costs only its rules' state.
    readers: Arc<Readers>,
    ends: Ends,
    lives: Lives,
    traced: Traced,
    figures: FigureTally<Id>,
}

impl Scan {
    /// A scan deciding `invariants`, in that order.
    pub fn of(invariants: &[Invariant]) -> Self {
        static ALL: OnceLock<Arc<Readers>> = OnceLock::new();
        let readers = if invariants == Invariant::ALL {
            ALL.get_or_init(|| readers(invariants)).clone()
        } else {
            readers(invariants)
        };
        Scan {
            invariants: invariants.to_vec(),
            rules: invariants.iter().map(|_| None).collect(),
            readers,
            ends: Ends::default(),
            lives: Lives::default(),
            traced: Traced::default(),
            figures: FigureTally::default(),
        }
    }

    /// Takes the row at position `at` with its decoded detail (for the kinds the analyzer keeps).
    /// A span's account of a step the scenario reads from the wire goes to the rules comparing
    /// sources alone: nothing else counts it.
    pub fn row(&mut self, at: usize, r: &Row, detail: Option<&Detail>) {
        let (readers, invariants, rules) = (&self.readers, &self.invariants, &mut self.rules);
        if r.source != Source::Unsaid {
            for &i in readers.of_sources.iter() {
                made(rules, invariants, i).sourced(at, r);
            }
            if self.ends.wire.account(r) {
                return;
            }
        }
        if let Some(kind_readers) = readers.by_kind.get(r.kind as usize) {
            for &i in kind_readers.iter() {
                made(rules, invariants, i).row(at, r);
            }
        }
        self.ends.row(at, r, detail);
        self.lives.row(r, detail);
        self.traced.row(r);
        crate::model::figures::add(&mut self.figures, r);
    }

    /// Takes every row of a history held in memory.
    pub fn history(&mut self, h: &History) {
        for (at, r) in h.rows.iter().enumerate() {
            self.row(at, r, h.detail(r));
        }
    }

    /// Decides every rule (`names` resolves the keys of counters given per key).
    pub fn finish(mut self, names: &Interner) -> Scanned {
        self.ends.resolve(names);
        let mut figures = self.figures;
        if let Some((_, observed)) = &self.ends.observed {
            figures.observe(observed);
        }
        let rules: Vec<Box<dyn Rule>> = (self.rules.into_iter().zip(&self.invariants))
            .map(|(rule, inv)| rule.unwrap_or_else(|| inv.rule()))
            .collect();
        let reads: Vec<&'static [Kind]> = rules.iter().map(|r| r.kinds()).collect();
        let ends = &self.ends;
        let (outcomes, gathers) = rules
            .into_iter()
            .zip(&self.invariants)
            .map(|(rule, &inv)| {
                let d = match evidence::unworked(inv, ends) {
                    Some(outcome) => outcome.into(),
                    None => rule.finish(ends),
                };
                (d.outcome, d.gather)
            })
            .unzip();
        let shortfalls = self
            .traced
            .shortfalls(self.ends.observed.as_ref().map(|(_, o)| &**o));
        Scanned {
            outcomes,
            reads,
            gathers,
            ends: self.ends,
            lives: self.lives,
            shortfalls,
            figures: figures.figures(),
        }
    }
}

/// Rule `i` of `invariants`, made on first use.
#[inline]
fn made<'a>(
    rules: &'a mut [Option<Box<dyn Rule>>],
    invariants: &[Invariant],
    i: u8,
) -> &'a mut Box<dyn Rule> {
    let i = usize::from(i);
    rules[i].get_or_insert_with(|| invariants[i].rule())
}

/// The numbers of the rules of a scan that read each row.
struct Readers {
    /// Per kind (its position in [`Kind::ALL`]), the rules that read it.
    by_kind: Box<[Box<[u8]>]>,
    /// The rules that compare the sources of steps.
    of_sources: Box<[u8]>,
}

/// Which rules of `invariants` read which rows.
fn readers(invariants: &[Invariant]) -> Arc<Readers> {
    let mut by_kind = vec![Vec::new(); Kind::ALL.len()];
    let mut of_sources = Vec::new();
    for (i, invariant) in invariants.iter().enumerate() {
        let i = u8::try_from(i).expect("fewer than 256 rules");
        let rule = invariant.rule();
        for &kind in rule.kinds() {
            by_kind[kind as usize].push(i);
        }
        if rule.compares_sources() {
            of_sources.push(i);
        }
    }
    Arc::new(Readers {
        by_kind: by_kind.into_iter().map(Vec::into_boxed_slice).collect(),
        of_sources: of_sources.into(),
    })
}

/// What a scan decided.
pub struct Scanned {
    /// One outcome per rule, in the order asked; witnesses are complete once gathered.
    pub outcomes: Vec<Outcome>,
    /// The kinds each outcome's rule read.
    reads: Vec<&'static [Kind]>,
    gathers: Vec<Option<Box<dyn Gather>>>,
    /// The scenario's `run_start`, last `observed` and last `run_end`.
    pub ends: Ends,
    /// The actor lives seen.
    pub lives: Lives,
    /// What the store holds beyond the trace.
    pub shortfalls: lost_rows::Shortfalls,
    /// The scenario's figures.
    pub figures: Figures,
}

impl Scanned {
    /// Appends the outcomes of a scan of the same rows deciding other rules.
    pub fn append(&mut self, other: Scanned) {
        self.outcomes.extend(other.outcomes);
        self.reads.extend(other.reads);
        self.gathers.extend(other.gathers);
    }

    /// The second pass the violations need, if any needs one.
    pub fn gathering(&mut self) -> Option<Gathering> {
        let gathers: Vec<(usize, Box<dyn Gather>)> = self
            .gathers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, g)| g.take().map(|g| (i, g)))
            .collect();
        let wire = self.ends.wire;
        (!gathers.is_empty()).then_some(Gathering { gathers, wire })
    }

    /// Every witness row position of the violations found.
    pub fn witness_rows(&self) -> BTreeSet<usize> {
        self.outcomes
            .iter()
            .flat_map(|o| &o.violations)
            .flat_map(|v| v.witness.iter().copied())
            .collect()
    }

    /// Whether any violation was found.
    pub fn any_violation(&self) -> bool {
        self.outcomes.iter().any(|o| !o.violations.is_empty())
    }

    /// The outcomes, with the lost-spans and lost-rows rules applied. `h` holds at least the
    /// witness rows.
    pub fn settle(self, h: &History, names: &Interner) -> Vec<Outcome> {
        let mut outcomes = self.outcomes;
        let lossy = self.lives.incomplete();
        cut_short::apply(&self.ends, &mut outcomes);
        lost_spans::apply(&lossy, h, names, &mut outcomes);
        let own = lost_rows::own_fault(&self.ends, self.shortfalls);
        lost_rows::apply(self.shortfalls, &lossy, own, names, &mut outcomes);
        evidence::apply(&self.ends, &self.reads, &mut outcomes);
        outcomes
    }
}

/// The rules that still gather witnesses, seeing the rows a second time.
pub struct Gathering {
    gathers: Vec<(usize, Box<dyn Gather>)>,
    /// The kinds the scenario reads from the wire: the spans' accounts of them are not judged.
    wire: WireSteps,
}

impl Gathering {
    /// Takes the row at position `at`.
    pub fn row(&mut self, at: usize, r: &Row) {
        let sourced = r.source != Source::Unsaid;
        let account = sourced && self.wire.account(r);
        for (_, g) in &mut self.gathers {
            if sourced {
                g.sourced(at, r);
            }
            if !account {
                g.row(at, r);
            }
        }
    }

    /// Completes the witnesses.
    pub fn finish(self, scanned: &mut Scanned) {
        for (i, g) in self.gathers {
            g.finish(&mut scanned.outcomes[i]);
        }
    }
}
