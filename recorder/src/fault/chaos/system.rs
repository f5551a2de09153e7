//! `--chaos SEED` for a team's system: a swarm draw that knows the service. Nothing is armed up
//! front on a guess: a (role, kind) pair is armed when the role first reports that kind, and a
//! pause into the gap after a kind when that gap is first measured, so no fault waits on a step
//! the role never takes. Each pair's draw is a pure function of the seed, the role and the kind
//! (its own [`Dice`]), so the same seed arms the same faults whatever order the steps come in.
//!
//! - **Kills.** 7 pairs in 8: `kill ROLE after KIND N`, N drawn from the first half of the tasks,
//!   always on a held export (so a kill loses no span of a synchronous exporter).
//! - **Pauses.** For a role with several instances, when the gap after a kind is first measured:
//!   one pair in two pauses each instance, `+DELAY` a drawn fraction (10-90 %) of that gap, so the
//!   process stops between the step and its next (where a dedup race lives), for 3 to 5 s: long
//!   enough for a broker to hand its message to another instance (`unless alone`).
//! - **Services.** For each service, one pair in sixteen restarts it, or pauses it for 1 to 3 s,
//!   right after that step of that role.
//! - **The wire.** For each service, one pair in eight drops the replies, or the requests, between
//!   the reporting process and that service for 2 to 6 s from that step on (its own dice, so a
//!   seed's kills, pauses and service faults are the same with or without it).
//! - **Lost replies.** For each service whose protocol the proxy reads, and each reply it can lose
//!   after that kind (`lose commit-reply` after any, `lose puback` and `lose produce-ack` after
//!   `publish_attempt`), one pair in eight loses the reply after a drawn N-th such step (dice of
//!   its own again).
//!
//! What was armed, with each fault's fired count, is `run_end.detail.chaos.armed`.

use std::time::Duration;

use outbox_trace::detail::{ArmedStep, ChaosArmed};
use outbox_trace::Kind;
use serde::Serialize;

use crate::fault::dice::Dice;
use crate::fault::protocols::Reads;
use crate::fault::spec::{Nemesis, What, When, WireFault};
use crate::fault::trigger::Trigger;

/// One pair in this many is left without a kill.
const SPARE_ONE_IN: u64 = 8;
/// One pair in this many pauses the role's instances into its gap.
const PAUSE_ONE_IN: u64 = 2;
/// One pair in this many hits each service.
const SERVICE_ONE_IN: u64 = 16;
/// How long a chaos pause of a process holds, in ms.
const PAUSE_HOLD_MS: (u64, u64) = (3000, 5000);
/// How long a chaos pause of a service holds, in ms.
const SERVICE_HOLD_MS: (u64, u64) = (1000, 3000);
/// One pair in this many loses bytes on the wire to each service.
const WIRE_ONE_IN: u64 = 8;
/// How long a chaos wire fault holds, in ms.
const WIRE_HOLD_MS: (u64, u64) = (2000, 6000);
/// One pair in this many loses one reply of each service whose protocol the proxy reads.
const LOSE_ONE_IN: u64 = 8;

/// What a team's system offers a chaos draw before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Each role and how many instances it runs, in the file's order.
    pub roles: Vec<(String, u32)>,
    /// The kinds the system declares it reports (`records`), if it declares them.
    pub records: Option<Vec<String>>,
    /// Its services' names.
    pub services: Vec<String>,
    /// Its services whose protocol the proxy reads, each with a reply it can lose.
    pub lossy: Vec<(String, &'static Reads)>,
}

/// The draw of one seed, armed as the system shows itself.
#[derive(Debug, Clone, Serialize)]
pub struct SystemChaos {
    /// The seed.
    pub seed: u64,
    /// How the seed arms: recorded in `run_start.detail.chaos`.
    pub rules: &'static str,
    #[serde(skip)]
    tasks: u32,
    #[serde(skip)]
    layout: Layout,
    /// What was armed: (role, kind, the trigger's index of the fault).
    #[serde(skip)]
    armed: Vec<(String, Kind, usize)>,
    /// Whether the wire is drawn (the processes reach the services through proxies).
    #[serde(skip)]
    wire: bool,
}

impl SystemChaos {
    /// How the seed arms: recorded in `run_start.detail.chaos`.
    pub const RULES: &'static str =
        "each (role, kind) armed when first reported: a kill 7 in 8, a pause of every \
         instance into the gap after it 1 in 2 (roles of several instances), each \
         service restarted or paused after it 1 in 16, the replies or the requests \
         between the process and each service dropped for 2-6 s after it 1 in 8, each \
         reply the proxy can lose after that kind (a commit's, a publish's ACK) lost 1 in 8";

