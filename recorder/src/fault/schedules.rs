//! The single-fault schedules of a systematic search (`recorder explore`), enumerated from the
//! shape a calm run learned: our faults land on exact steps, so the space of single faults is
//! finite, and every schedule here can fire (a kind a role never reported gets none).
//!
//! - `kill ROLE after KIND N`: every kind each role reported, at its first and (from four steps
//!   on) at a middle occurrence (half its count rounded down to a power of two, so that a calm
//!   run that saw a step a few times more or less enumerates the same list);
//! - `pause ROLE after KIND +DELAY for P unless alone`: a role of several instances, into the
//!   gap after each kind it reported (DELAY half the measured median gap, rounded down to a power
//!   of two), for longer than a
//!   broker's redelivery wait (P, `--pause-for`); a role of one instance is paused once, after
//!   its most frequent kind (counts rounded as below; the first by name of equals), to show that a stall is survived;
//! - `restart SERVICE after KIND N` (first and middle occurrence) and `pause SERVICE after KIND N
//!   for 2s` (middle occurrence) for each service and each kind any role reported;
//! - on the wire, for each role and each service whose connections passed bytes through the
//!   recorder's proxy in the calm run, and each kind the role reported, at a middle occurrence: `drop replies ROLE SERVICE after KIND N` (the request arrived, its answer was
//!   lost) and `drop requests ROLE SERVICE after KIND N` (the request never arrived); for a
//!   service whose protocol the proxy reads, `lose commit-reply ROLE SERVICE after KIND N` (the
//!   next COMMIT after each kind) and, for a role that publishes, `lose puback ROLE SERVICE after
//!   publish_attempt N` (that publish's ACK).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use outbox_trace::detail::RoleShape;

use super::duration::show_duration;
use super::protocols::Reads;
use super::spec::Nemesis;

/// How long a searched pause of a service holds.
const SERVICE_PAUSE: Duration = Duration::from_secs(2);

/// What the enumeration needs of a system besides its shape.
#[derive(Debug, Clone)]
pub struct Space<'a> {
    /// What each role reported in the calm run.
    pub shape: &'a BTreeMap<String, RoleShape>,
    /// Each role's instances.
    pub instances: &'a BTreeMap<String, u32>,
    /// The system's services.
    pub services: &'a [String],
    /// The `(role, service)` pairs whose connections passed bytes through the proxy in the calm
    /// run: the only ones a wire fault can act on.
    pub wired: &'a BTreeSet<(String, String)>,
    /// The services whose protocol the proxy reads, each with a reply it can lose (`lose
    /// commit-reply` on PostgreSQL, `lose puback` on NATS), as many rows as the protocol offers.
    pub lossy: &'a [(String, &'static Reads)],
    /// How long a searched pause of a process holds.
    pub pause_for: Duration,
}

/// `n` rounded down to a power of two (0 stays 0): counts and gaps measured by one calm run
/// differ a little from another's, and the schedules enumerated from them must not, so that
/// the shards of a search (`--shard K/N`, each after a calm run of its own) share one list.
fn rounded(n: u64) -> u64 {
    match n {
        0 => 0,
        n => 1 << n.ilog2(),
    }
}

/// The first and, from four steps on, a middle occurrence of a step seen `count` times (half
/// the count, rounded down to a power of two).
fn occurrences(count: u64) -> Vec<u64> {
    if count >= 4 {
        vec![1, rounded(count / 2)]
    } else if count >= 1 {
        vec![1]
    } else {
        Vec::new()
    }
}

