//! The store in etcd and the broker in NATS JetStream (the lab 03 stack).
//!
//! Keys of one scenario, under its prefix:
//! `task/{task_id}`, `idem/{key}`, `outbox/pending/{event_id}`, `outbox/published/{event_id}`,
//! `dedup/{event_id}`, `result/{task_id}`, `counter`.
//! An outbox record's create revision is its `aggregate_seq`: etcd assigns it at commit and it grows
//! with commit order, so pending records read by create revision come out in per-aggregate order.
//!
//! One file per side: `store` (the protocol's store port on etcd), `broker` (its broker port on
//! JetStream), `control` (the recorder's setup, progress and ground truth over both) and
//! `records` (what the keys hold).

mod broker;
mod control;
mod records;
mod store;

use std::time::Duration;

use async_nats::jetstream::{self, consumer};
use etcd_client::{KvClient, LeaseClient};

use super::connection::{Connection, Endpoints};
use super::control::Backend;
use crate::protocol::model::Timing;
use crate::protocol::ports::BackendError;

/// The header that carries the stable event id on every copy.
pub const EVENT_ID_HEADER: &str = "Outbox-Event-Id";

/// A connection to one scenario's etcd keys and JetStream stream.
pub struct EtcdJetStream {
    kv: KvClient,
    leases: LeaseClient,
    prefix: String,
    nats: async_nats::Client,
    js: jetstream::Context,
    stream: String,
    subject: String,
    consumer_name: String,
    consumer: tokio::sync::OnceCell<consumer::PullConsumer>,
    ack_wait: Duration,
    replicas: usize,
    timing: Timing,
}

impl Backend for EtcdJetStream {
    async fn connect(conn: &Connection, timing: Timing) -> Result<Self, BackendError> {
        let Endpoints::EtcdJetstream {
            etcd,
            nats,
            nats_creds,
            replicas,
        } = &conn.endpoints
        else {
            return Err(BackendError::Store(
                "not an etcd + JetStream connection".into(),
            ));
        };
        let etcd_unreachable = |reason: String| BackendError::Unreachable {
            service: "etcd",
            endpoint: etcd.redacted(),
            reason,
        };
        let mut options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(3))
            .with_timeout(Duration::from_secs(10));
        if let Some((user, password)) = etcd.credentials() {
            options = options.with_user(user, password);
        }
        let scheme = if etcd.secret_url().starts_with("https") {
            "https"
        } else {
            "http"
        };
        let members: Vec<String> = etcd
            .host_ports()
            .iter()
            .map(|h| format!("{scheme}://{h}"))
            .collect();
        let client = etcd_client::Client::connect(members, Some(options))
            .await
            .map_err(|e| etcd_unreachable(one_line(&e)))?;
        let mut kv = client.kv_client();
        kv.get("/outbox-trace/.ping", None)
            .await
            .map_err(|e| etcd_unreachable(one_line(&e)))?;

        let mut nats_options = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(3))
            .max_reconnects(None);
        if let Some((user, password)) = nats.credentials() {
            nats_options = if password.is_empty() {
                nats_options.token(user)
            } else {
                nats_options.user_and_password(user, password)
            };
        }
        if let Some(path) = nats_creds {
            nats_options = nats_options.credentials_file(path).await.map_err(|e| {
                BackendError::Unreachable {
                    service: "nats",
                    endpoint: nats.redacted(),
                    reason: format!("credentials file {}: {}", path.display(), one_line(&e)),
                }
            })?;
        }
        let servers: Vec<async_nats::ServerAddr> = nats
            .host_ports()
            .iter()
            .filter_map(|h| format!("nats://{h}").parse().ok())
            .collect();
        let nats = nats_options
            .connect(servers)
            .await
            .map_err(|e| BackendError::Unreachable {
                service: "nats",
                endpoint: nats.redacted(),
                reason: one_line(&e),
            })?;
        let js = jetstream::new(nats.clone());
        Ok(EtcdJetStream {
            kv,
            leases: client.lease_client(),
            prefix: conn.namespace.prefix.clone(),
            nats,
            js,
            stream: conn.namespace.stream.clone(),
            subject: conn.namespace.subject.clone(),
            consumer_name: conn.namespace.consumer.clone(),
            consumer: tokio::sync::OnceCell::new(),
            ack_wait: conn.ack_wait,
            replicas: (*replicas).max(1),
            timing,
        })
    }
}

impl EtcdJetStream {
    fn key(&self, rest: &str) -> String {
        format!("{}{rest}", self.prefix)
    }
}

fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn store(e: etcd_client::Error) -> BackendError {
    BackendError::Store(one_line(&e))
}

fn broker(e: impl std::fmt::Display) -> BackendError {
    BackendError::Broker(one_line(&e))
}
