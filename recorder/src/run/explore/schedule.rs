//! One schedule run as a scenario of its own (a fault, or a pair), and its verdict judged on its
//! own rows as it ends when the search may stop on it or shows its progress.

use std::sync::atomic::AtomicU32;

use outbox_analyzer::check::RunVerdict;
use outbox_trace::detail::FaultTried;

use super::{Explore, Tried};
use crate::cli::exit::Failure;
use crate::fault::coverage::Origin;
use crate::fault::spec::Nemesis;
use crate::journal::writer::{parts_dir, segment_path};
use crate::run::recording::Run;
use crate::system::scenario::{run_or_not, OWN_EXIT_RESTARTS};

impl Explore<'_> {
    /// Runs one schedule (one fault, or a pair) as scenario `name`, with a budget of its own for
    /// processes that exit. It fired when each of its faults did.
    pub(super) async fn one(
        &self,
        run: &Run<'_>,
        name: String,
        faults: Vec<Nemesis>,
    ) -> Result<Tried, Failure> {
        let restarts_left = AtomicU32::new(OWN_EXIT_RESTARTS);
        let env = self.env(run, &restarts_left);
        // Judged as it ends when the search may stop on it, or shows its progress.
        let judge = self.fail_fast || self.config.progress;
        let from = match judge {
            true => Some(run.recorder.seal().await.map_err(Failure::run)?),
            false => None,
        };
        let (name, outcome) = run_or_not(&env, &name, &faults, Origin::Searched)
            .await
            .map_err(Failure::from)?;
        let judged = match from {
            Some(from) => Some(self.judged(run, from, &name).await?),
            None => None,
        };
        let (counts, least) =
            crate::run::resume::least_fired(faults.iter().map(ToString::to_string), &outcome.tried);
        Ok(Tried {
            scenario: name,
            spec: counts
                .iter()
                .map(|t| t.spec.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            fault: FaultTried {
                spec: least.spec.clone(),
                ..least
            },
            recovered: outcome.recovered,
            judged,
            could_not_run: outcome.could_not_run,
        })
    }

    /// The verdict of scenario `name`, judged by the analyzer on its own rows: those of the
    /// segments written since segment `from` (every row of a scenario that began after it),
    /// gathered into a file of their own in the run's working directory (never among the
    /// segments, which are the trace) for as long as the judging takes.
    pub(super) async fn judged(
        &self,
        run: &Run<'_>,
        from: u32,
        name: &str,
    ) -> Result<RunVerdict, Failure> {
        let to = run.recorder.seal().await.map_err(Failure::run)?;
        let parts = parts_dir(&self.config.out);
        let judging = run.workdir.join(format!("judging-{name}.parquet"));
        let gathered = (|| -> Result<(), outbox_trace::TraceError> {
            let mut rows = Vec::new();
            for n in from + 1..=to {
                let segment = segment_path(&parts, n);
                if segment.exists() {
                    let trace = outbox_trace::read_trace(&segment)?;
                    rows.extend(trace.events.into_iter().filter(|e| e.scenario == name));
                }
            }
            let mut writer = outbox_trace::TraceWriter::create(&judging, None)?;
            writer.write(&rows)?;
            writer.finish()?;
            Ok(())
        })();
        let judged = gathered.map_err(|e| e.to_string()).and_then(|()| {
            outbox_analyzer::check::check_paths(std::slice::from_ref(&judging))
                .map_err(|e| e.to_string())
        });
        let _ = std::fs::remove_file(&judging);
        let report =
            judged.map_err(|e| Failure::run(anyhow::anyhow!("judging {name} as it ended: {e}")))?;
        Ok(report.verdict_of(name).unwrap_or(RunVerdict::Unknown))
    }
}
