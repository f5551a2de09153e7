//! Random faults from a seed (`--chaos SEED`): a plan of SIGKILLs of actor processes and restarts
//! of the local services, computed up front as data so the same seed gives the same plan, and
//! recorded in the trace (`run_start.detail.chaos`, then a `fault` or `crash` row per action).

use std::time::Duration;

use serde::Serialize;

use crate::backend::BackendKind;

/// One planned fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
    /// SIGKILL a broker (nats-server, or redis-server) and start it again on the same data.
    RestartBroker {
        /// Which member of the cluster (0-based; always 0 on a single server).
        member: usize,
    },
    /// SIGKILL an etcd member and start it again on the same data dir.
    RestartStore {
        /// Which member of the cluster (0-based; always 0 on a single member).
        member: usize,
    },
}

/// What a plan may hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    /// Worker processes.
    pub workers: usize,
    /// Broker servers the recorder may restart (0: none).
    pub broker_members: usize,
    /// Store servers the recorder may restart (0: none).
    pub store_members: usize,
}

impl Targets {
    /// The targets of a run: service restarts only where the recorder runs the services itself,
    /// each on the data it keeps across a restart: etcd and nats-server (`members` of each), or
    /// redis-server (its append-only file); a SQLite file is no server to restart.
    pub fn of(workers: usize, backend: BackendKind, own_services: bool, members: usize) -> Self {
        let members = if own_services { members.max(1) } else { 0 };
        let (broker_members, store_members) = match backend {
            BackendKind::EtcdJetstream => (members, members),
            BackendKind::SqliteRedis => (members.min(1), 0),
        };
        Targets {
            workers: workers.max(1),
            broker_members,
            store_members,
        }
    }
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
    /// The plan for `seed`: about one action a second over `window`, against `targets`. A restart
    /// picks any member of a cluster, its leader included.
    pub fn new(seed: u64, window: Duration, targets: Targets) -> Self {
        let mut rng = SplitMix64(seed);
        let workers = targets.workers as u64;
        let brokers = targets.broker_members as u64;
        let stores = targets.store_members as u64;
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
                80..=89 if brokers > 0 => Action::RestartBroker {
                    member: rng.below(brokers) as usize,
                },
                90..=99 if stores > 0 => Action::RestartStore {
                    member: rng.below(stores) as usize,
                },
                _ => Action::KillWorker {
                    index: rng.below(workers) as usize,
                },
            };
            actions.push((at, action));
        }
        ChaosPlan { seed, actions }
    }
}

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

    const CLUSTER: Targets = Targets {
        workers: 4,
        broker_members: 3,
        store_members: 3,
    };

    #[test]
    fn the_same_seed_gives_the_same_plan_and_another_seed_another() {
        let window = Duration::from_secs(20);
        let a = ChaosPlan::new(7, window, CLUSTER);
        assert_eq!(a, ChaosPlan::new(7, window, CLUSTER));
        assert_ne!(a, ChaosPlan::new(8, window, CLUSTER));
        assert!(a.actions.len() >= 10, "{a:?}");
        assert!(a.actions.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(a.actions.iter().all(|(at, _)| *at <= 20_000));
    }

    #[test]
    fn restarts_reach_every_member_of_a_cluster() {
        let mut hit = std::collections::HashSet::new();
        for seed in 0..50 {
            for (_, action) in ChaosPlan::new(seed, Duration::from_secs(20), CLUSTER).actions {
                if let Action::RestartBroker { member } | Action::RestartStore { member } = action {
                    assert!(member < 3);
                    hit.insert(action);
                }
            }
        }
        assert_eq!(hit.len(), 6, "{hit:?}");
    }

    fn restarts(targets: Targets) -> (usize, usize) {
        let (mut brokers, mut stores) = (0, 0);
        for seed in 0..50 {
            for (_, action) in ChaosPlan::new(seed, Duration::from_secs(20), targets).actions {
                match action {
                    Action::RestartBroker { .. } => brokers += 1,
                    Action::RestartStore { .. } => stores += 1,
                    _ => {}
                }
            }
        }
        (brokers, stores)
    }

    #[test]
    fn only_services_the_recorder_runs_and_that_keep_their_data_are_restarted() {
        let theirs = Targets::of(2, BackendKind::EtcdJetstream, false, 1);
        assert_eq!(restarts(theirs), (0, 0));
        let (brokers, stores) = restarts(Targets::of(2, BackendKind::EtcdJetstream, true, 1));
        assert!(brokers > 0 && stores > 0);
        // Redis is restarted on its append-only file; the SQLite file is no server.
        let (brokers, stores) = restarts(Targets::of(2, BackendKind::SqliteRedis, true, 1));
        assert!(brokers > 0 && stores == 0);
    }
}
