//! Random faults from a seed (`--chaos SEED`): a plan of SIGKILLs of actor processes and restarts
//! of the local services, computed up front as data so the same seed gives the same plan, and
//! recorded in the trace (`run_start.detail.chaos`, then a `fault` or `crash` row per action).

use std::time::Duration;

use serde::Serialize;

use crate::backend::BackendKind;

/// One planned fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// SIGKILL the API process (it is restarted and retries its creates with the same keys).
    KillApi,
    /// SIGKILL the relay process.
    KillRelay,
    /// SIGKILL worker number `index` (0-based).
    KillWorker {
        /// Which worker.
        index: usize,
    },
    /// SIGKILL nats-server and start it again on the same file store.
    RestartBroker,
    /// SIGKILL etcd and start it again on the same data dir.
    RestartStore,
}

/// The plan: actions at offsets from the scenario's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChaosPlan {
    /// The seed it came from.
    pub seed: u64,
    /// When and what, in time order.
    pub actions: Vec<(u64, Action)>,
}

impl ChaosPlan {
    /// The plan for `seed`: about one action a second over `window`. Service restarts are planned
    /// only where the recorder runs the services itself and they keep their data across a restart
    /// (etcd and nats-server; the Redis it starts has no persistence).
    pub fn new(
        seed: u64,
        window: Duration,
        workers: usize,
        backend: BackendKind,
        own_services: bool,
    ) -> Self {
        let mut rng = SplitMix64(seed);
        let restarts = own_services && backend == BackendKind::EtcdJetstream;
        let mut actions = Vec::new();
        let mut at = 0u64;
        loop {
            at += 400 + rng.below(1200);
            if at > window.as_millis() as u64 {
                break;
            }
            let roll = rng.below(100);
            let action = match roll {
                0..=9 => Action::KillApi,
                10..=34 => Action::KillRelay,
                35..=79 => Action::KillWorker {
                    index: rng.below(workers.max(1) as u64) as usize,
                },
                80..=89 if restarts => Action::RestartBroker,
                90..=99 if restarts => Action::RestartStore,
                _ => Action::KillWorker {
                    index: rng.below(workers.max(1) as u64) as usize,
                },
            };
            actions.push((at, action));
        }
        ChaosPlan { seed, actions }
    }
}

/// A small, well-known generator: enough for reproducible plans, no dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_another() {
        let window = Duration::from_secs(20);
        let a = ChaosPlan::new(7, window, 4, BackendKind::EtcdJetstream, true);
        assert_eq!(
            a,
            ChaosPlan::new(7, window, 4, BackendKind::EtcdJetstream, true)
        );
        assert_ne!(
            a,
            ChaosPlan::new(8, window, 4, BackendKind::EtcdJetstream, true)
        );
        assert!(a.actions.len() >= 10, "{a:?}");
        assert!(a.actions.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(a.actions.iter().all(|(at, _)| *at <= 20_000));
    }

    #[test]
    fn no_service_restarts_without_services_that_keep_their_data() {
        for seed in 0..50 {
            let plan = ChaosPlan::new(
                seed,
                Duration::from_secs(20),
                2,
                BackendKind::SqliteRedis,
                true,
            );
            assert!(plan
                .actions
                .iter()
                .all(|(_, a)| !matches!(a, Action::RestartBroker | Action::RestartStore)));
            let plan = ChaosPlan::new(
                seed,
                Duration::from_secs(20),
                2,
                BackendKind::EtcdJetstream,
                false,
            );
            assert!(plan
                .actions
                .iter()
                .all(|(_, a)| !matches!(a, Action::RestartBroker | Action::RestartStore)));
        }
    }
}
