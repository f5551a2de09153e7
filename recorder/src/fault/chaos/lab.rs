//! Random faults from a seed (`--chaos SEED`) for the lab, recorded in the trace
//! (`run_start.detail.chaos`, then a `crash` or `fault` row per firing).
//!
//! Two draws, from the one seed. Up front, a swarm draw, in the manner of FoundationDB's BUGGIFY
//! and swarm testing: each seed picks which named protocol windows (the crash points between two
//! steps) are armed, how likely one pass through each is to kill the actor, how many times each
//! may fire, and which workers they hit. So one seed hammers the gap between commit and ACK,
//! another the relay's publish and mark, another leaves the workers alone. Every window has a
//! budget of firings, so every scenario ends quiet and recovered. Then, as the actors report
//! their steps, the draw a team's system gets ([`SystemChaos`](super::SystemChaos)): a (role,
//! kind) pair armed when the role first reports that kind (`kill worker after acked 3`, a
//! restart or pause of a service member right after such a step), over what [`ChaosReach`]
//! says the run may hit.

use std::time::Duration;

use serde::Serialize;

use crate::journal::author::{ActorId, Role};

use super::SystemChaos;
use crate::fault::dice::Dice;
use crate::fault::plan::{CrashPoint, Fault, FaultPlan};

/// The windows a swarm draw may arm: every crash point a load run passes through. The external
/// call's two points are left out: only the `external-effect` scenario calls the receiver, and it
/// arms them itself.
pub const SWARM_WINDOWS: [CrashPoint; 7] = [
    CrashPoint::ApiBetweenTaskAndOutbox,
    CrashPoint::ApiBeforeReportingCreate,
    CrashPoint::ApiBeforeReportingIntent,
    CrashPoint::RelayBeforePublish,
    CrashPoint::RelayBetweenPublishAndMark,
    CrashPoint::WorkerBetweenCommitAndAck,
    CrashPoint::WorkerBeforeReportingCommit,
];

/// In how many seeds of ten a window is armed.
const ARMED_IN_TEN: u64 = 9;
/// How likely one pass through an armed window kills the actor, in per mille: one is drawn per
/// window and seed.
const CHANCES_PER_MILLE: [u32; 3] = [20, 50, 120];
/// How many times an armed window fires per four seconds of chaos window, at most: one is drawn
/// per window and seed.
const BUDGETS_PER_4S: [u32; 3] = [1, 3, 6];
/// In how many seeds of four a given worker is among those hit (at least one always is).
const WORKER_HIT_IN_FOUR: u64 = 3;

/// What a plan may hit: the workers it may kill and the servers it may restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChaosReach {
    /// Worker processes the scenario runs; the draw picks the workers it hits among them.
    pub workers: usize,
    /// Broker servers the recorder may restart (0: none).
    pub broker_members: usize,
    /// Store servers the recorder may restart (0: none).
    pub store_members: usize,
}

/// A window armed by the draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The crash point, armed as a `Chance` fault in each new life of the role it belongs to.
    pub point: CrashPoint,
    /// How likely one pass through it kills the actor, in per mille.
    pub per_mille: u32,
    /// How many times it fires in a scenario, at most (a life that holds it when the budget runs
    /// out may still use it once).
    pub budget: u32,
}

/// The plan: the armed windows, and what the draw on the actors' steps may hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChaosPlan {
    /// The seed it came from; each life's dice are seeded from it, so one seed replays one plan.
    pub seed: u64,
    /// How long from the scenario's start faults are injected.
    pub window_ms: u64,
    /// The windows armed for this seed.
    pub windows: Vec<Window>,
    /// The workers (0-based: `worker-1` is 0) the worker windows hit.
    pub workers_hit: Vec<usize>,
    /// How the actors' steps arm faults: the rules of a team's system's draw.
    pub rules: &'static str,
    /// The workers and service members the draw on the steps may hit.
    #[serde(skip)]
    pub reach: ChaosReach,
}

impl ChaosPlan {
    /// The plan for `seed`: a swarm draw of windows (their budgets grow with `window`), and
    /// the workers they hit, within `reach`.
    pub fn new(seed: u64, window: Duration, reach: ChaosReach) -> Self {
        let mut rng = Dice::new(seed);
        let window_ms = window.as_millis() as u64;
        let fours = (window_ms / 4000).max(1) as u32;
        let windows = SWARM_WINDOWS
            .into_iter()
            .filter_map(|point| {
                let armed = rng.below(10) < ARMED_IN_TEN;
                let per_mille = CHANCES_PER_MILLE[rng.below(3) as usize];
                let budget = BUDGETS_PER_4S[rng.below(3) as usize] * fours;
                armed.then_some(Window {
                    point,
                    per_mille,
                    budget,
                })
            })
            .collect();
        let mut workers_hit: Vec<usize> = (0..reach.workers)
            .filter(|_| rng.below(4) < WORKER_HIT_IN_FOUR)
            .collect();
        if workers_hit.is_empty() {
            workers_hit.push(rng.below(reach.workers as u64) as usize);
        }
        ChaosPlan {
            seed,
            window_ms,
            windows,
            workers_hit,
            rules: SystemChaos::RULES,
            reach,
        }
    }

