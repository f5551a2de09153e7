//! The lab's actors on the wire: when a scenario names a wire fault, every actor reaches each of
//! the lab's services through a proxy of its own (the one a `--system` run gives each process),
//! so `drop replies relay nats after publish_attempt 3` or `lose puback relay nats after
//! publish_attempt` loses a reply of the real service at that step, beside the lab's in-actor
//! failpoints. The proxies read NATS (`lose puback`); etcd and Redis are relayed as bytes.

use std::collections::BTreeMap;
use std::sync::Mutex;

use outbox_trace::Step;

use super::env::{drive, ScenarioEnv, ScenarioError, Stamp};
use crate::backend::connection::Endpoints;
use crate::backend::endpoints::Endpoint;
use crate::fault::ledger::Proxies;
use crate::fault::protocols::Wire;
use crate::fault::spec::WireFault;
use crate::journal::author::Author;
use crate::wire::Proxy;

/// The proxies of one scenario: one per actor and service.
pub struct LabWire {
    proxies: BTreeMap<(String, String), Proxy>,
    /// Each wire fault that acted on traffic: `(actor, service, fault)`.
    acts: Mutex<Vec<(String, String, WireFault)>>,
}

/// The protocol each of the lab's services speaks, by the name fault specs give it.
pub const LAB_WIRES: [(&str, Wire); 3] = [
    ("etcd", Wire::Tcp),
    ("nats", Wire::Nats),
    ("redis", Wire::Redis),
];

/// The protocol the lab's service `name` speaks.
fn wire_of(name: &str) -> Wire {
    LAB_WIRES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(Wire::Tcp, |(_, wire)| *wire)
}

/// The lab's services of `endpoints` as fault specs name them, each with its address
/// (`host:port` of its one server) and its wire.
fn services(endpoints: &Endpoints) -> Vec<(&'static str, &Endpoint, Wire)> {
    match endpoints {
        Endpoints::EtcdJetstream { etcd, nats, .. } => {
            vec![
                ("etcd", etcd, wire_of("etcd")),
                ("nats", nats, wire_of("nats")),
            ]
        }
        Endpoints::SqliteRedis { redis, .. } => vec![("redis", redis, wire_of("redis"))],
    }
}

impl LabWire {
    /// A proxy for each of `actors` to each service of `endpoints` (single servers, on this
    /// machine: the recorder's own).
    pub async fn start(actors: &[String], endpoints: &Endpoints) -> std::io::Result<LabWire> {
        let mut proxies = BTreeMap::new();
        for (name, endpoint, wire) in services(endpoints) {
            let address = endpoint.host_ports().into_iter().next().unwrap_or_default();
            let upstream = tokio::net::lookup_host(address.as_str())
                .await?
                .next()
                .ok_or_else(|| std::io::Error::other(format!("{name}: no address {address}")))?;
            for actor in actors {
                let proxy = Proxy::start(upstream, wire).await?;
                proxies.insert((actor.clone(), name.to_string()), proxy);
            }
        }
        Ok(LabWire {
            proxies,
            acts: Mutex::new(Vec::new()),
        })
    }

    /// `endpoints` as `actor` reaches them: each server's address replaced by its proxy's.
    pub fn endpoints_for(&self, actor: &str, endpoints: &Endpoints) -> Endpoints {
        let through = |name: &str, endpoint: &Endpoint| -> Endpoint {
            let Some(proxy) = self.proxies.get(&(actor.to_string(), name.to_string())) else {
                return endpoint.clone();
            };
            let address = endpoint.host_ports().into_iter().next().unwrap_or_default();
            let url =
                endpoint
                    .secret_url()
                    .replacen(&address, &format!("127.0.0.1:{}", proxy.port()), 1);
            Endpoint::local(url)
        };
        let mut endpoints = endpoints.clone();
        match &mut endpoints {
            Endpoints::EtcdJetstream { etcd, nats, .. } => {
                *etcd = through("etcd", etcd);
                *nats = through("nats", nats);
            }
            Endpoints::SqliteRedis { redis, .. } => *redis = through("redis", redis),
        }
        endpoints
    }

    /// Switches `fault` on between `actor` and `service`; its `fault` row comes when it is over
    /// or has acted ([`LabWire::record`]).
    pub fn apply(&self, actor: &str, service: &str, fault: WireFault) {
        if let Some(proxy) = self.proxies.get(&(actor.to_string(), service.to_string())) {
            if let Err(e) = proxy.apply(fault) {
                tracing::warn!("{} {actor} {service}: {e}", fault.kind());
            }
        }
    }

    /// Writes the `fault` row of every wire fault over or acted (with `finish`, of every one),
    /// stamped with the time it began.
    pub async fn record(
        &self,
        env: &ScenarioEnv<'_>,
        stamp: &Stamp,
        finish: bool,
    ) -> Result<(), ScenarioError> {
        let now_ns = env.clock.now();
        for ((actor, service), proxy) in &self.proxies {
            let over = if finish {
                proxy.finish()
            } else {
                proxy.take_over()
            };
            for o in over {
                if o.acted() {
                    let mut acts = self.acts.lock().expect("wire acts");
                    acts.push((actor.clone(), service.clone(), o.fault));
                }
                let row = o.row(actor, service);
                let mut entry = stamp.entry(Author::Faults, Step::Fault(row));
                entry.ts_ns = now_ns - o.began.elapsed().as_nanos() as i64;
                env.recorder.record(entry).await.map_err(drive)?;
            }
        }
        Ok(())
    }
}

/// The actors `target` names are a role (`worker` names `worker-2`) or one actor.
impl Proxies for LabWire {
    fn acted(&self, target: &str, service: &str, fault: WireFault) -> u64 {
        let acts = self.acts.lock().expect("wire acts");
        acts.iter()
            .filter(|(a, s, f)| named(target, a) && s == service && *f == fault)
            .count() as u64
    }

    fn passed(&self, target: &str, service: &str) -> (u64, u64) {
        self.proxies
            .iter()
            .filter(|((a, s), _)| s == service && named(target, a))
            .map(|(_, p)| p.passed())
            .fold((0, 0), |(r, b), (r2, b2)| (r + r2, b + b2))
    }
}

/// Whether `actor` is one of the actors `target` names: itself, or its role (`worker` names
/// `worker-2`).
fn named(target: &str, actor: &str) -> bool {
    actor == target
        || actor
            .rsplit_once('-')
            .is_some_and(|(role, n)| role == target && n.parse::<u32>().is_ok())
}
