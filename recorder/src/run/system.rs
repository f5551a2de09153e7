//! A team's own system as a recording's [`Subject`] (`recorder run --system FILE`): every
//! scenario in a fresh directory with fresh services (or, with `[reset]`, the services kept from
//! the scenario before, reset), its processes restarted at most
//! [`OWN_EXIT_RESTARTS`] times a run when they exit on their own, and what the scenario could not
//! map or read back said on a line of its own.

use std::path::Path;
use std::sync::atomic::AtomicU32;

use outbox_trace::detail;

use super::recording::{Opened, Run, Subject};
use crate::cli::exit::Failure;
use crate::fault::coverage::Origin;
use crate::system::config::SystemConfig;
use crate::system::scenario::{run_scenario, KeptServices, SystemEnv, OWN_EXIT_RESTARTS};

/// A team's system, for one recording.
pub struct TeamSystem<'c> {
    config: &'c SystemConfig,
    restarts_left: AtomicU32,
    shown: serde_json::Value,
    /// With `[reset]`: the services kept from one scenario to the next.
    kept: Option<KeptServices>,
}

impl<'c> TeamSystem<'c> {
    /// The system as `config` describes it.
    pub fn new(config: &'c SystemConfig) -> Self {
        TeamSystem {
            config,
            restarts_left: AtomicU32::new(OWN_EXIT_RESTARTS),
            shown: config.shown(),
            kept: config
                .system
                .file
                .reset
                .is_some()
                .then(KeptServices::default),
        }
    }
}

impl Subject for TeamSystem<'_> {
    async fn open(&mut self, _workdir: &Path) -> Result<Opened, Failure> {
        // A process a role detaches (a daemon) is adopted by the recorder, not by init, so the
        // end of its scenario finds and stops it.
        crate::process::reaper::adopt_orphans()
            .map_err(|e| Failure::run(anyhow::anyhow!("becoming a child subreaper: {e}")))?;
        let backend = format!("system:{}", self.config.system.file.name);
        let scenarios: Vec<String> = self
            .config
            .scenarios
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        Ok(Opened {
            metadata: detail::RunConfig {
                backend: Some(backend.clone()),
                recorder: Some(env!("CARGO_PKG_VERSION").to_string()),
                scenarios: scenarios.clone(),
                ..detail::RunConfig::default()
            },
            backend,
            protocol: None,
            scenarios,
        })
    }

    async fn scenario(&mut self, run: &Run<'_>, index: usize) -> Result<bool, Failure> {
        let config = self.config;
        let (name, faults) = &config.scenarios[index];
        let env = SystemEnv {
            system: &config.system,
            extra_env: &config.env,
            faults: &config.faults,
            tasks: config.tasks,
            chaos: config.chaos,
            deadline: config.deadline,
            first_task_within: crate::system::tasks::UNREACHABLE_FOR,
            recorder: run.recorder,
            clock: run.clock,
            epoch_unix_ns: run.epoch_unix_ns,
            run_id: run.run_id,
            workdir: run.workdir,
            shutdown: run.shutdown,
            restarts_left: &self.restarts_left,
            shown: &self.shown,
            search: None,
            kept: self.kept.as_ref(),
        };
        let outcome = match run_scenario(&env, name, None, faults, Origin::Named).await {
            Ok(outcome) => outcome,
            Err(e) => {
                // A scenario cut short leaves nothing running either.
                crate::process::reaper::sweep(None).await;
                return Err(e.into());
            }
        };
        if let Some(why) = &outcome.could_not_run {
            return Err(Failure::Unavailable(anyhow::anyhow!("{why}")));
        }
        let unmapped = &outcome.dropped.unmapped;
        if unmapped.spans > 0 {
            eprintln!(
                "recorder: scenario {name}: {} span(s) mapped to no kind (run_end.detail.unmapped): {}",
                unmapped.spans,
                unmapped.names.join(", ")
            );
        }
        if outcome.skipped_count > 0 {
            eprintln!(
                "recorder: scenario {name}: {} span(s) gave no row: {}",
                outcome.skipped_count,
                outcome.skipped.join("; ")
            );
        }
        if let Some(silent) = outcome.quiet_waiting {
            eprintln!(
                "recorder: scenario {name}: the deadline passed with no span for {:.1}s: \
                 quiet may be waiting for work that will never come (it should ask only \
                 whether anything is left to move, not whether every task is done)",
                silent.as_secs_f64()
            );
        }
        if let Some(why) = &outcome.no_observed {
            eprintln!("recorder: scenario {name}: no observed row: {why}");
        }
        Ok(outcome.recovered)
    }

    async fn close(&mut self) {
        if let Some(kept) = &self.kept {
            kept.stop(crate::system::scenario::GRACE).await;
        }
        // What no scenario could claim, left while others ran, goes with the run.
        crate::process::reaper::sweep(None).await;
    }
}