    /// The seed of the dice in life `incarnation` of actor `id`: each life rolls its own way, and
    /// the same seed rolls the same way again.
    pub fn life_seed(&self, id: ActorId, incarnation: u32) -> u64 {
        let role = id.role as u64;
        let index = u64::from(id.index.unwrap_or(0));
        let mut dice = Dice::new(self.seed ^ (role << 48) ^ (index << 32) ^ u64::from(incarnation));
        dice.roll()
    }
}

/// The swarm's windows during one scenario: which of them still have firings left, and what they
/// arm in each new actor life.
#[derive(Debug)]
pub struct Swarm<'a> {
    plan: &'a ChaosPlan,
    left: Vec<(CrashPoint, u32)>,
}

impl<'a> Swarm<'a> {
    /// Every window of `plan` with its whole budget.
    pub fn new(plan: &'a ChaosPlan) -> Self {
        let left = plan.windows.iter().map(|w| (w.point, w.budget)).collect();
        Swarm { plan, left }
    }

    /// Arms `faults` of life `incarnation` of actor `id`: the chance faults of the windows of its
    /// role with firings left (a worker's only if the draw hit that worker), in place of those
    /// of its last life, and the seed of its dice.
    pub fn arm(&self, faults: &mut FaultPlan, id: ActorId, incarnation: u32) {
        faults.faults.retain(|f| !matches!(f, Fault::Chance { .. }));
        faults.seed = self.plan.life_seed(id, incarnation);
        let worker = id.index.map_or(0, |i| i.saturating_sub(1) as usize);
        if id.role == Role::Worker && !self.plan.workers_hit.contains(&worker) {
            return;
        }
        for w in &self.plan.windows {
            let left = self.left.iter().any(|&(p, n)| p == w.point && n > 0);
            if left && w.point.role() == id.role {
                faults.faults.push(Fault::Chance {
                    point: w.point,
                    per_mille: w.per_mille,
                });
            }
        }
    }

