//! Running one lab scenario ([`run_scenario`]): the actor process ([`actor`]: what each life
//! runs, and the spec it reads), the scenario table ([`scenario`]), what is ready before the
//! actors start ([`prepare`]) and what each actor life starts with ([`life_spec`]), the actor
//! processes kept alive ([`cast`], over [`supervisor`]), their held reports answered ([`held`])
//! and the chaos draw armed on them ([`chaos`]), the loop ([`drive`]) with the faults carried out
//! ([`inject`]) on the services as specs name them ([`service_names`]), the end ([`ending`])
//! with the ground truth read back ([`observer`]), the actors put behind proxies for wire faults
//! ([`wire`]); [`env`] is what a scenario shares with the whole run.

pub mod actor;
pub mod cast;
pub mod chaos;
pub mod drive;
pub mod ending;
pub mod env;
pub mod held;
pub mod inject;
pub mod life_spec;
pub mod observer;
pub mod prepare;
pub mod run_scenario;
pub mod scenario;
pub mod service_names;
pub mod supervisor;
pub mod wire;
