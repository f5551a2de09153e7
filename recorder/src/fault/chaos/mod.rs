//! Seeded chaos (`--chaos SEED`), drawn up front as data so the same seed gives the same plan,
//! recorded in `run_start.detail.chaos`: [`lab`] draws over the lab's crash windows, actors and
//! services; [`system`] over what a team's system offers (its roles, instances, reported kinds and
//! services). Both draw from [`Dice`](super::dice::Dice), and what either draws at a time or after
//! a step is carried out as a fault of the one vocabulary ([`Nemesis`](super::spec::Nemesis)).

pub mod lab;
pub mod system;

pub use lab::{Action, ChaosPlan, Swarm, Targets, Window, SWARM_WINDOWS};
pub use system::{Shape, SystemChaos};