    /// Counts a fault that fired against its window's budget.
    pub fn fired(&mut self, fault: &Fault) {
        if let Fault::Chance { point, .. } = fault {
            for (p, n) in &mut self.left {
                if p == point {
                    *n = n.saturating_sub(1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    const CLUSTER: ChaosReach = ChaosReach {
        workers: 4,
        broker_members: 3,
        store_members: 3,
    };

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_another() {
        let window = Duration::from_secs(20);
        let a = ChaosPlan::new(7, window, CLUSTER);
        assert_eq!(a, ChaosPlan::new(7, window, CLUSTER));
        assert_ne!(a, ChaosPlan::new(8, window, CLUSTER));
    }

    /// The windows a seed draws stay where they were when the plan also drew timed kills and
    /// restarts: drawn first, from the same dice, in the same order.
    #[test]
    fn a_seed_draws_the_windows_it_always_drew() {
        use CrashPoint::*;
        let reach = ChaosReach {
            workers: 2,
            broker_members: 1,
            store_members: 1,
        };
        let plan = ChaosPlan::new(7, Duration::from_secs(5), reach);
        let drawn: Vec<(CrashPoint, u32, u32)> = plan
            .windows
            .iter()
            .map(|w| (w.point, w.per_mille, w.budget))
            .collect();
        assert_eq!(
            drawn,
            [
                (ApiBetweenTaskAndOutbox, 20, 1),
                (ApiBeforeReportingCreate, 50, 1),
                (ApiBeforeReportingIntent, 20, 6),
                (RelayBeforePublish, 50, 3),
                (RelayBetweenPublishAndMark, 50, 1),
                (WorkerBetweenCommitAndAck, 50, 6),
                (WorkerBeforeReportingCommit, 50, 3),
            ]
        );
        assert_eq!(plan.workers_hit, [0, 1]);
        let one = ChaosPlan::new(1, Duration::from_secs(5), reach);
        assert_eq!(one.windows.len(), 6);
        assert!(one
            .windows
            .iter()
            .all(|w| w.point != WorkerBetweenCommitAndAck));
    }

    #[test]
    fn the_swarm_arms_each_window_in_some_seeds_and_not_in_others() {
        let plans: Vec<ChaosPlan> = (1..=100)
            .map(|seed| ChaosPlan::new(seed, Duration::from_secs(4), CLUSTER))
            .collect();
        for point in SWARM_WINDOWS {
            let armed = plans
                .iter()
                .filter(|p| p.windows.iter().any(|w| w.point == point))
                .count();
            assert!(
                (70..100).contains(&armed),
                "{point} armed in {armed} of 100"
            );
        }
        let chances: HashSet<u32> = plans
            .iter()
            .flat_map(|p| p.windows.iter().map(|w| w.per_mille))
            .collect();
        assert_eq!(chances.len(), CHANCES_PER_MILLE.len());
        let hit: HashSet<usize> = plans.iter().map(|p| p.workers_hit.len()).collect();
        assert!(hit.len() > 1 && !hit.contains(&0), "{hit:?}");
        // Budgets grow with the chaos window.
        let long = ChaosPlan::new(1, Duration::from_secs(12), CLUSTER);
        let short = ChaosPlan::new(1, Duration::from_secs(4), CLUSTER);
        assert_eq!(long.windows[0].budget, 3 * short.windows[0].budget);
    }

    fn plan_with(windows: Vec<Window>, workers_hit: Vec<usize>) -> ChaosPlan {
        ChaosPlan {
            seed: 1,
            window_ms: 4000,
            windows,
            workers_hit,
            rules: SystemChaos::RULES,
            reach: CLUSTER,
        }
    }

    fn chance_points(plan: &FaultPlan) -> Vec<CrashPoint> {
        plan.faults
            .iter()
            .filter_map(|f| match f {
                Fault::Chance { point, .. } => Some(*point),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_window_arms_its_role_and_the_workers_hit_until_its_budget_is_spent() {
        let window = |point, budget| Window {
            point,
            per_mille: 50,
            budget,
        };
        let plan = plan_with(
            vec![
                window(CrashPoint::RelayBeforePublish, 2),
                window(CrashPoint::WorkerBetweenCommitAndAck, 1),
            ],
            vec![1],
        );
        let mut swarm = Swarm::new(&plan);
        let worker = |i| ActorId {
            role: Role::Worker,
            index: Some(i),
        };
        let mut faults = FaultPlan::new(vec![Fault::Crash {
            point: CrashPoint::RelayBetweenPublishAndMark,
        }]);
        swarm.arm(&mut faults, ActorId::only(Role::Relay), 0);
        assert_eq!(chance_points(&faults), [CrashPoint::RelayBeforePublish]);
        assert_eq!(faults.faults.len(), 2, "scripted faults stay: {faults:?}");
        // Worker-2 (index 1) is hit, worker-1 is not.
        let mut w2 = FaultPlan::default();
        swarm.arm(&mut w2, worker(2), 0);
        assert_eq!(chance_points(&w2), [CrashPoint::WorkerBetweenCommitAndAck]);
        let mut w1 = FaultPlan::default();
        swarm.arm(&mut w1, worker(1), 0);
        assert!(w1.faults.is_empty());
        // Each life rolls its own dice.
        let mut next = FaultPlan::default();
        swarm.arm(&mut next, worker(2), 1);
        assert_ne!(w2.seed, next.seed);
        // Spent budgets arm nothing more; the relay's window had two firings.
        swarm.fired(&w2.faults[0]);
        swarm.arm(&mut w2, worker(2), 1);
        assert!(w2.faults.is_empty());
        let relay_window = faults.faults[1].clone();
        swarm.fired(&relay_window);
        swarm.arm(&mut faults, ActorId::only(Role::Relay), 1);
        assert_eq!(chance_points(&faults), [CrashPoint::RelayBeforePublish]);
        swarm.fired(&relay_window);
        swarm.arm(&mut faults, ActorId::only(Role::Relay), 2);
        assert!(chance_points(&faults).is_empty());
    }

    #[test]
    fn a_chance_fault_fires_about_as_often_as_it_says() {
        let point = CrashPoint::WorkerBetweenCommitAndAck;
        let plan = |per_mille| FaultPlan::new(vec![Fault::Chance { point, per_mille }]);
        let mut dice = Dice::new(7);
        let fires = |plan: &FaultPlan, dice: &mut Dice| {
            (0..10_000)
                .filter(|_| plan.crash_at(point, dice).is_some())
                .count()
        };
        assert_eq!(fires(&plan(0), &mut dice), 0);
        assert_eq!(fires(&plan(1000), &mut dice), 10_000);
        let some = fires(&plan(50), &mut dice);
        assert!((400..600).contains(&some), "{some} of 10000 at 5%");
        assert!(plan(1000)
            .crash_at(CrashPoint::RelayBeforePublish, &mut dice)
            .is_none());
    }
}
