//! The calm run, with no fault: tried twice (exit 4 if it still cannot run), judged as it ends
//! with `--fail-fast`; and what it leaves the search: the shape learned, the list's digest in
//! every schedule's mark, the list written for `--write-plan`.

use std::sync::atomic::AtomicU32;

use outbox_analyzer::check::RunVerdict;

use super::Explore;
use crate::cli::exit::Failure;
use crate::fault::coverage::Origin;
use crate::run::plan::{plan_digest, write_plan};
use crate::run::recording::Run;
use crate::system::scenario::{run_or_not, ScenarioOutcome, OWN_EXIT_RESTARTS};

impl Explore<'_> {
    /// The calm run: tried twice, then exit 4 if it could not run; with `--fail-fast`, judged
    /// as it ends, and the search stops if it is invalid.
    pub(super) async fn calm_run(&mut self, run: &Run<'_>) -> Result<ScenarioOutcome, Failure> {
        let restarts_left = AtomicU32::new(OWN_EXIT_RESTARTS);
        let env = self.env(run, &restarts_left);
        let from = match self.fail_fast {
            true => Some(run.recorder.seal().await.map_err(Failure::run)?),
            false => None,
        };
        let calm = self.calm_name();
        let outcome = match run_or_not(&env, &calm, &[], Origin::Named).await {
            Ok((_, outcome)) => outcome,
            Err(e) => {
                crate::process::reaper::sweep(None).await;
                return Err(e.into());
            }
        };
        if let Some(why) = &outcome.could_not_run {
            return Err(Failure::Unavailable(anyhow::anyhow!(
                "the calm run could not run: {why}"
            )));
        }
        if let Some(from) = from {
            if self.judged(run, from, &calm).await? == RunVerdict::Invalid {
                self.stopped_at = Some(calm);
            }
        }
        Ok(outcome)
    }

    /// After the calm run (or the one an earlier run completed): its shape kept, the digest of
    /// the list in the mark of every schedule, the list written for `--write-plan`.
    pub(super) fn calm_kept(&mut self, outcome: ScenarioOutcome) -> Result<bool, Failure> {
        self.shape = outcome.shape.clone();
        let recovered = outcome.recovered;
        self.calm = Some(outcome);
        let listed: Vec<String> = self.schedules().iter().map(ToString::to_string).collect();
        self.mark.plan = Some(plan_digest(&listed));
        self.mark.schedules = Some(listed.len() as u64);
        if let Some(path) = &self.write_plan {
            write_plan(path, &listed).map_err(|e| Failure::run(e.into()))?;
        }
        Ok(recovered)
    }
}
