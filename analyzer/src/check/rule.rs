//! What a rule is: the [`Rule`] and [`Gather`] traits every invariant's file implements, the
//! [`Ends`] of a scenario they consult at the end, and the small helpers they share ([`Pos`],
//! [`Skips`], [`row32`]).

use std::collections::BTreeMap;

use outbox_trace::detail::{CounterValue, Observed, RunEnd, RunStart, NO_KIND};
use outbox_trace::{Detail, FaultKind, Field, Kind};

use super::outcome::{Outcome, Reason, RepliesLost};
use super::sources::WireSteps;
use crate::model::intern::{FastMap, Id, Interner};
use crate::model::row::Row;

/// A row index as `u32`, to keep per-id tables small: a history indexes its rows by kind with
/// `u32`s already, so they fit.
pub fn row32(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// A row position or none, in four bytes: per-id tables hold millions of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos(u32);

impl Pos {
    /// No position.
    pub const NONE: Pos = Pos(u32::MAX);

    /// Position `at` (a history cannot hold 2^32 rows in memory, nor a streamed scenario
    /// number them here).
    pub fn at(at: usize) -> Pos {
        Pos(u32::try_from(at).unwrap_or(u32::MAX - 1).min(u32::MAX - 1))
    }

    /// The position, if any.
    pub fn get(self) -> Option<usize> {
        (self != Pos::NONE).then_some(self.0 as usize)
    }
}

/// Counts rows a check had to skip because a field it needs is missing.
#[derive(Debug, Default)]
pub struct Skips(BTreeMap<(Kind, &'static str), u64>);

impl Skips {
    /// Whether `row` has all `fields`; counts it as skipped if not.
    #[inline(always)]
    pub fn usable(&mut self, row: &Row, fields: &[Field]) -> bool {
        let usable = fields.iter().all(|&f| row.has(f));
        if !usable {
            self.skip(row, fields);
        }
        usable
    }

    /// Counts `row` as skipped for the first of `fields` it lacks.
    #[cold]
    #[inline(never)]
    fn skip(&mut self, row: &Row, fields: &[Field]) {
        if let Some(f) = fields.iter().find(|&&f| !row.has(f)) {
            *self.0.entry((row.kind, f.column())).or_default() += 1;
        }
    }

    /// The first kind of skipped row as a reason, if any row was skipped.
    pub fn reason(&self) -> Option<Reason> {
        self.0
            .iter()
            .next()
            .map(|(&(kind, column), &rows)| Reason::MissingFields { kind, column, rows })
    }
}

/// One invariant decided online. [`Rule::row`] sees every row of a scenario, in `seq` order,
/// with its position (its index in the scenario's rows); [`Rule::finish`] decides.
pub trait Rule: Send {
    /// The kinds of rows the rule reads: it is handed only those.
    fn kinds(&self) -> &'static [Kind];
    /// Takes the row at position `at` (of one of [`Rule::kinds`]).
    fn row(&mut self, at: usize, r: &Row);
    /// Whether the rule compares the sources of steps: then it is handed every row that says
    /// its source, through [`Rule::sourced`].
    fn compares_sources(&self) -> bool {
        false
    }
    /// Takes the row at position `at` that says its source (`detail.source`), whatever its
    /// kind: a span's account of a step read from the wire reaches no other method of any rule.
    fn sourced(&mut self, _at: usize, _r: &Row) {}
    /// The verdict, once every row has been seen.
    fn finish(self: Box<Self>, ends: &Ends) -> Decision;
}

/// A rule's verdict, and what it still needs to complete its witnesses.
pub struct Decision {
    /// The outcome. Its violations' witnesses are complete unless `gather` is set.
    pub outcome: Outcome,
    /// Sees the rows again and completes the witnesses of `outcome`'s violations.
    pub gather: Option<Box<dyn Gather>>,
}

impl From<Outcome> for Decision {
    fn from(outcome: Outcome) -> Self {
        Decision {
            outcome,
            gather: None,
        }
    }
}

/// The second look at the rows, for the few violations kept as examples: state only for their
/// events, tasks and actor lives.
pub trait Gather: Send {
    /// Takes the row at position `at` (every row again, in the same order, but the spans'
    /// accounts of steps read from the wire).
    fn row(&mut self, at: usize, r: &Row);
    /// Takes the row at position `at` that says its source, accounts included.
    fn sourced(&mut self, _at: usize, _r: &Row) {}
    /// Completes the witnesses of `outcome`'s violations.
    fn finish(self: Box<Self>, outcome: &mut Outcome);
}

/// How many kinds the contract defines.
const KINDS: usize = Kind::ALL.len();

/// The rows of a scenario that rules consult at the end, kept while the rows pass: the first
/// `run_start`, the last `observed` and the last `run_end`, with their details decoded, and how
/// many rows of each kind there were (what the trace records, for "no verdict without
/// evidence").
#[derive(Debug, Clone, Default)]
pub struct Ends {
    /// The first `run_start` row's detail, if it has one (boxed, like the other details: a
    /// scenario's state while its rows pass stays small).
    pub run_start: Option<Box<RunStart>>,
    /// The last `observed` row's position and ground truth (every total absent when its detail
    /// is missing or not an object).
    pub observed: Option<(usize, Box<Observed>)>,
    /// The last `run_end` row's position and detail.
    pub run_end: Option<(usize, Option<Box<RunEnd>>)>,
    /// Whether a `run_start` row was seen (its detail may be missing).
    started: bool,
    /// Rows per kind (by its position in [`Kind::ALL`]).
    rows: [u64; KINDS],
    /// `counter_start` and the observed `counter` of keyed counters, by the key's id (see
    /// [`Ends::resolve`]).
    keyed: FastMap<Id, (Option<i64>, Option<i64>)>,
    /// The commit replies the scenario's own wire faults lost, if any did.
    pub replies_lost: Option<RepliesLost>,
    /// The kinds the scenario reads from the wire (`run_start.detail.wire_steps`).
    pub wire: WireSteps,
    /// The wire faults (`fault` rows with a `service` and a `target`): their positions and
    /// targets, by name until [`Ends::resolve`] names them by id.
    wire_faults: Vec<(usize, String)>,
    /// The wire faults' positions and targets (processes the trace names).
    pub wire_hits: Vec<(usize, Id)>,
    /// The positions of the faults that stopped a service every process reaches (a restart or
    /// a pause of a store or broker): each hit the traffic of every life then running.
    pub service_hits: Vec<usize>,
}

impl Ends {
    /// Takes a row and its decoded detail.
    #[inline]
    pub fn row(&mut self, at: usize, r: &Row, detail: Option<&Detail>) {
        if let Some(n) = self.rows.get_mut(r.kind as usize) {
            *n += 1;
        }
        match r.kind {
            Kind::RunStart if !self.started => {
                self.started = true;
                self.run_start = detail.and_then(Detail::run_start).cloned().map(Box::new);
                self.wire = self
                    .run_start
                    .as_deref()
                    .map_or_else(Default::default, WireSteps::of);
            }
            Kind::Observed => {
                let observed = detail.and_then(Detail::observed).cloned();
                self.observed = Some((at, Box::new(observed.unwrap_or_default())));
            }
            Kind::RunEnd => {
                let end = detail.and_then(Detail::run_end).cloned().map(Box::new);
                self.run_end = Some((at, end));
            }
            Kind::Fault => {
                if let Some(f) = detail.and_then(Detail::fault) {
                    RepliesLost::add(&mut self.replies_lost, f);
                    if let (Some(target), Some(_)) = (&f.target, &f.service) {
                        self.wire_faults.push((at, target.clone()));
                    }
                    let stops_a_service = matches!(
                        f.fault,
                        FaultKind::ServiceRestart
                            | FaultKind::ServicePause
                            | FaultKind::BrokerRestart
                            | FaultKind::StoreRestart
                    );
                    if stops_a_service {
                        self.service_hits.push(at);
                    }
                }
            }
            _ => {}
        }
    }
}

impl Ends {
    /// Resolves the keys of `counter_start` and the observed `counter` given per key to the ids
    /// the rows' `counter_key`s have (a key no row names has no id, and no commit to check), and
    /// the targets of wire faults to the actors the rows name.
    pub fn resolve(&mut self, names: &Interner) {
        fn by_key(v: Option<&CounterValue>) -> Vec<(&String, &i64)> {
            match v {
                Some(CounterValue::ByKey(map)) => map.iter().collect(),
                _ => Vec::new(),
            }
        }
        let start = self
            .run_start
            .as_ref()
            .and_then(|s| s.counter_start.as_ref());
        let end = self.observed.as_ref().and_then(|(_, o)| o.counter.as_ref());
        for (name, &v) in by_key(start) {
            if let Some(id) = names.get(name) {
                self.keyed.entry(id).or_default().0 = Some(v);
            }
        }
        for (name, &v) in by_key(end) {
            if let Some(id) = names.get(name) {
                self.keyed.entry(id).or_default().1 = Some(v);
            }
        }
        self.wire_hits = (self.wire_faults.iter())
            .filter_map(|(at, target)| Some((*at, names.get(target)?)))
            .collect();
    }

    /// The value of counter `key` (none: the run's one counter) before the first commit:
    /// `run_start.detail.counter_start` (a number for the one counter, an object by key), else 0.
    pub fn counter_start(&self, key: Option<Id>) -> i64 {
        match key {
            Some(k) => self.keyed.get(&k).and_then(|v| v.0),
            None => self
                .run_start
                .as_ref()
                .and_then(|s| s.counter_start.as_ref())
                .and_then(CounterValue::one),
        }
        .unwrap_or(0)
    }

    /// The value of counter `key` the last `observed` row read, if it gives it.
    pub fn counter_final(&self, key: Option<Id>) -> Option<i64> {
        match key {
            Some(k) => self.keyed.get(&k).and_then(|v| v.1),
            None => self
                .observed
                .as_ref()
                .and_then(|(_, o)| o.counter.as_ref())
                .and_then(CounterValue::one),
        }
    }

    /// Whether the scenario was cut short: its `run_end` is missing, or says `interrupted`. The
    /// store was then read (if at all) while the scenario may still have been running.
    pub fn cut_short(&self) -> bool {
        match &self.run_end {
            None => true,
            Some((_, end)) => end.as_deref().is_some_and(RunEnd::interrupted),
        }
    }

    /// How many rows of `kind` the scenario has.
    pub fn rows(&self, kind: Kind) -> u64 {
        self.rows.get(kind as usize).copied().unwrap_or(0)
    }

    /// Whether the scenario has a row of any of `kinds`.
    pub fn any(&self, kinds: &[Kind]) -> bool {
        kinds.iter().any(|&k| self.rows(k) > 0)
    }

    /// Whether the producer declared in `run_start.detail.records` that it reports `kind`:
    /// then a scenario without such rows had none to report. A kind with refused spans is not
    /// declared in that sense, nor is one without rows where spans mapped to no kind.
    pub fn declared(&self, kind: Kind) -> bool {
        self.run_start.as_ref().is_some_and(|s| declares(s, kind))
            && self.refused(kind).is_none()
            && (self.rows(kind) > 0 || self.unmapped().is_none())
    }

    /// [`Reason::NoRows`] when the scenario has no row of any of `kinds` and the producer
    /// declared none of them: the trace is silent about them, which is no evidence that none
    /// happened. Where spans of those kinds were refused, or spans mapped to no kind, the reason
    /// names them ([`Reason::Refused`], [`Reason::Unmapped`]).
    pub fn lacks(&self, kinds: &'static [Kind]) -> Option<Reason> {
        let silent = kinds
            .iter()
            .all(|&k| self.rows(k) == 0 && !self.declared(k));
        if !silent {
            return None;
        }
        Some(self.doubt(kinds).unwrap_or(Reason::NoRows(kinds)))
    }

    /// Why rows of `kinds` may be missing, by the producer's own counts: the first of them with
    /// refused spans, else, where spans mapped to no kind, the kinds without rows.
    pub fn doubt(&self, kinds: &'static [Kind]) -> Option<Reason> {
        if let Some(r) = kinds.iter().find_map(|&k| self.refused(k)) {
            return Some(r);
        }
        let (spans, names) = self.unmapped()?;
        kinds
            .iter()
            .any(|&k| self.rows(k) == 0)
            .then(|| Reason::Unmapped {
                kinds,
                spans,
                names: names.to_vec(),
            })
    }

    /// [`Reason::Refused`] when the producer refused spans of `kind`, or spans without a kind
    /// (counted under [`NO_KIND`]: they could have been of any kind).
    pub fn refused(&self, kind: Kind) -> Option<Reason> {
        let end = self.run_end.as_ref()?.1.as_ref()?;
        let counted = |key: &str| end.refused.get(key).filter(|r| r.spans > 0);
        let (kind, r) = match counted(kind.as_str()) {
            Some(r) => (Some(kind), r),
            None => (None, counted(NO_KIND)?),
        };
        Some(Reason::Refused {
            kind,
            spans: r.spans,
            missing: r.missing.clone(),
            reasons: r.reasons.clone(),
        })
    }

    /// How many spans mapped to no kind, and some of their names, when any did.
    pub fn unmapped(&self) -> Option<(u64, &[String])> {
        let end = self.run_end.as_ref()?.1.as_ref()?;
        let u = end.unmapped.as_ref().filter(|u| u.spans > 0)?;
        Some((u.spans, &u.names))
    }

    /// Whether the scenario shows work: accepted tasks, any delivery, or `observed.tasks`,
    /// `tasks_done` or `results` above zero. Where it does, zero rows of a kind an invariant
    /// judges are no evidence unless the producer declared the kind.
    pub fn works(&self) -> bool {
        let observed = self.observed.as_ref().is_some_and(|(_, o)| {
            [o.tasks, o.tasks_done, o.results()]
                .into_iter()
                .any(|n| n.is_some_and(|n| n > 0))
        });
        observed || self.any(&[Kind::TaskAccepted, Kind::Delivered, Kind::Redelivered])
    }

    /// [`Ends::lacks`] for the kinds an invariant judges, where the scenario shows work.
    pub fn unworked(&self, judges: &'static [Kind]) -> Option<Reason> {
        if judges.is_empty() || !self.works() {
            return None;
        }
        self.lacks(judges)
    }
}

/// Whether `run_start.detail.records` names `kind`.
fn declares(start: &RunStart, kind: Kind) -> bool {
    start
        .records
        .as_ref()
        .is_some_and(|r| r.iter().any(|k| k == kind.as_str()))
}
