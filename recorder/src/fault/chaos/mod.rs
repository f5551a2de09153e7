//! Seeded chaos (`--chaos SEED`), so the same seed gives the same faults, recorded in
//! `run_start.detail.chaos`: [`lab`] draws the lab's crash windows up front; [`system`] arms a
//! subject as it shows itself (the kinds each role reports, the gaps between its steps, its
//! services): a team's system, and the lab's actors beside their windows. Both draw from
//! [`Dice`](super::dice::Dice), and what is armed after a step is carried out as a fault of the
//! one vocabulary ([`Nemesis`](super::spec::Nemesis)).

pub mod lab;
pub mod system;

pub use lab::{ChaosPlan, ChaosReach, Swarm, Window, SWARM_WINDOWS};
pub use system::{Layout, SystemChaos};
