//! `--shard`, `--plan` and `--resume`: what the search is (its mark), its share of the list, and
//! what an earlier run of it completed, kept instead of run again.

use outbox_trace::detail::{self, SearchMark};

use super::{Explore, Tried, CALM};
use crate::cli::config::ConfigError;
use crate::cli::exit::Failure;
use crate::fault::schedules::slug;
use crate::fault::spec::Nemesis;
use crate::run::plan::{read_plan, search_id, Settings};
use crate::run::recording::Run;
use crate::run::resume::{earlier_trace, keep, load};

impl Explore<'_> {
    /// The calm run's scenario name: `calm`, or one of each shard's own.
    pub fn calm_name(&self) -> String {
        self.shard
            .map_or_else(|| CALM.to_string(), |s| s.calm_name())
    }

    /// This shard's share of `schedules` (all of them unsharded), in their order.
    pub(super) fn share(&self, schedules: Vec<Nemesis>) -> Vec<Nemesis> {
        schedules
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.shard.is_none_or(|s| s.takes(*i)))
            .map(|(_, f)| f)
            .collect()
    }

    /// A schedule an earlier run of the search completed (`--resume`).
    pub(super) fn kept(&self, name: &str) -> Option<Tried> {
        self.earlier.done.get(name).map(|done| Tried {
            scenario: name.to_string(),
            spec: done.spec.clone(),
            fault: done.fault.clone(),
            recovered: done.recovered,
            judged: None,
            could_not_run: None,
        })
    }

    /// Schedule `name` as an earlier run completed it, else run now.
    pub(super) async fn kept_or_run(
        &self,
        run: &Run<'_>,
        name: String,
        faults: Vec<Nemesis>,
    ) -> Result<Tried, Failure> {
        match self.kept(&name) {
            Some(kept) => Ok(kept),
            None => self.one(run, name, faults).await,
        }
    }

    /// A schedule whose fault did not fire, once more (`...-again`).
    pub(super) async fn again(&self, run: &Run<'_>, fault: Nemesis) -> Result<Tried, Failure> {
        let again = format!("{}-again", slug(&fault));
        self.kept_or_run(run, again, vec![fault]).await
    }

    /// Before the calm run: the `--plan` list read, the search's mark, and with `--resume` what
    /// an earlier run of it completed, written as the first rows of this trace.
    pub(super) fn begin(&mut self, metadata: &detail::RunConfig) -> Result<(), Failure> {
        let usage = |e: String| Failure::Usage(ConfigError::Search(e));
        if let Some(path) = &self.plan_file {
            self.planned = Some(read_plan(path).map_err(|e| usage(e.to_string()))?);
        }
        let settings = Settings {
            shown: &self.shown,
            env: &self.config.env,
            tasks: self.config.tasks,
            deadline: self.config.deadline,
            pause_for: self.pause_for,
            only: &self.only,
            pairs: self.pairs,
            shards: self.shard.map_or(1, |s| s.n),
            plan: self.planned.as_deref(),
        };
        self.mark = SearchMark {
            id: Some(search_id(&settings)),
            shard: self.shard.map(|s| s.to_string()),
            ..SearchMark::default()
        };
        if !self.resume {
            return Ok(());
        }
        let out = &self.config.out;
        let Some(path) = earlier_trace(out) else {
            eprintln!(
                "recorder: --resume: no earlier trace of {} found; the search starts from the beginning",
                out.display()
            );
            return Ok(());
        };
        self.earlier =
            load(&path, &self.mark, &self.calm_name()).map_err(|e| usage(e.to_string()))?;
        let run_json = serde_json::to_string(metadata).map_err(|e| Failure::run(e.into()))?;
        keep(out, &run_json, &self.earlier.rows).map_err(|e| Failure::run(e.into()))?;
        self.earlier.rows = Vec::new();
        eprintln!(
            "recorder: --resume: {} the calm run and {} schedule(s) completed in {}",
            if self.earlier.calm.is_some() {
                "kept"
            } else {
                "no"
            },
            self.earlier.done.len(),
            path.display()
        );
        Ok(())
    }
}
