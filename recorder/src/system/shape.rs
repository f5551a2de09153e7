//! The shape of a team's system, learned from the spans it reports: which kinds each role reports
//! and how often (by role and by actor), the time from a process's step to its next step, and how
//! late its exports arrive. Chaos arms only what the shape holds, a fault that never fired is
//! explained by it, and `recorder explore` enumerates its schedules from it
//! (`run_end.detail.shape`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use outbox_trace::detail::{KindShape, RoleShape};
use outbox_trace::Kind;

/// What one step taught.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Learned {
    /// The first step of this kind its role reported.
    pub first_of_kind: bool,
    /// The same life's previous step and the time from it to this one: the first such gap after
    /// that kind for the role is `Some` in `first_gap`.
    pub after: Option<(Kind, Duration)>,
    /// `after` is the first gap measured after its kind for the role.
    pub first_gap: bool,
}

/// The shape learned so far.
#[derive(Debug, Clone, Default)]
pub struct ShapeLearner {
    roles: BTreeMap<String, RoleSeen>,
    actors: BTreeMap<String, BTreeMap<Kind, u64>>,
    /// Each life's last step: `(actor, incarnation)` -> (kind, unix ns).
    last: HashMap<(String, u32), (Kind, u64)>,
}

#[derive(Debug, Clone, Default)]
struct RoleSeen {
    kinds: BTreeMap<Kind, KindSeen>,
    /// Span end to arrival, in microseconds.
    lags_us: Vec<u64>,
}

#[derive(Debug, Clone, Default)]
struct KindSeen {
    count: u64,
    /// From a step of this kind to the same life's next step, in microseconds.
    gaps_us: Vec<u64>,
}

/// One reported step, as the shape sees it.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The reporting role.
    pub role: &'a str,
    /// The reporting actor (`worker-2`).
    pub actor: &'a str,
    /// Its life.
    pub incarnation: u32,
    /// The step's kind.
    pub kind: Kind,
    /// When the step happened (the span's time), unix ns.
    pub at_unix_ns: u64,
    /// When its export arrived, unix ns.
    pub arrived_unix_ns: u64,
}

impl ShapeLearner {
    /// Learns from one step.
    pub fn observe(&mut self, seen: Seen<'_>) -> Learned {
        let role = self.roles.entry(seen.role.to_string()).or_default();
        let first_of_kind = !role.kinds.contains_key(&seen.kind);
        role.kinds.entry(seen.kind).or_default().count += 1;
        role.lags_us
            .push(seen.arrived_unix_ns.saturating_sub(seen.at_unix_ns) / 1000);
        *self
            .actors
            .entry(seen.actor.to_string())
            .or_default()
            .entry(seen.kind)
            .or_insert(0) += 1;
        let life = (seen.actor.to_string(), seen.incarnation);
        let previous = self.last.insert(life, (seen.kind, seen.at_unix_ns));
        let mut learned = Learned {
            first_of_kind,
            ..Learned::default()
        };
        if let Some((kind, at)) = previous {
            let gap = seen.at_unix_ns.saturating_sub(at);
            let gaps = &mut role.kinds.entry(kind).or_default().gaps_us;
            learned.first_gap = gaps.is_empty();
            gaps.push(gap / 1000);
            learned.after = Some((kind, Duration::from_nanos(gap)));
        }
        learned
    }

    /// How many steps of `kind` `who` reported: a role counts all its instances, an actor itself.
    pub fn count(&self, who: &str, kind: Kind) -> u64 {
        self.roles
            .get(who)
            .and_then(|r| r.kinds.get(&kind))
            .map(|k| k.count)
            .or_else(|| self.actors.get(who).and_then(|a| a.get(&kind)).copied())
            .unwrap_or(0)
    }

    /// How many steps of `kind` every role together reported.
    pub fn count_all(&self, kind: Kind) -> u64 {
        self.roles
            .values()
            .filter_map(|r| r.kinds.get(&kind))
            .map(|k| k.count)
            .sum()
    }

    /// The median time from a step of `kind` of `role` to the same process's next step.
    pub fn median_gap(&self, role: &str, kind: Kind) -> Option<Duration> {
        let gaps = &self.roles.get(role)?.kinds.get(&kind)?.gaps_us;
        quantile(gaps, 50).map(Duration::from_micros)
    }

    /// The shape as `run_end.detail.shape` holds it.
    pub fn summary(&self) -> BTreeMap<String, RoleShape> {
        let ms = |us: u64| us.div_ceil(1000);
        self.roles
            .iter()
            .map(|(role, seen)| {
                let kinds = seen
                    .kinds
                    .iter()
                    .map(|(kind, k)| {
                        let shape = KindShape {
                            count: k.count,
                            gap_median_ms: quantile(&k.gaps_us, 50).map(ms),
                            gap_p90_ms: quantile(&k.gaps_us, 90).map(ms),
                            ..KindShape::default()
                        };
                        (kind.as_str().to_string(), shape)
                    })
                    .collect();
                let shape = RoleShape {
                    kinds,
                    export_lag_ms: quantile(&seen.lags_us, 50).map(ms),
                    export_lag_max_ms: seen.lags_us.iter().max().copied().map(ms),
                    ..RoleShape::default()
                };
                (role.clone(), shape)
            })
            .collect()
    }
}

/// The `pct`-th percentile of `values` (nearest rank), `None` when there are none.
fn quantile(values: &[u64], pct: usize) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (pct * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(actor: &str, kind: Kind, at_ms: u64) -> Seen<'_> {
        Seen {
            role: actor.split('-').next().unwrap(),
            actor,
            incarnation: 0,
            kind,
            at_unix_ns: at_ms * 1_000_000,
            arrived_unix_ns: at_ms * 1_000_000 + 2_000_000,
        }
    }

    #[test]
    fn counts_gaps_and_lags_are_learned_per_role_and_life() {
        let mut shape = ShapeLearner::default();
        let first = shape.observe(step("worker", Kind::Delivered, 0));
        assert!(first.first_of_kind && first.after.is_none());
        let next = shape.observe(step("worker", Kind::EffectCommitted, 200));
        assert_eq!(
            next.after,
            Some((Kind::Delivered, Duration::from_millis(200)))
        );
        assert!(next.first_gap);
        shape.observe(step("worker-2", Kind::Delivered, 300));
        let again = shape.observe(step("worker-2", Kind::EffectCommitted, 400));
        assert!(!again.first_gap && !again.first_of_kind);
        assert_eq!(shape.count("worker", Kind::Delivered), 2);
        assert_eq!(shape.count("worker-2", Kind::Delivered), 1);
        assert_eq!(shape.count("relay", Kind::Delivered), 0);
        assert_eq!(shape.count_all(Kind::EffectCommitted), 2);
        assert_eq!(
            shape.median_gap("worker", Kind::Delivered),
            Some(Duration::from_millis(100))
        );
        let summary = shape.summary();
        let worker = &summary["worker"];
        assert_eq!(worker.kinds["delivered"].count, 2);
        assert_eq!(worker.kinds["delivered"].gap_p90_ms, Some(200));
        assert_eq!(worker.kinds["effect_committed"].gap_median_ms, None);
        assert_eq!(worker.export_lag_ms, Some(2));
        // A new life's first step follows no step of the last life.
        let mut restarted = step("worker", Kind::Delivered, 900);
        restarted.incarnation = 1;
        assert_eq!(shape.observe(restarted).after, None);
    }
}