    /// The draw of `seed` for a system of `layout` running `tasks` tasks.
    pub fn draw(seed: u64, tasks: u32, layout: &Layout) -> SystemChaos {
        SystemChaos {
            seed,
            rules: Self::RULES,
            tasks,
            layout: layout.clone(),
            armed: Vec::new(),
            wire: true,
        }
    }

    /// The same draw without the wire, for processes that reach their services directly: the
    /// kills, pauses and service faults of a seed are the same (the wire rolls dice of its own).
    pub fn without_wire(mut self) -> SystemChaos {
        self.wire = false;
        self
    }

    /// The dice of one (role, kind, purpose): the same for the same seed, in any order.
    fn dice(&self, role: &str, kind: Kind, purpose: &str) -> Dice {
        let mut h: u64 = self.seed ^ 0xA076_1D64_78BD_642F;
        for b in role
            .bytes()
            .chain([0])
            .chain(kind.as_str().bytes())
            .chain([0])
            .chain(purpose.bytes())
        {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
        Dice::new(h)
    }

    /// Whether the file declares its kinds and leaves `kind` out.
    fn undeclared(&self, kind: Kind) -> bool {
        self.layout
            .records
            .as_ref()
            .is_some_and(|r| !r.iter().any(|k| k == kind.as_str()))
    }

    fn instances(&self, role: &str) -> u32 {
        self.layout
            .roles
            .iter()
            .find(|(r, _)| r == role)
            .map_or(1, |(_, n)| *n)
    }

    /// A count to fire on, from the first half of the steps one target reports.
    fn nth(&self, dice: &mut Dice, instances: u32) -> u32 {
        let spread = (self.tasks / instances.max(1) / 2).max(1);
        1 + dice.below(u64::from(spread)) as u32
    }

    /// `role` reported its first step of `kind`: the kill and service faults of that pair, armed
    /// on `trigger` (they count from this step on).
    pub fn first_report(&mut self, trigger: &mut Trigger, role: &str, kind: Kind) {
        if self.undeclared(kind) {
            return;
        }
        let mut dice = self.dice(role, kind, "first");
        let mut faults = Vec::new();
        if dice.below(SPARE_ONE_IN) != 0 {
            let nth = self.nth(&mut dice, 1);
            faults.push(Nemesis::kill_after(role, kind, nth));
        }
        for service in &self.layout.services {
            if dice.below(SERVICE_ONE_IN) != 0 {
                continue;
            }
            let nth = self.nth(&mut dice, 1);
            let when = When::After {
                kind,
                nth,
                delay: Duration::ZERO,
                by: Some(role.to_string()),
            };
            let what = if dice.below(2) == 0 {
                What::Restart {
                    service: service.clone(),
                }
            } else {
                What::PauseService {
                    service: service.clone(),
                    hold: between(&mut dice, SERVICE_HOLD_MS),
                }
            };
            faults.push(Nemesis { what, when });
        }
        let mut wire = self.dice(role, kind, "wire");
        let wired = if self.wire {
            self.layout.services.as_slice()
        } else {
            &[]
        };
        for service in wired {
            if wire.below(WIRE_ONE_IN) != 0 {
                continue;
            }
            let nth = self.nth(&mut wire, 1);
            let hold = between(&mut wire, WIRE_HOLD_MS);
            let fault = if wire.below(2) == 0 {
                WireFault::DropReplies { hold }
            } else {
                WireFault::DropRequests { hold }
            };
            faults.push(Nemesis {
                what: What::Wire {
                    target: role.to_string(),
                    service: service.clone(),
                    fault,
                },
                when: When::After {
                    kind,
                    nth,
                    delay: Duration::ZERO,
                    by: None,
                },
            });
        }
        faults.extend(self.lost_replies(role, kind));
        self.arm(trigger, role, kind, faults);
    }

    /// The lost replies armed on `role`'s first report of `kind`.
    fn lost_replies(&self, role: &str, kind: Kind) -> Vec<Nemesis> {
        let mut dice = self.dice(role, kind, "lose");
        let mut faults = Vec::new();
        for (service, reads) in &self.layout.lossy {
            if reads.after.is_some_and(|after| after != kind) || dice.below(LOSE_ONE_IN) != 0 {
                continue;
            }
            let nth = self.nth(&mut dice, 1);
            faults.push(Nemesis {
                what: What::Wire {
                    target: role.to_string(),
                    service: service.clone(),
                    fault: reads.lose,
                },
                when: When::After {
                    kind,
                    nth,
                    delay: Duration::ZERO,
                    by: None,
                },
            });
        }
        faults
    }

    /// The first gap after `kind` was measured for `role`: pauses of its instances into it.
    pub fn first_gap(&mut self, trigger: &mut Trigger, role: &str, kind: Kind, gap: Duration) {
        let instances = self.instances(role);
        if instances < 2 || self.undeclared(kind) {
            return; // nobody to take a paused process's message over
        }
        let mut dice = self.dice(role, kind, "gap");
        if dice.below(PAUSE_ONE_IN) != 0 {
            return;
        }
        let mut faults = Vec::new();
        for instance in 1..=instances {
            let target = if instance == 1 {
                role.to_string()
            } else {
                format!("{role}-{instance}")
            };
            let fraction = 10 + dice.below(81);
            let delay = (gap * fraction as u32 / 100).max(Duration::from_millis(1));
            faults.push(Nemesis {
                what: What::Pause {
                    target,
                    hold: between(&mut dice, PAUSE_HOLD_MS),
                    unless_alone: true,
                },
                when: When::After {
                    kind,
                    nth: self.nth(&mut dice, instances),
                    delay: Duration::from_millis(delay.as_millis() as u64),
                    by: None,
                },
            });
        }
        self.arm(trigger, role, kind, faults);
    }

    fn arm(&mut self, trigger: &mut Trigger, role: &str, kind: Kind, faults: Vec<Nemesis>) {
        for fault in faults {
            let index = trigger.arm(fault);
            self.armed.push((role.to_string(), kind, index));
        }
    }

    /// The indexes on the trigger of what this draw armed.
    pub fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.armed.iter().map(|(_, _, i)| *i)
    }