/// Every single-fault schedule of `space`, as specs, in a stable order.
pub fn singles(space: &Space<'_>) -> Vec<String> {
    let mut specs = Vec::new();
    for (role, shape) in space.shape {
        for (kind, seen) in &shape.kinds {
            for n in occurrences(seen.count) {
                specs.push(with_nth(format!("kill {role} after {kind}"), n));
            }
        }
    }
    for (role, shape) in space.shape {
        let instances = space.instances.get(role).copied().unwrap_or(1);
        let hold = show_duration(space.pause_for);
        if instances >= 2 {
            for (kind, seen) in shape.kinds.iter().filter(|(_, k)| k.count > 0) {
                let gap = seen.gap_median_ms.unwrap_or(2).max(2);
                specs.push(format!(
                    "pause {role} after {kind} +{}ms for {hold} unless alone",
                    rounded(gap / 2)
                ));
            }
        } else if let Some((kind, _)) = shape
            .kinds
            .iter()
            .rev()
            .max_by_key(|(_, k)| rounded(k.count))
        {
            specs.push(format!("pause {role} after {kind} for {hold}"));
        }
    }
    let wired =
        |role: &String, service: &String| space.wired.contains(&(role.clone(), service.clone()));
    for (role, shape) in space.shape {
        for service in space.services.iter().filter(|s| wired(role, s)) {
            for (kind, seen) in &shape.kinds {
                let Some(&middle) = occurrences(seen.count).last() else {
                    continue;
                };
                for way in ["replies", "requests"] {
                    specs.push(with_nth(
                        format!("drop {way} {role} {service} after {kind}"),
                        middle,
                    ));
                }
            }
        }
    }
    for (role, shape) in space.shape {
        for (service, reads) in space.lossy.iter().filter(|(s, _)| wired(role, s)) {
            for (kind, seen) in &shape.kinds {
                let Some(&middle) = occurrences(seen.count).last() else {
                    continue;
                };
                if reads.after.is_some_and(|after| after.as_str() != kind) {
                    continue;
                }
                let verb = reads.lose.verb();
                specs.push(with_nth(
                    format!("{verb} {role} {service} after {kind}"),
                    middle,
                ));
            }
        }
    }
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for shape in space.shape.values() {
        for (kind, seen) in &shape.kinds {
            *totals.entry(kind).or_default() += seen.count;
        }
    }
    for service in space.services {
        for (kind, count) in &totals {
            for n in occurrences(*count) {
                specs.push(with_nth(format!("restart {service} after {kind}"), n));
            }
            let middle = occurrences(*count).last().copied().unwrap_or(1);
            specs.push(format!(
                "{} for {}",
                with_nth(format!("pause {service} after {kind}"), middle),
                show_duration(SERVICE_PAUSE)
            ));
        }
    }
    specs
}

fn with_nth(spec: String, n: u64) -> String {
    if n == 1 {
        spec
    } else {
        format!("{spec} {n}")
    }
}

