//! `--chaos SEED` for a team's system: a swarm draw over the targets its [`Shape`] offers (its
//! roles and instances, the kinds they report, its services), made up front as data (recorded in `run_start.detail.chaos`), so the same seed gives the same plan.
//!
//! - **Kills.** Each seed arms most roles (7 in 8) and most of the kinds they report (3 in 4): one
//!   pass through an armed step kills the process with a probability the seed picks, at most once
//!   or twice per armed step, always on a held export (so a chaos kill loses no span).
//! - **Pauses.** A role that has several instances gets two pauses per instance, each 5 to 200 ms
//!   (drawn on a log scale) after the export of the N-th `delivered` span of one instance (`worker-2`; the
//!   role's own name, `worker`, counts any instance's) is answered, so the process stops inside the
//!   work between a delivery and its commit, where a dedup race lives, for 3 to 5 s: long enough
//!   for a broker to hand the message to another instance. Without `delivered` among the kinds,
//!   each instance is paused once at a drawn time in the first half of the chaos window instead.
//! - **Services.** In one seed of three, a service is restarted at a drawn time.

use std::time::Duration;

use outbox_trace::Kind;
use serde::Serialize;

use crate::fault::dice::Dice;
use crate::fault::spec::{Nemesis, What, When};

/// Kinds a kill may follow when the file declares none: the steps of the protocol whose
/// aftermath a crash tests.
const DEFAULT_KINDS: [Kind; 6] = [
    Kind::TaskAccepted,
    Kind::PublishAcked,
    Kind::OutboxMarked,
    Kind::Delivered,
    Kind::EffectCommitted,
    Kind::Acked,
];
/// How likely one armed step kills, in per mille: one drawn per seed.
const CHANCES_PER_MILLE: [u64; 3] = [30, 80, 160];

/// One armed (role, kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Armed {
    /// The role.
    pub role: String,
    /// The kind whose span's end may kill it.
    pub kind: Kind,
    /// Kills left for this step.
    pub budget: u32,
}

/// The draw of one seed.
#[derive(Debug, Clone, Serialize)]
pub struct SystemChaos {
    /// The seed.
    pub seed: u64,
    /// The steps a kill may follow.
    pub armed: Vec<Armed>,
    /// The chance one armed step kills, per mille.
    pub chance_per_mille: u64,
    /// Pauses after steps, and timed faults inside the window (pauses, service restarts), as
    /// specs.
    pub faults: Vec<String>,
    #[serde(skip)]
    specs: Vec<Nemesis>,
    #[serde(skip)]
    dice: Dice,
}

/// How long after a `delivered` span's answer a chaos pause stops its process, in ms: past the
/// look-up that follows a delivery, inside the work before the commit. The work's length is the
/// service's own, so the delay is drawn evenly on a log scale: as likely 5-20 ms as 50-200 ms.
const PAUSE_DELAY_MS: (u64, u64) = (5, 200);
/// How long a chaos pause holds, in ms.
const PAUSE_HOLD_MS: (u64, u64) = (3000, 5000);

/// A duration in `[low, high]` ms drawn evenly on a log scale.
fn log_between(dice: &mut Dice, (low, high): (u64, u64)) -> Duration {
    let at = dice.below(1001) as f64 / 1000.0;
    let ms = low as f64 * (high as f64 / low as f64).powf(at);
    Duration::from_millis(ms.round() as u64)
}

/// What a team's system offers a chaos draw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Each role and how many instances it runs, in the file's order.
    pub roles: Vec<(String, u32)>,
    /// The kinds the system declares it reports (`records`), if it declares them.
    pub records: Option<Vec<String>>,
    /// Its services' names.
    pub services: Vec<String>,
}

impl SystemChaos {
    /// The plan of `seed` for `system` running `tasks` tasks within `window`.
    pub fn draw(seed: u64, window: Duration, tasks: u32, shape: &Shape) -> SystemChaos {
        let mut dice = Dice::new(seed);
        let kinds: Vec<Kind> = match &shape.records {
            Some(names) => names
                .iter()
                .filter_map(|n| n.parse::<Kind>().ok())
                .filter(|k| DEFAULT_KINDS.contains(k))
                .collect(),
            None => DEFAULT_KINDS.to_vec(),
        };
        let roles: Vec<&String> = shape.roles.iter().map(|(r, _)| r).collect();
        let mut armed = Vec::new();
        for role in &roles {
            if dice.below(8) == 0 {
                continue; // this seed leaves the role alone
            }
            for kind in &kinds {
                if dice.below(4) != 0 {
                    armed.push(Armed {
                        role: role.to_string(),
                        kind: *kind,
                        budget: 1 + dice.below(2) as u32,
                    });
                }
            }
        }
        let chance_per_mille = CHANCES_PER_MILLE[dice.below(3) as usize];
        let window_ms = window.as_millis().max(1) as u64;
        let mut specs = Vec::new();
        let between = |dice: &mut Dice, (low, high): (u64, u64)| {
            Duration::from_millis(low + dice.below(high - low + 1))
        };
        for role in roles.iter().copied() {
            let instances = shape
                .roles
                .iter()
                .find(|(r, _)| r == role)
                .map_or(1, |(_, n)| *n);
            if instances < 2 {
                continue; // nobody to take a paused process's message over
            }
            let spread = u64::from((tasks / instances / 2).max(1));
            for instance in 1..=instances {
                let target = if instance == 1 {
                    role.clone()
                } else {
                    format!("{role}-{instance}")
                };
                if kinds.contains(&Kind::Delivered) {
                    let mut nth = 0;
                    for _ in 0..2 {
                        nth += 1 + dice.below(spread) as u32;
                        let delay = log_between(&mut dice, PAUSE_DELAY_MS);
                        specs.push(Nemesis {
                            what: What::Pause {
                                target: target.clone(),
                                hold: between(&mut dice, PAUSE_HOLD_MS),
                                unless_alone: true,
                            },
                            when: When::After {
                                kind: Kind::Delivered,
                                nth,
                                delay,
                            },
                        });
                    }
                } else {
                    let at = Duration::from_millis(dice.below(window_ms / 2 + 1));
                    specs.push(Nemesis {
                        what: What::Pause {
                            target,
                            hold: between(&mut dice, PAUSE_HOLD_MS),
                            unless_alone: true,
                        },
                        when: When::At(at),
                    });
                }
            }
        }
        let services: Vec<&String> = shape.services.iter().collect();
        if !services.is_empty() && dice.below(3) == 0 {
            let service = services[dice.below(services.len() as u64) as usize].clone();
            specs.push(Nemesis {
                what: What::Restart { service },
                when: When::At(Duration::from_millis(dice.below(window_ms))),
            });
        }
        SystemChaos {
            seed,
            armed,
            chance_per_mille,
            faults: specs.iter().map(ToString::to_string).collect(),
            specs,
            dice,
        }
    }

