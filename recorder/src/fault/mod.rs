//! Faults: [`plan`] names the crash points between protocol steps and arms them in an actor's life,
//! [`chaos`] draws a seeded plan of crashes, SIGKILLs and service restarts (`--chaos`), and [`dice`]
//! is the seeded randomness both roll.

pub mod chaos;
pub mod dice;
pub mod duration;
pub mod plan;
