//! The store and broker operations the protocol needs, one implementation per backend.
//!
//! The protocol ([`crate::protocol`]) is written against these traits; a backend supplies the
//! transactions and the messaging, nothing else. [`Control`] is what the recorder itself needs
//! around a scenario: create the namespace, watch for quiet, and read the ground truth back.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::endpoints::Endpoint;
use crate::fault::chaos::ChaosReach;

/// The name of a backend as written in the trace's `backend` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// etcd for the store, NATS JetStream for the broker.
    EtcdJetstream,
    /// A SQLite file for the outbox, a Redis list for the broker, Redis for the effect.
    SqliteRedis,
}

impl BackendKind {
    /// What a chaos plan may hit on this backend: service restarts only where the recorder runs the services itself,
    /// each on the data it keeps across a restart: etcd and nats-server (`members` of each), or
    /// redis-server (its append-only file); a SQLite file is no server to restart.
    pub fn chaos_reach(self, workers: usize, own_services: bool, members: usize) -> ChaosReach {
        let members = if own_services { members.max(1) } else { 0 };
        let (broker_members, store_members) = match self {
            BackendKind::EtcdJetstream => (members, members),
            BackendKind::SqliteRedis => (members.min(1), 0),
        };
        ChaosReach {
            workers: workers.max(1),
            broker_members,
            store_members,
        }
    }

    /// The trace's name for it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::EtcdJetstream => "etcd-jetstream",
            BackendKind::SqliteRedis => "sqlite-redis",
        }
    }
}

/// Where one scenario lives inside the shared services, so scenarios never see each other.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Namespace {
    /// The scenario's name (names its database file where the store is a file).
    pub scenario: String,
    /// Key prefix in the store.
    pub prefix: String,
    /// Stream (or list) name.
    pub stream: String,
    /// Subject published to.
    pub subject: String,
    /// Durable consumer name.
    pub consumer: String,
}

impl Namespace {
    /// The namespace of `scenario` in run `run_id`.
    pub fn new(run_id: &str, scenario: &str) -> Self {
        let token: String = format!("{run_id}_{scenario}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        Namespace {
            scenario: scenario.to_string(),
            prefix: format!("/outbox-trace/{run_id}/{scenario}/"),
            stream: format!("OT_{token}"),
            subject: format!("outbox-trace.{token}.tasks"),
            consumer: "worker".to_string(),
        }
    }
}

/// Where a backend's services are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "backend")]
pub enum Endpoints {
    /// etcd and NATS.
    EtcdJetstream {
        /// etcd's client URL.
        etcd: Endpoint,
        /// NATS' client URL.
        nats: Endpoint,
        /// A NATS credentials file (its path is not secret; its content never leaves it).
        #[serde(default)]
        nats_creds: Option<PathBuf>,
        /// Copies of the stream the NATS cluster keeps (1 on a single server).
        #[serde(default = "one")]
        replicas: usize,
    },
    /// A SQLite directory and Redis.
    SqliteRedis {
        /// The directory holding one database file per scenario.
        db_dir: PathBuf,
        /// Redis' URL.
        redis: Endpoint,
    },
}

fn one() -> usize {
    1
}

impl Endpoints {
    /// Which backend these endpoints are for.
    pub fn kind(&self) -> BackendKind {
        match self {
            Endpoints::EtcdJetstream { .. } => BackendKind::EtcdJetstream,
            Endpoints::SqliteRedis { .. } => BackendKind::SqliteRedis,
        }
    }
}

/// Everything an actor needs to connect: endpoints (with credentials, passed only over a pipe) and
/// the namespace.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Connection {
    pub endpoints: Endpoints,
    /// The scenario's namespace.
    pub namespace: Namespace,
    /// The consumer's AckWait.
    pub ack_wait: Duration,
    /// Who connects (`worker-2`, ...): names a consumer's own in-flight list where the broker needs one.
    pub member: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_services_the_recorder_runs_and_that_keep_their_data_are_restarted() {
        let restarts = |r: ChaosReach| (r.broker_members, r.store_members);
        let theirs = BackendKind::EtcdJetstream.chaos_reach(2, false, 1);
        assert_eq!(restarts(theirs), (0, 0));
        let ours = BackendKind::EtcdJetstream.chaos_reach(2, true, 1);
        assert_eq!(restarts(ours), (1, 1));
        let cluster = BackendKind::EtcdJetstream.chaos_reach(2, true, 3);
        assert_eq!(restarts(cluster), (3, 3));
        // Redis is restarted on its append-only file; the SQLite file is no server.
        let redis = BackendKind::SqliteRedis.chaos_reach(2, true, 3);
        assert_eq!(restarts(redis), (1, 0));
    }
}