    /// What was armed, with each fault's fired count: `run_end.detail.chaos`.
    pub fn report(&self, trigger: &Trigger) -> ChaosArmed {
        let armed = self
            .armed
            .iter()
            .filter_map(|(role, kind, i)| {
                let a = trigger.armed().get(*i)?;
                Some(ArmedStep {
                    role: role.clone(),
                    kind: kind.as_str().to_string(),
                    fault: a.nemesis.to_string(),
                    fired: u64::from(a.fired),
                    ..ArmedStep::default()
                })
            })
            .collect();
        ChaosArmed {
            armed,
            ..ChaosArmed::default()
        }
    }
}

/// A duration in `[low, high]` ms, drawn evenly.
fn between(dice: &mut Dice, (low, high): (u64, u64)) -> Duration {
    Duration::from_millis(low + dice.below(high - low + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::trigger::Reporter;

    fn layout(records: &[&str]) -> Layout {
        Layout {
            roles: vec![("api".into(), 1), ("worker".into(), 2)],
            records: (!records.is_empty()).then(|| records.iter().map(|r| r.to_string()).collect()),
            services: vec!["redis".into()],
            lossy: Vec::new(),
        }
    }

    fn specs(trigger: &Trigger) -> Vec<String> {
        trigger
            .armed()
            .iter()
            .map(|a| a.nemesis.to_string())
            .collect()
    }

    #[test]
    fn a_pair_is_armed_when_first_reported_the_same_way_in_any_order() {
        let mut one = (SystemChaos::draw(7, 40, &layout(&[])), Trigger::default());
        let mut two = (SystemChaos::draw(7, 40, &layout(&[])), Trigger::default());
        assert!(one.1.armed().is_empty(), "nothing before a report");
        one.0.first_report(&mut one.1, "api", Kind::TaskAccepted);
        one.0.first_report(&mut one.1, "worker", Kind::Delivered);
        two.0.first_report(&mut two.1, "worker", Kind::Delivered);
        two.0.first_report(&mut two.1, "api", Kind::TaskAccepted);
        let (mut a, mut b) = (specs(&one.1), specs(&two.1));
        a.sort();
        b.sort();
        assert_eq!(a, b);
        for spec in &a {
            assert!(
                spec.contains("after task_accepted")
                    || spec.contains("after worker delivered")
                    || spec.contains("after delivered"),
                "{spec}"
            );
        }
        // Over many seeds, most pairs get a kill, and every armed fault is on a reported pair.
        let kills: usize = (1..=80)
            .map(|seed| {
                let mut c = SystemChaos::draw(seed, 40, &layout(&[]));
                let mut t = Trigger::default();
                c.first_report(&mut t, "worker", Kind::EffectCommitted);
                specs(&t)
                    .iter()
                    .filter(|s| s.starts_with("kill worker after effect_committed"))
                    .count()
            })
            .sum();
        assert!((60..80).contains(&kills), "{kills} of 80");
    }

    #[test]
    fn pauses_go_into_the_measured_gap_of_roles_with_several_instances() {
        let mut paused = 0;
        for seed in 1..=40 {
            let mut c = SystemChaos::draw(seed, 40, &layout(&[]));
            let mut t = Trigger::default();
            c.first_gap(
                &mut t,
                "api",
                Kind::TaskAccepted,
                Duration::from_millis(100),
            );
            assert!(t.armed().is_empty(), "a role of one instance is not paused");
            c.first_gap(
                &mut t,
                "worker",
                Kind::Delivered,
                Duration::from_millis(200),
            );
            for a in t.armed() {
                let When::After { delay, nth, .. } = &a.nemesis.when else {
                    panic!("{}", a.nemesis)
                };
                assert!((20..=180).contains(&delay.as_millis()), "{}", a.nemesis);
                assert!((1..=10).contains(nth), "{}", a.nemesis);
                paused += 1;
            }
            assert!(t.armed().is_empty() || t.armed().len() == 2);
        }
        assert!((20..=60).contains(&paused), "{paused}");
    }

    #[test]
    fn undeclared_kinds_are_never_armed_and_the_report_counts_firings() {
        let mut c = SystemChaos::draw(3, 40, &layout(&["effect_committed"]));
        let mut t = Trigger::default();
        c.first_report(&mut t, "worker", Kind::Acked);
        assert!(t.armed().is_empty());
        // A seed whose draw kills the first effect_committed.
        let (mut c, mut t) = (1..200)
            .map(|seed| {
                let mut c = SystemChaos::draw(seed, 2, &layout(&[]));
                let mut t = Trigger::default();
                c.first_report(&mut t, "worker", Kind::EffectCommitted);
                (c, t)
            })
            .find(|(_, t)| {
                specs(t)
                    .iter()
                    .any(|s| s == "kill worker after effect_committed")
            })
            .expect("some seed kills the first one");
        let who = Reporter {
            actor: "worker-2",
            role: "worker",
            running: true,
            has_sibling: true,
            at: Duration::ZERO,
        };
        assert!(t.on_step(who, Kind::EffectCommitted).kill.is_some());
        let report = c.report(&t);
        let kill = report
            .armed
            .iter()
            .find(|a| a.fault == "kill worker after effect_committed")
            .unwrap();
        assert_eq!(
            (kill.role.as_str(), kill.kind.as_str(), kill.fired),
            ("worker", "effect_committed", 1)
        );
        c.first_report(&mut t, "worker", Kind::Acked);
        assert!(c.indexes().count() >= 1);
    }

    #[test]
    fn the_wire_is_drawn_on_its_own_dice_for_the_role_that_reported() {
        let mut drawn = 0;
        for seed in 1..=40 {
            let mut t = Trigger::default();
            let mut chaos = SystemChaos::draw(seed, 40, &layout(&[]));
            chaos.first_report(&mut t, "worker", Kind::Delivered);
            for spec in specs(&t).iter().filter(|s| s.starts_with("drop")) {
                drawn += 1;
                assert!(
                    spec.starts_with("drop replies worker redis after delivered")
                        || spec.starts_with("drop requests worker redis after delivered"),
                    "{spec}"
                );
            }
            // The kills and the service faults are those of the same seed without the wire.
            let others: Vec<String> = specs(&t)
                .into_iter()
                .filter(|s| !s.starts_with("drop"))
                .collect();
            let mut dice = chaos.dice("worker", Kind::Delivered, "first");
            let spared = dice.below(SPARE_ONE_IN) == 0;
            assert_eq!(others.iter().any(|s| s.starts_with("kill")), !spared);
        }
        assert!(
            (2..=12).contains(&drawn),
            "about one seed in eight: {drawn}"
        );
    }

    #[test]
    fn lost_replies_are_drawn_after_the_kinds_their_message_follows() {
        use crate::fault::protocols::Wire;
        let mut with_kafka = layout(&[]);
        with_kafka.services.push("kafka".into());
        with_kafka.lossy = Wire::Kafka
            .offers()
            .map(|row| ("kafka".to_string(), row))
            .collect();
        let (mut produce, mut commit) = (0, 0);
        for seed in 1..=40 {
            for kind in [Kind::PublishAttempt, Kind::EffectCommitted] {
                let mut t = Trigger::default();
                let mut chaos = SystemChaos::draw(seed, 40, &with_kafka);
                chaos.first_report(&mut t, "relay", kind);
                for spec in specs(&t).iter().filter(|s| s.starts_with("lose")) {
                    match kind {
                        Kind::PublishAttempt if spec.starts_with("lose produce-ack") => {
                            produce += 1
                        }
                        _ => {
                            assert!(
                                spec.starts_with("lose commit-reply relay kafka after"),
                                "{spec}"
                            );
                            commit += 1;
                        }
                    }
                }
                // Without the lossy services the seed arms the same other faults.
                let mut plain = Trigger::default();
                SystemChaos::draw(seed, 40, &layout(&[])).first_report(&mut plain, "relay", kind);
                let others: Vec<String> = specs(&t)
                    .into_iter()
                    .filter(|s| !s.contains("kafka"))
                    .collect();
                assert_eq!(others, specs(&plain));
            }
        }
        assert!(
            (1..=12).contains(&produce),
            "about one seed in eight: {produce}"
        );
        assert!(
            (2..=24).contains(&commit),
            "one in eight, on both kinds: {commit}"
        );
    }
}
