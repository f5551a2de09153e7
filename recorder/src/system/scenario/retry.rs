//! A scenario that may not start: one whose services never get ready, whose setup fails, whose
//! roles cannot start or whose first task reaches nothing is tried once more, on fresh ports and
//! in a fresh directory; if it still cannot start, it is a scenario that could not run (a
//! `run_start` and a `run_end` whose reason is `could not run: <why>`, no `observed` row), and
//! the caller goes on.

use std::time::Instant;

use super::prepare::closed_early;
use super::run::run_scenario;
use super::shared::{ScenarioOutcome, SystemEnv, SystemError, COULD_NOT_RUN};
use crate::fault::coverage::Origin;
use crate::fault::spec::Nemesis;

/// How many times a scenario is tried before it could not run.
pub const TRIES: usize = 2;

/// Runs scenario `name`, once more if it could not start; returns the name the last try ran as
/// in the trace (a try that had written rows before it found it could not run keeps them under
/// its name, so the next try is `<name>-retry`) and its outcome, `could_not_run` set if none
/// started.
pub async fn run_or_not(
    env: &SystemEnv<'_>,
    name: &str,
    faults: &[Nemesis],
    origin: Origin,
) -> Result<(String, ScenarioOutcome), SystemError> {
    let mut scenario = name.to_string();
    for tried in 1..=TRIES {
        let last = tried == TRIES || env.shutdown.is_cancelled();
        let started = Instant::now();
        // A first try that wrote rows keeps them under its name; the next one says which it retries.
        let retry_of = (scenario != name).then_some(name);
        let why = match run_scenario(env, &scenario, retry_of, faults, origin).await {
            Ok(outcome) => match &outcome.could_not_run {
                Some(why) if !last => {
                    let why = why.clone();
                    scenario = format!("{name}-retry");
                    why
                }
                _ => return Ok((scenario, outcome)),
            },
            Err(SystemError::Unavailable(why)) if last => {
                let reason = format!("{COULD_NOT_RUN}: {why}");
                let mut outcome = closed_early(env, &scenario, retry_of, started, &reason).await?;
                outcome.could_not_run = Some(why);
                return Ok((scenario, outcome));
            }
            Err(SystemError::Unavailable(why)) => why,
            Err(e) => return Err(e),
        };
        eprintln!("recorder: scenario {name} could not start ({why}); trying it once more");
    }
    unreachable!("the last try returns")
}
