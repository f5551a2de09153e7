//! Seeded chaos (`--chaos SEED`), so the same seed gives the same faults, recorded in
//! `run_start.detail.chaos`: [`lab`] draws up front over the lab's crash windows, actors and
//! services; [`system`] arms a team's system as it shows itself (the kinds each role reports, the
//! gaps between its steps, its services). Both draw from [`Dice`](super::dice::Dice), and what either draws at a time or after
//! a step is carried out as a fault of the one vocabulary ([`Nemesis`](super::spec::Nemesis)).

pub mod lab;
pub mod system;

pub use lab::{Action, ChaosPlan, ChaosReach, Swarm, Window, SWARM_WINDOWS};
pub use system::{Layout, SystemChaos};
