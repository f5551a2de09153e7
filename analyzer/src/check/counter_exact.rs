//! `counter-exact`: per counter (`counter_key`; none = the run's one counter), `effect_committed`
//! rows in `store_rev` order (ties by `seq`) step it by exactly their `amount`, starting from
//! `run_start.detail.counter_start` (a number for the one counter, an object by key; absent: 0);
//! and the last `observed` row's `counter` (the same forms) equals the start plus the sum of
//! committed amounts, for every counter with commits (the one counter when there are none).
//!
//! Commits come mostly in revision order already. Those that do are packed as they come into a
//! byte log of small differences (a few bytes a commit); the few that come after a higher
//! revision are kept aside, sorted at the end and merged in. The events and tasks of the commits
//! kept as examples are gathered on the second look.

use outbox_trace::{Field, Kind};

use super::{
    row32, Decision, Ends, Examples, Finding, Gather, Invariant, Outcome, Reason, Skips, Violation,
};
use crate::model::intern::{FastMap, Id};
use crate::model::row::Row;
/// A usable commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Commit {
    rev: i64,
    amount: i64,
    counter: i64,
    at: u32,
    /// The counter's key: `Id::index() + 1`, 0 for the one counter.
    ckey: u32,
}

impl Commit {
    fn key_id(&self) -> Option<Id> {
        self.ckey
            .checked_sub(1)
            .and_then(|i| Id::from_index(i as usize))
    }
}

impl Commit {
    /// The order the counter steps in: revision, then `seq`.
    fn key(&self) -> (i64, u32) {
        (self.rev, self.at)
    }
}

/// Commits in ascending revision order, each packed as LEB128 differences from the one before.
#[derive(Default)]
struct Packed {
    bytes: Vec<u8>,
    last: Commit,
}

impl Packed {
    /// Appends `c`, whose revision is at least the last one's.
    fn push(&mut self, c: Commit) {
        let last = std::mem::replace(&mut self.last, c);
        put(&mut self.bytes, c.rev.wrapping_sub(last.rev) as u64);
        put(&mut self.bytes, u64::from(c.at.wrapping_sub(last.at)));
        put(&mut self.bytes, zigzag(c.amount));
        put(
            &mut self.bytes,
            zigzag(c.counter.wrapping_sub(last.counter)),
        );
        put(&mut self.bytes, u64::from(c.ckey));
    }

    /// The commits, in the order pushed.
    fn iter(&self) -> impl Iterator<Item = Commit> + '_ {
        let mut bytes = self.bytes.as_slice();
        let mut last = Commit::default();
        std::iter::from_fn(move || {
            if bytes.is_empty() {
                return None;
            }
            let rev = last.rev.wrapping_add(take(&mut bytes) as i64);
            let at = last.at.wrapping_add(take(&mut bytes) as u32);
            let amount = unzigzag(take(&mut bytes));
            let counter = last.counter.wrapping_add(unzigzag(take(&mut bytes)));
            let ckey = take(&mut bytes) as u32;
            last = Commit {
                rev,
                amount,
                counter,
                at,
                ckey,
            };
            Some(last)
        })
    }
}

/// Appends `v` as LEB128.
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Takes one LEB128 number off the front of `bytes`.
#[inline]
fn take(bytes: &mut &[u8]) -> u64 {
    // Most differences fit one byte.
    if let [b @ 0..0x80, rest @ ..] = *bytes {
        *bytes = rest;
        return u64::from(*b);
    }
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i).min(63);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return v;
        }
    }
    *bytes = &[];
    v
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Decides `counter-exact`.
#[derive(Default)]
pub struct Rule {
    skips: Skips,
    /// The commits that came in revision order.
    in_order: Packed,
    /// The commits that came after one of a higher revision.
    late: Vec<Commit>,
    /// Whether any commit was seen, and whether any carried a `store_rev`.
    any: bool,
    revs: bool,
}

