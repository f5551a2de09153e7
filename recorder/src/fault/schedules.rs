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

use outbox_trace::detail::{KindShape, RoleShape};
use outbox_trace::Kind;

use super::protocols::Reads;
use super::spec::{Nemesis, What, When, WireFault, DROP_FOR};

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

/// Every single-fault schedule of `space`, in a stable order: the kills, the processes' pauses,
/// the dropped bytes, the lost replies, then the services' restarts and pauses.
pub fn single_faults(space: &Space<'_>) -> Vec<Nemesis> {
    let mut faults = kills(space);
    faults.extend(process_pauses(space));
    faults.extend(drops(space));
    faults.extend(lost_replies(space));
    faults.extend(service_faults(space));
    faults
}

/// The schedules' texts, as a spec writes them.
#[cfg(test)]
fn singles(space: &Space<'_>) -> Vec<String> {
    single_faults(space)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The kinds `shape` reported, each with what was seen of it (a name no kind has gets no
/// schedule).
fn kinds(shape: &RoleShape) -> impl Iterator<Item = (Kind, &KindShape)> {
    shape
        .kinds
        .iter()
        .filter_map(|(kind, seen)| Some((kind.parse().ok()?, seen)))
}

/// After the `nth` step of `kind` its target reports (none past the counts a spec takes).
fn after(kind: Kind, nth: u64) -> Option<When> {
    Some(When::After {
        kind,
        nth: u32::try_from(nth).ok()?,
        delay: Duration::ZERO,
        by: None,
    })
}

/// `kill ROLE after KIND N`: each kind each role reported, at its first and middle occurrence.
fn kills(space: &Space<'_>) -> Vec<Nemesis> {
    let mut faults = Vec::new();
    for (role, shape) in space.shape {
        for (kind, seen) in kinds(shape) {
            let whens = occurrences(seen.count).into_iter();
            faults.extend(whens.filter_map(|n| after(kind, n)).map(|when| Nemesis {
                what: What::Kill {
                    target: role.clone(),
                },
                when,
            }));
        }
    }
    faults
}

/// `pause ROLE after KIND +DELAY for P unless alone` into the gap after each kind a role of
/// several instances reported; `pause ROLE after KIND for P` once, after its most frequent
/// kind, for a role of one. P is `--pause-for` in whole milliseconds, as its text says it (under
/// one, no pause).
fn process_pauses(space: &Space<'_>) -> Vec<Nemesis> {
    let hold = Duration::from_millis(space.pause_for.as_millis() as u64);
    if hold.is_zero() {
        return Vec::new();
    }
    let mut faults = Vec::new();
    for (role, shape) in space.shape {
        let pause = |kind, delay, unless_alone| Nemesis {
            what: What::Pause {
                target: role.clone(),
                hold,
                unless_alone,
            },
            when: When::After {
                kind,
                nth: 1,
                delay,
                by: None,
            },
        };
        let instances = space.instances.get(role).copied().unwrap_or(1);
        if instances >= 2 {
            for (kind, seen) in kinds(shape).filter(|(_, k)| k.count > 0) {
                let gap = seen.gap_median_ms.unwrap_or(2).max(2);
                let delay = Duration::from_millis(rounded(gap / 2));
                faults.push(pause(kind, delay, true));
            }
        } else if let Some((kind, _)) = shape
            .kinds
            .iter()
            .rev()
            .max_by_key(|(_, k)| rounded(k.count))
        {
            faults.extend(kind.parse().ok().map(|k| pause(k, Duration::ZERO, false)));
        }
    }
    faults
}

/// Whether the connections between `role` and `service` passed bytes in the calm run.
fn wired(space: &Space<'_>, role: &str, service: &str) -> bool {
    space
        .wired
        .contains(&(role.to_string(), service.to_string()))
}

/// A fault on the wire between `role` and `service`.
fn on_the_wire(role: &str, service: &str, fault: WireFault, when: When) -> Nemesis {
    Nemesis {
        what: What::Wire {
            target: role.to_string(),
            service: service.to_string(),
            fault,
        },
        when,
    }
}

/// `drop replies ROLE SERVICE after KIND N` and `drop requests ...`, at each kind's middle
/// occurrence, where the role's connections to the service passed bytes.
fn drops(space: &Space<'_>) -> Vec<Nemesis> {
    let mut faults = Vec::new();
    for (role, shape) in space.shape {
        for service in space.services.iter().filter(|s| wired(space, role, s)) {
            for (kind, seen) in kinds(shape) {
                let Some(when) = occurrences(seen.count).last().and_then(|&n| after(kind, n))
                else {
                    continue;
                };
                for fault in [
                    WireFault::DropReplies { hold: DROP_FOR },
                    WireFault::DropRequests { hold: DROP_FOR },
                ] {
                    faults.push(on_the_wire(role, service, fault, when.clone()));
                }
            }
        }
    }
    faults
}

/// The fault that loses one reply of a service whose protocol the proxy reads, at each kind's
/// middle occurrence (only after the kind the message follows, where it follows one).
fn lost_replies(space: &Space<'_>) -> Vec<Nemesis> {
    let mut faults = Vec::new();
    for (role, shape) in space.shape {
        for (service, reads) in space.lossy.iter().filter(|(s, _)| wired(space, role, s)) {
            for (kind, seen) in kinds(shape) {
                let Some(when) = occurrences(seen.count).last().and_then(|&n| after(kind, n))
                else {
                    continue;
                };
                if reads.after.is_some_and(|after| after != kind) {
                    continue;
                }
                faults.push(on_the_wire(role, service, reads.lose, when));
            }
        }
    }
    faults
}

/// `restart SERVICE after KIND N` (first and middle occurrence) and `pause SERVICE after KIND N
/// for 2s` (middle occurrence), for each kind any role reported, counted over every role.
fn service_faults(space: &Space<'_>) -> Vec<Nemesis> {
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for shape in space.shape.values() {
        for (kind, seen) in &shape.kinds {
            *totals.entry(kind).or_default() += seen.count;
        }
    }
    let mut faults = Vec::new();
    for service in space.services {
        for (kind, count) in &totals {
            let Ok(kind) = kind.parse::<Kind>() else {
                continue;
            };
            let restart = What::Restart {
                service: service.clone(),
            };
            for when in occurrences(*count)
                .into_iter()
                .filter_map(|n| after(kind, n))
            {
                faults.push(Nemesis {
                    what: restart.clone(),
                    when,
                });
            }
            let middle = occurrences(*count).last().copied().unwrap_or(1);
            faults.extend(after(kind, middle).map(|when| Nemesis {
                what: What::PauseService {
                    service: service.clone(),
                    hold: SERVICE_PAUSE,
                },
                when,
            }));
        }
    }
    faults
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
        let lossy = [(
            "postgres".to_string(),
            Wire::Postgres.offer(WireFault::LoseCommitReply).unwrap(),
        )];
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
            (
                "nats".to_string(),
                Wire::Nats.offer(WireFault::LosePuback).unwrap(),
            ),
            (
                "postgres".to_string(),
                Wire::Postgres.offer(WireFault::LoseCommitReply).unwrap(),
            ),
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
