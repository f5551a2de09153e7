//! `--chaos SEED` for a user's system: a swarm draw over the faults a system file allows, made up
//! front as data (recorded in `run_start.detail.chaos`), so the same seed gives the same plan.
//!
//! Each seed arms some roles and some of the kinds they report: one pass through an armed step
//! kills the process with a probability the seed picks, within a budget of kills, always on a
//! held export (so a chaos kill loses no span). On top, inside the first half of the chaos window
//! (while tasks are moving), each instance of one role that has several is paused once (2 to 4 s:
//! long enough for a broker to hand its message to another consumer), and in some seeds a service
//! is restarted.

use std::time::Duration;

use outbox_trace::Kind;
use serde::Serialize;

use super::faults::FaultSpec;
use super::file::System;
use crate::fault::dice::Dice;

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
    /// Kills at most.
    pub budget: u32,
    /// Timed faults inside the window (pauses, service restarts), as specs.
    pub timed: Vec<String>,
    #[serde(skip)]
    timed_specs: Vec<FaultSpec>,
    #[serde(skip)]
    dice: Dice,
}

impl SystemChaos {
    /// The plan of `seed` for `system` within `window`.
    pub fn draw(seed: u64, window: Duration, system: &System) -> SystemChaos {
        let mut dice = Dice::new(seed);
        let kinds: Vec<Kind> = match &system.file.records {
            Some(names) => names
                .iter()
                .filter_map(|n| n.parse::<Kind>().ok())
                .filter(|k| DEFAULT_KINDS.contains(k))
                .collect(),
            None => DEFAULT_KINDS.to_vec(),
        };
        let roles: Vec<&String> = system.file.roles.keys().collect();
        let mut armed = Vec::new();
        for role in &roles {
            if dice.below(4) == 0 {
                continue; // this seed leaves the role alone
            }
            for kind in &kinds {
                if dice.below(2) == 0 {
                    armed.push(Armed {
                        role: role.to_string(),
                        kind: *kind,
                    });
                }
            }
        }
        let chance_per_mille = CHANCES_PER_MILLE[dice.below(3) as usize];
        let budget = 1 + dice.below(4) as u32;
        let window_ms = window.as_millis().max(1) as u64;
        let mut timed_specs = Vec::new();
        let multi: Vec<&String> = roles
            .iter()
            .copied()
            .filter(|r| system.file.roles[*r].instances > 1)
            .collect();
        if !multi.is_empty() {
            // Each instance of one such role is paused once, at its own time: a pause that lands
            // while that instance holds no message shows nothing, so one pause alone is too few.
            let role = multi[dice.below(multi.len() as u64) as usize];
            for instance in 1..=system.file.roles[role].instances {
                let target = if instance == 1 {
                    role.clone()
                } else {
                    format!("{role}-{instance}")
                };
                timed_specs.push(FaultSpec::PauseAt {
                    target,
                    at: Duration::from_millis(dice.below(window_ms / 2 + 1)),
                    hold: Duration::from_millis(2000 + dice.below(2000)),
                });
            }
        }
        let services: Vec<&String> = system.file.services.keys().collect();
        if !services.is_empty() && dice.below(3) == 0 {
            timed_specs.push(FaultSpec::RestartAt {
                service: services[dice.below(services.len() as u64) as usize].clone(),
                at: Duration::from_millis(dice.below(window_ms)),
            });
        }
        SystemChaos {
            seed,
            armed,
            chance_per_mille,
            budget,
            timed: timed_specs.iter().map(ToString::to_string).collect(),
            timed_specs,
            dice,
        }
    }

    /// The timed faults of the draw.
    pub fn timed(&self) -> &[FaultSpec] {
        &self.timed_specs
    }

    /// Whether the end of a span of `kind` reported by `role` kills it now (spends the budget).
    pub fn strikes(&mut self, role: &str, kind: Kind) -> bool {
        if self.budget == 0 || !self.armed.iter().any(|a| a.role == role && a.kind == kind) {
            return false;
        }
        if self.dice.below(1000) < self.chance_per_mille {
            self.budget -= 1;
            return true;
        }
        false
    }
}