impl super::Rule for Rule {
    fn kinds(&self) -> &'static [Kind] {
        &[Kind::EffectCommitted]
    }

    fn row(&mut self, at: usize, r: &Row) {
        if r.kind != Kind::EffectCommitted {
            return;
        }
        self.any = true;
        self.revs |= r.store_rev().is_some();
        if !self
            .skips
            .usable(r, &[Field::StoreRev, Field::Amount, Field::Counter])
        {
            return;
        }
        if let (Some(rev), Some(amount), Some(counter)) = (r.store_rev(), r.amount(), r.counter()) {
            let c = Commit {
                rev,
                amount,
                counter,
                at: row32(at),
                ckey: r
                    .counter_key
                    .map_or(0, |k| row32(k.index()).saturating_add(1)),
            };
            if self.in_order.bytes.is_empty() || rev >= self.in_order.last.rev {
                self.in_order.push(c);
            } else {
                self.late.push(c);
            }
        }
    }

    fn finish(self: Box<Self>, ends: &Ends) -> Decision {
        // Without the stores' transaction numbers the commits have no order to step the counter in.
        if self.any && !self.revs {
            return Outcome::unknown(Invariant::CounterExact, Reason::NoStoreRev).into();
        }
        // A skipped commit would make every later step look wrong: decide nothing then.
        if let Some(reason) = self.skips.reason() {
            return Outcome::unknown(Invariant::CounterExact, reason).into();
        }
        let mut late = self.late;
        late.sort_unstable_by_key(Commit::key);
        let commits = merge(self.in_order.iter(), late.into_iter());
        // Per counter, in the order of its first commit: its key and chain. Commits of one
        // counter mostly follow one another, so the last one's chain is tried first.
        let mut chains: Vec<(Option<Id>, Chain)> = Vec::new();
        let mut index: FastMap<u32, usize> = FastMap::default();
        let mut last: Option<(u32, usize)> = None;
        let mut found = Examples::default();
        for c in commits {
            let at = c.at as usize;
            let i = match last {
                Some((ckey, i)) if ckey == c.ckey => i,
                _ => *index.entry(c.ckey).or_insert_with(|| {
                    let key = c.key_id();
                    chains.push((key, Chain::from(ends.counter_start(key))));
                    chains.len() - 1
                }),
            };
            last = Some((c.ckey, i));
            let (key, chain) = &mut chains[i];
            let expected = chain.value.saturating_add(c.amount);
            chain.sum = chain.sum.saturating_add(c.amount);
            if c.counter != expected {
                let finding = Finding::CounterStep {
                    key: *key,
                    commit: at,
                    prev: chain.prev,
                    expected,
                    found: c.counter,
                };
                let mut witness = vec![at];
                witness.extend(chain.prev);
                found.push(at, Violation::new(None, None, finding, witness));
            }
            // Go on from the value the store reported, so one bad step is reported once.
            chain.value = c.counter;
            chain.prev = Some(at);
        }
        if chains.is_empty() {
            chains.push((None, Chain::from(ends.counter_start(None))));
        }
        let mut incomplete = None;
        for (key, Chain { sum, .. }) in chains {
            match (ends.observed.as_ref(), ends.counter_final(key)) {
                (Some((at, _)), Some(counter)) if counter != sum => {
                    let finding = Finding::CounterFinal {
                        key,
                        observed_row: *at,
                        observed: counter,
                        expected: sum,
                    };
                    found.push(*at, Violation::new(None, None, finding, vec![*at]));
                }
                (Some(_), Some(_)) => {}
                _ => incomplete = Some(Reason::NoObservedCounter),
            }
        }
        let (kept, more) = found.into_parts();
        let commits: Vec<usize> = kept
            .iter()
            .filter_map(|v| match v.finding {
                Finding::CounterStep { commit, .. } => Some(commit),
                _ => None,
            })
            .collect();
        let outcome = Outcome::judge(Invariant::CounterExact, kept, more, incomplete);
        let gather = (!commits.is_empty()).then(|| {
            Box::new(Owners {
                commits,
                found: Vec::new(),
            }) as Box<dyn Gather>
        });
        Decision { outcome, gather }
    }
}

/// One counter's chain of commits so far.
struct Chain {
    value: i64,
    sum: i64,
    prev: Option<usize>,
}

impl From<i64> for Chain {
    /// A chain with no commit yet, at `start`.
    fn from(start: i64) -> Self {
        Chain {
            value: start,
            sum: start,
            prev: None,
        }
    }
}

/// Two sequences ascending by [`Commit::key`], merged into one.
fn merge(
    a: impl Iterator<Item = Commit>,
    b: impl Iterator<Item = Commit>,
) -> impl Iterator<Item = Commit> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y.key() < x.key() => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

/// Finds the event and task of each commit kept as an example.
struct Owners {
    commits: Vec<usize>,
    found: Vec<(usize, Option<Id>, Option<Id>)>,
}

impl Gather for Owners {
    fn row(&mut self, at: usize, r: &Row) {
        if self.commits.contains(&at) {
            self.found.push((at, r.event, r.task));
        }
    }

    fn finish(self: Box<Self>, outcome: &mut Outcome) {
        for v in &mut outcome.violations {
            let Finding::CounterStep { commit, .. } = v.finding else {
                continue;
            };
            if let Some(&(_, event, task)) = self.found.iter().find(|f| f.0 == commit) {
                (v.event, v.task) = (event, task);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(rev: i64, amount: i64, counter: i64, at: u32) -> Commit {
        Commit {
            rev,
            amount,
            counter,
            at,
            ckey: at % 3,
        }
    }

    #[test]
    fn packed_commits_come_back_as_pushed() {
        let commits = [
            commit(i64::MIN, -3, i64::MAX, 0),
            commit(-1, 0, i64::MIN, 7),
            commit(-1, i64::MAX, 0, 8),
            commit(i64::MAX, i64::MIN, -5, u32::MAX),
        ];
        let mut packed = Packed::default();
        for c in commits {
            packed.push(c);
        }
        assert_eq!(packed.iter().collect::<Vec<_>>(), commits);
    }

    #[test]
    fn late_commits_merge_in_revision_then_seq_order() {
        let in_order = [commit(1, 1, 1, 0), commit(5, 1, 3, 2), commit(5, 1, 4, 5)];
        let late = [commit(3, 1, 2, 4), commit(5, 1, 9, 3)];
        let merged: Vec<(i64, u32)> = merge(in_order.into_iter(), late.into_iter())
            .map(|c| c.key())
            .collect();
        assert_eq!(merged, [(1, 0), (3, 4), (5, 2), (5, 3), (5, 5)]);
    }
}
