//! The one fault layer, for the built-in lab and a team's own system alike.
//!
//! - [`spec`]: the vocabulary, a [`spec::Nemesis`] (what: kill, pause, restart a service; when: at
//!   a time or after the N-th step of a kind), parsed from and shown in its one-line form;
//! - [`trigger`]: which step-following faults a reported step sets off (pure);
//! - [`coverage`]: what a scenario tried, each fault with how often it fired (or why not);
//! - [`ledger`]: a scenario's faults as they go: the timed ones still to come, what each fired,
//!   and what the scenario tried at its end;
//! - [`apply`]: a timed fault carried out on the primitives a subject offers ([`apply::Targets`]);
//! - [`pauses`]: the pauses called for and begun, as data;
//! - [`plan`]: the lab's in-actor failpoints (crash at a named point, lose a publish ACK, stall
//!   before a commit), points inside a cooperating process;
//! - [`chaos`]: the seeded swarm draws, the lab's and a team's system's, over what each offers;
//!   [`dice`] is the seeded randomness they roll;
//! - [`duration`]: durations as specs write them;
//! - [`schedules`]: the single-fault schedules of a systematic search, from a learned shape.

pub mod apply;
pub mod chaos;
pub mod coverage;
pub mod dice;
pub mod duration;
pub mod ledger;
pub mod pauses;
pub mod plan;
pub mod protocols;
pub mod schedules;
pub mod spec;
pub mod trigger;
