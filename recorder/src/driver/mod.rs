//! Running one scenario ([`run_scenario`]): the scenario table ([`scenario`]), the actor processes
//! ([`actor`]: what each life runs, and the spec it reads) kept alive ([`cast`], over
//! [`supervisor`]), the chaos plan carried out ([`inject`]), the ground
//! truth read back ([`observer`]), the actors put behind proxies for wire faults ([`wire`]); [`env`]
//! is what a scenario shares with the whole run.

pub mod actor;
pub mod cast;
pub mod env;
pub mod held;
pub mod inject;
pub mod observer;
pub mod run_scenario;
pub mod scenario;
pub mod supervisor;
pub mod wire;