/// A schedule's scenario name: its spec in words joined by `-` (`kill-worker-after-acked-20`).
pub fn slug(fault: &Nemesis) -> String {
    fault
        .to_string()
        .split_whitespace()
        .map(|w| w.trim_start_matches('+'))
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::protocols::Wire;
    use crate::fault::spec::WireFault;
    use outbox_trace::detail::KindShape;

    fn role(kinds: &[(&str, u64, Option<u64>)]) -> RoleShape {
        RoleShape {
            kinds: kinds
                .iter()
                .map(|(k, count, gap)| {
                    let shape = KindShape {
                        count: *count,
                        gap_median_ms: *gap,
                        ..KindShape::default()
                    };
                    (k.to_string(), shape)
                })
                .collect(),
            ..RoleShape::default()
        }
    }

    fn pairs(of: &[(&str, &str)]) -> BTreeSet<(String, String)> {
        of.iter()
            .map(|(r, s)| (r.to_string(), s.to_string()))
            .collect()
    }

    #[test]
    fn no_wire_fault_is_enumerated_where_the_calm_run_passed_no_byte() {
        let shape = BTreeMap::from([
            ("api".to_string(), role(&[("task_accepted", 40, Some(30))])),
            ("worker".to_string(), role(&[("delivered", 40, Some(200))])),
        ]);
        let services = ["kafka".to_string(), "postgres".to_string()];
        let lossy = [("postgres".to_string(), Wire::Postgres.offer(WireFault::LoseCommitReply).unwrap())];
        let wired = pairs(&[("worker", "kafka"), ("api", "postgres")]);
        let specs = singles(&Space {
            shape: &shape,
            instances: &BTreeMap::new(),
            services: &services,
            wired: &wired,
            lossy: &lossy,
            pause_for: Duration::from_secs(5),
        });
        let wire: Vec<&str> = specs
            .iter()
            .filter(|s| s.starts_with("drop") || s.starts_with("lose"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            wire,
            [
                "drop replies api postgres after task_accepted 16",
                "drop requests api postgres after task_accepted 16",
                "drop replies worker kafka after delivered 16",
                "drop requests worker kafka after delivered 16",
                "lose commit-reply api postgres after task_accepted 16",
            ]
        );
        // The other faults do not depend on the wire.
        assert!(specs
            .iter()
            .any(|s| s == "restart kafka after task_accepted"));
        assert!(specs.iter().any(|s| s == "kill api after task_accepted"));
    }

    #[test]
    fn every_reported_step_gets_its_faults_and_no_other_does() {
        let shape = BTreeMap::from([
            ("api".to_string(), role(&[("task_accepted", 40, Some(30))])),
            (
                "worker".to_string(),
                role(&[("delivered", 40, Some(200)), ("acked", 3, None)]),
            ),
        ]);
        let instances = BTreeMap::from([("api".to_string(), 1), ("worker".to_string(), 2)]);
        let services = ["redis".to_string()];
        let wired = pairs(&[("api", "redis"), ("worker", "redis")]);
        let specs = singles(&Space {
            shape: &shape,
            instances: &instances,
            services: &services,
            wired: &wired,
            lossy: &[],
            pause_for: Duration::from_secs(5),
        });
        let has = |s: &str| specs.iter().any(|x| x == s);
        for s in [
            "kill api after task_accepted",
            "kill api after task_accepted 16",
            "kill worker after delivered",
            "kill worker after delivered 16",
            "kill worker after acked",
            "pause worker after delivered +64ms for 5s unless alone",
            "pause worker after acked +1ms for 5s unless alone",
            "pause api after task_accepted for 5s",
            "restart redis after delivered",
            "restart redis after delivered 16",
            "restart redis after acked",
            "pause redis after delivered 16 for 2s",
            "pause redis after acked for 2s",
            "drop replies api redis after task_accepted 16",
            "drop requests worker redis after acked",
        ] {
            assert!(has(s), "{s} missing from {specs:#?}");
        }
        assert!(
            !has("kill worker after acked 1"),
            "no middle under four steps"
        );
        assert!(
            !specs
                .iter()
                .any(|s| s.contains("outbox_marked") || s.contains("relay")),
            "nothing unreported"
        );
        assert_eq!(specs.len(), 16 + 6, "{specs:#?}");
        for s in &specs {
            let parsed = Nemesis::parse(s)
                .unwrap()
                .resolve(|n| n == "redis")
                .unwrap();
            assert!(!slug(&parsed).contains(' '));
        }
        assert_eq!(
            slug(
                &Nemesis::parse("pause worker after delivered +100ms for 5s unless alone").unwrap()
            ),
            "pause-worker-after-delivered-100ms-for-5s-unless-alone"
        );
    }

    #[test]
    fn a_calm_run_that_saw_a_step_once_more_or_less_enumerates_the_same_list() {
        let list = |acked: u64, gap: u64| {
            let shape = BTreeMap::from([
                ("api".to_string(), role(&[("task_accepted", 6, Some(30))])),
                (
                    "worker".to_string(),
                    role(&[("delivered", acked, Some(gap)), ("acked", acked, Some(9))]),
                ),
            ]);
            let instances = BTreeMap::from([("worker".to_string(), 2)]);
            singles(&Space {
                shape: &shape,
                instances: &instances,
                services: &["redis".to_string()],
                wired: &pairs(&[("worker", "redis")]),
                lossy: &[],
                pause_for: Duration::from_secs(5),
            })
        };
        let seen = list(6, 180);
        assert_eq!(list(5, 170), seen);
        assert_eq!(list(7, 200), seen);
        assert!(
            seen.contains(&"kill worker after acked 2".to_string()),
            "{seen:#?}"
        );
        assert!(
            seen.contains(&"pause worker after delivered +64ms for 5s unless alone".to_string())
        );
        assert_eq!(rounded(0), 0);
        assert_eq!(rounded(1), 1);
        assert_eq!(rounded(20), 16);
    }

    #[test]
    fn a_service_whose_protocol_is_read_gets_the_faults_that_lose_one_reply() {
        let shape = BTreeMap::from([
            (
                "relay".to_string(),
                role(&[
                    ("publish_attempt", 40, Some(30)),
                    ("outbox_marked", 40, None),
                ]),
            ),
            ("worker".to_string(), role(&[("delivered", 40, Some(200))])),
        ]);
        let instances = BTreeMap::new();
        let services = ["nats".to_string(), "postgres".to_string()];
        let lossy = [
            ("nats".to_string(), Wire::Nats.offer(WireFault::LosePuback).unwrap()),
            ("postgres".to_string(), Wire::Postgres.offer(WireFault::LoseCommitReply).unwrap()),
        ];
        let wired = pairs(&[
            ("relay", "nats"),
            ("relay", "postgres"),
            ("worker", "nats"),
            ("worker", "postgres"),
        ]);
        let specs = singles(&Space {
            shape: &shape,
            instances: &instances,
            services: &services,
            wired: &wired,
            lossy: &lossy,
            pause_for: Duration::from_secs(5),
        });
        let lose: Vec<&str> = specs
            .iter()
            .filter(|s| s.starts_with("lose"))
            .map(String::as_str)
            .collect();
        assert_eq!(
            lose,
            [
                "lose puback relay nats after publish_attempt 16",
                "lose commit-reply relay postgres after outbox_marked 16",
                "lose commit-reply relay postgres after publish_attempt 16",
                "lose commit-reply worker postgres after delivered 16",
            ]
        );
    }
}