    /// The timed faults of the draw.
    pub fn timed(&self) -> impl Iterator<Item = &Nemesis> {
        self.specs.iter().filter(|f| f.at().is_some())
    }

    /// The faults of the draw that follow a step.
    pub fn following(&self) -> impl Iterator<Item = &Nemesis> {
        self.specs.iter().filter(|f| f.follows_a_step())
    }

    /// Whether the end of a span of `kind` reported by `role` kills it now (spends that step's
    /// budget).
    pub fn strikes(&mut self, role: &str, kind: Kind) -> bool {
        let Some(armed) = self
            .armed
            .iter_mut()
            .find(|a| a.role == role && a.kind == kind && a.budget > 0)
        else {
            return false;
        };
        if self.dice.below(1000) < self.chance_per_mille {
            armed.budget -= 1;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system(records: &[&str]) -> Shape {
        Shape {
            roles: vec![("api".into(), 1), ("worker".into(), 2)],
            records: (!records.is_empty()).then(|| records.iter().map(|r| r.to_string()).collect()),
            services: vec!["redis".into()],
        }
    }

    #[test]
    fn a_seed_draws_one_plan_and_pauses_every_instance_twice_after_its_deliveries() {
        let sys = system(&[]);
        let window = Duration::from_secs(2);
        let plan = SystemChaos::draw(7, window, 40, &sys);
        let again = SystemChaos::draw(7, window, 40, &sys);
        assert_eq!(plan.faults, again.faults);
        assert_eq!(plan.armed, again.armed);
        let pauses: Vec<&Nemesis> = plan.following().collect();
        assert_eq!(pauses.len(), 4, "{:?}", plan.faults);
        for target in ["worker", "worker-2"] {
            let nths: Vec<u32> = pauses
                .iter()
                .filter_map(|f| match (&f.what, f.when) {
                    (
                        What::Pause {
                            target: t, hold, ..
                        },
                        When::After {
                            kind: Kind::Delivered,
                            nth,
                            delay,
                        },
                    ) if t == target => {
                        assert!((5..=200).contains(&delay.as_millis()), "{f}");
                        assert!((3000..=5000).contains(&hold.as_millis()), "{f}");
                        Some(nth)
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(nths.len(), 2, "{target}: {:?}", plan.faults);
            assert!(nths[0] < nths[1] && nths[1] <= 20, "{target}: {nths:?}");
        }
        // Over many seeds, most roles and most of their kinds are armed, each with a budget.
        let armed: usize = (1..=40)
            .map(|seed| SystemChaos::draw(seed, window, 40, &sys).armed.len())
            .sum();
        let possible = 40 * 2 * DEFAULT_KINDS.len();
        assert!(armed * 2 > possible, "{armed} of {possible}");
    }

    #[test]
    fn without_deliveries_in_the_records_the_pauses_come_at_drawn_times() {
        let sys = system(&["task_accepted", "effect_committed"]);
        let plan = SystemChaos::draw(3, Duration::from_secs(2), 40, &sys);
        assert_eq!(plan.following().count(), 0, "{:?}", plan.faults);
        let paused: Vec<String> = plan
            .timed()
            .filter_map(|f| match (&f.what, f.when) {
                (What::Pause { target, .. }, When::At(at)) => {
                    assert!(at.as_millis() <= 1000, "{f}");
                    Some(target.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(paused, ["worker", "worker-2"]);
        assert!(plan
            .armed
            .iter()
            .all(|a| matches!(a.kind, Kind::TaskAccepted | Kind::EffectCommitted)));
    }

    #[test]
    fn an_armed_step_kills_at_most_its_budget() {
        let sys = system(&[]);
        let mut plan = SystemChaos::draw(11, Duration::from_secs(2), 40, &sys);
        let Some(first) = plan.armed.first().cloned() else {
            panic!("seed 11 arms something: {plan:?}");
        };
        let kills = (0..10_000)
            .filter(|_| plan.strikes(&first.role, first.kind))
            .count();
        assert_eq!(kills as u32, first.budget);
        assert!(!plan.strikes("nobody", first.kind));
    }
}
