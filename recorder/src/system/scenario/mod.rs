//! One scenario of a user's system, from fresh services to `run_end`: services up, setup, the
//! roles' processes, the tasks, the faults, the spans taken in over OTLP and written as rows, quiet,
//! the stores read back, everything stopped.
//!
//! The recorder's own rows (`run_start`, `crash`, `restart`, `fault`, `observed`, `run_end`) go
//! into the same journal as the spans' rows, on one clock, `seq` in the order they arrive. A kill
//! `after KIND` happens while the export that carried the step is held unanswered, so with a
//! synchronous exporter the process dies right after that step and before its next.
//!
//! [`run`] sets it up and ends it, [`prepare`] readies its services and runs setup, [`drive`] is
//! its loop; [`stage`] keeps the processes' lives (spawning, killing, restarting);
//! [`intake`] takes the exported spans in and sets off the step-following faults, [`heard`]
//! the steps the proxies read from the wire; [`faults`]
//! carries out pauses and timed faults; [`ending`] reads the stores back, stops everything and
//! writes `run_end`; [`commands`] runs setup, reset, quiet and observe; [`retry`] tries a scenario
//! that could not start once more; [`service_set`] holds a scenario's services as one set and
//! the idle sets kept between scenarios, [`kept`] decides which set a scenario runs on (`[reset]`); [`shared`] is what they all share: the run's environment, the
//! outcome, the errors and the timings.

mod commands;
mod drive;
mod ending;
mod faults;
mod heard;
mod intake;
mod kept;
mod prepare;
mod retry;
mod run;
mod service_set;
mod shared;
mod stage;

pub use prepare::closed_early;
pub use retry::run_or_not;
pub use run::run_scenario;
pub use service_set::KeptServices;
pub use shared::{
    scenario_dir, ScenarioOutcome, SystemEnv, SystemError, COULD_NOT_RUN, GRACE, OWN_EXIT_RESTARTS,
    SCENARIO_FILE,
};
