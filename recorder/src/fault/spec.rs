//! The one fault vocabulary: a [`Nemesis`] is *what* to do to the system under test and *when*,
//! parsed from and shown back in its one-line form. The same specs drive the built-in lab and a
//! team's own system (`--fault SPEC`, `[[scenarios]].faults`), and both subjects' seeded chaos
//! draws produce them.
//!
//! - `kill ROLE after KIND [N]`: SIGKILL the process that reports the N-th step of kind KIND, while
//!   the report of that step is held (so it dies right after that step, before its next);
//! - `pause ROLE after KIND [N] [+DELAY] for DURATION [unless alone]`: SIGSTOP that process DELAY
//!   (default 0) after the report is answered, so it stops inside the work that follows the step
//!   (a worker between its dedup look-up and its commit), and SIGCONT after DURATION; with
//!   `unless alone`, only while another process of its role runs on to take its work over;
//! - `restart SERVICE after [ROLE] KIND [N]`: SIGKILL a service and start it again on its data,
//!   while the report of the N-th step of kind KIND (of ROLE, or of any role) is held;
//! - `pause SERVICE after [ROLE] KIND [N] [+DELAY] for DURATION`: SIGSTOP the service's process
//!   group DELAY after that report is answered, SIGCONT after DURATION;
//! - `kill ROLE at DURATION`, `pause ROLE at DURATION for DURATION`, `restart SERVICE at DURATION`,
//!   `pause SERVICE at DURATION for DURATION`: at a time counted from the scenario's first task;
//! - on the wire between one process and one service (the recorder's proxy): `drop replies ROLE
//!   SERVICE after KIND [N] [for DURATION]`, `drop requests ...` (the same toward the service),
//!   `cut ROLE SERVICE after KIND [N]`, `partition ROLE SERVICE at DURATION for DURATION`, and,
//!   where the proxy reads the protocol, `lose commit-reply ROLE SERVICE after KIND [N]`
//!   (PostgreSQL) and `lose puback ROLE SERVICE after KIND [N]` (NATS JetStream).
//!
//! ROLE is a role (for `after`: whichever instance reported the step; for a timed fault: its first
//! instance) or one instance's actor name (`worker-2`). Whether `pause NAME` stops a process or a
//! service is the subject's to say ([`Nemesis::resolve`]). Adding a fault kind is one variant of
//! [`What`] with its words in `grammar` (parsed) and `show` (shown), and one arm where the fault layer carries it out.

use std::time::Duration;

use outbox_trace::Kind;

mod grammar;
mod show;

/// One fault: what, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nemesis {
    /// What is done.
    pub what: What,
    /// When it is done.
    pub when: When,
}

/// What a fault does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum What {
    /// SIGKILL a process (its next life starts at once).
    Kill {
        /// A role or an actor.
        target: String,
    },
    /// SIGSTOP a process, SIGCONT after `hold`.
    Pause {
        /// A role or an actor.
        target: String,
        /// How long the process stays stopped.
        hold: Duration,
        /// Only while another process of the role runs on (a step-following pause waits for
        /// the next such step otherwise).
        unless_alone: bool,
    },
    /// SIGKILL a service and start it again on its data.
    Restart {
        /// The service's name.
        service: String,
    },
    /// SIGSTOP a service's process group, SIGCONT after `hold`.
    PauseService {
        /// The service's name.
        service: String,
        /// How long the service stays stopped.
        hold: Duration,
    },
    /// A fault on the wire between one process and one service.
    Wire {
        /// A role or an actor.
        target: String,
        /// The service's name.
        service: String,
        /// What happens on the wire.
        fault: WireFault,
    },
}

/// What a wire fault does to the bytes between a process and a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFault {
    /// Every byte from the service to the process is discarded for `hold`, then (if any was)
    /// its connections are reset: the request arrived, its answer was lost.
    DropReplies {
        /// How long.
        hold: Duration,
    },
    /// Every byte from the process to the service is discarded for `hold`, then (if any was)
    /// its connections are reset.
    DropRequests {
        /// How long.
        hold: Duration,
    },
    /// The process's connections to the service are reset now.
    Cut,
    /// New connections refused, open ones black-holed both ways for `hold`, then (if a byte was
    /// dropped) reset.
    Partition {
        /// How long.
        hold: Duration,
    },
    /// The process's next COMMIT reaches the server; its reply is dropped and the connection
    /// reset (PostgreSQL). On Kafka: the next offset commit's response.
    LoseCommitReply,
    /// The process's next JetStream publish is stored; its acknowledgement is dropped (NATS).
    LosePuback,
    /// The process's next Kafka produce is appended; its response is dropped and the connection
    /// reset.
    LoseProduceAck,
}

impl WireFault {
    /// The contract's name of the fault (`drop-replies`, ...).
    pub fn kind(self) -> outbox_trace::FaultKind {
        use outbox_trace::FaultKind as K;
        match self {
            WireFault::DropReplies { .. } => K::DropReplies,
            WireFault::DropRequests { .. } => K::DropRequests,
            WireFault::Cut => K::Cut,
            WireFault::Partition { .. } => K::Partition,
            WireFault::LoseCommitReply => K::LoseCommitReply,
            WireFault::LosePuback => K::LosePuback,
            WireFault::LoseProduceAck => K::LoseProduceAck,
        }
    }

    /// Its verb, as a fault's text writes it (`drop replies`, `lose puback`).
    pub fn verb(&self) -> &'static str {
        match self {
            WireFault::DropReplies { .. } => "drop replies",
            WireFault::DropRequests { .. } => "drop requests",
            WireFault::Cut => "cut",
            WireFault::Partition { .. } => "partition",
            WireFault::LoseCommitReply => "lose commit-reply",
            WireFault::LosePuback => "lose puback",
            WireFault::LoseProduceAck => "lose produce-ack",
        }
    }

    /// How long it lasts, if it lasts.
    pub fn hold(self) -> Option<Duration> {
        match self {
            WireFault::DropReplies { hold }
            | WireFault::DropRequests { hold }
            | WireFault::Partition { hold } => Some(hold),
            _ => None,
        }
    }
}

/// How long `drop replies` and `drop requests` last without `for`.
pub const DROP_FOR: Duration = Duration::from_secs(5);

/// When a fault fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// At a time from the scenario's first task.
    At(Duration),
    /// After the `nth` step of `kind` its target reports (a pause: `delay` after that step's
    /// report is answered).
    After {
        /// The step.
        kind: Kind,
        /// Which such step (1-based).
        nth: u32,
        /// From the answer to the fault (pauses only).
        delay: Duration,
        /// Whose step (a role or an actor) a service's fault follows; `None`: any process's
        /// (a process's fault follows its own steps).
        by: Option<String>,
    },
}

impl Nemesis {
    /// A kill of `target` after its `nth` step of `kind`.
    pub fn kill_after(target: impl Into<String>, kind: Kind, nth: u32) -> Nemesis {
        Nemesis {
            what: What::Kill {
                target: target.into(),
            },
            when: When::After {
                kind,
                nth,
                delay: Duration::ZERO,
                by: None,
            },
        }
    }

    /// The same fault with `pause NAME` told apart: a service's pause where `is_service` says
    /// NAME is one of the subject's services. A process's fault cannot follow another's step, a
    /// service's pause cannot be `unless alone`.
    pub fn resolve(self, is_service: impl Fn(&str) -> bool) -> Result<Nemesis, String> {
        let Nemesis { what, when } = self;
        let what = match what {
            What::Pause {
                target,
                hold,
                unless_alone,
            } if is_service(&target) => {
                if unless_alone {
                    return Err(format!(
                        "`{target}` is a service: only a process's pause takes `unless alone`"
                    ));
                }
                What::PauseService {
                    service: target,
                    hold,
                }
            }
            What::PauseService { service, .. } if !is_service(&service) => {
                return Err(format!(
                    "`{service}` is no service: a process's pause follows its own steps"
                ));
            }
            other => other,
        };
        Ok(Nemesis { what, when })
    }

    /// The role or actor whose step a service's fault follows, when it names one.
    pub fn reporter(&self) -> Option<&str> {
        match &self.when {
            When::After { by, .. } => by.as_deref(),
            When::At(_) => None,
        }
    }

    /// When a timed fault fires, from the first task.
    pub fn at(&self) -> Option<Duration> {
        match self.when {
            When::At(at) => Some(at),
            When::After { .. } => None,
        }
    }

    /// Whether the fault follows a step (`after`) rather than the clock.
    pub fn follows_a_step(&self) -> bool {
        matches!(self.when, When::After { .. })
    }

    /// When a timed fault is over (a pause: when it ends).
    pub fn over_at(&self) -> Option<Duration> {
        let at = self.at()?;
        Some(match &self.what {
            What::Pause { hold, .. } | What::PauseService { hold, .. } => at + *hold,
            What::Wire { fault, .. } => at + fault.hold().unwrap_or_default(),
            _ => at,
        })
    }

    /// The process a fault hits (a role or an actor), or `None` for a service's fault.
    pub fn target(&self) -> Option<&str> {
        match &self.what {
            What::Kill { target } | What::Pause { target, .. } | What::Wire { target, .. } => {
                Some(target)
            }
            What::Restart { .. } | What::PauseService { .. } => None,
        }
    }

    /// The service a fault hits, if it hits one.
    pub fn service(&self) -> Option<&str> {
        match &self.what {
            What::Restart { service }
            | What::PauseService { service, .. }
            | What::Wire { service, .. } => Some(service),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_shows_back_the_same() {
        for text in [
            "kill worker after effect_committed",
            "kill relay after publish_acked 3",
            "kill worker-2 at 1500ms",
            "pause worker at 1s for 3s",
            "pause worker after delivered for 3s",
            "pause worker-2 after delivered 4 +30ms for 2500ms",
            "pause worker after delivered +5ms for 3s unless alone",
            "restart redis at 2s",
            "restart redis after effect_committed 3",
            "restart redis after worker-2 delivered",
            "pause redis after relay publish_attempt 2 +5ms for 1500ms",
            "drop replies relay redis after publish_attempt 3 for 6s",
            "drop requests worker redis after effect_committed 3",
            "cut worker-2 redis after delivered",
            "partition worker-2 redis at 1s for 4s",
            "lose commit-reply worker postgres after delivered 3",
            "lose puback relay nats after publish_attempt",
        ] {
            let spec = Nemesis::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!(
            Nemesis::parse("pause worker after delivered 2 +20ms for 3s").unwrap(),
            Nemesis {
                what: What::Pause {
                    target: "worker".into(),
                    hold: Duration::from_secs(3),
                    unless_alone: false,
                },
                when: When::After {
                    kind: Kind::Delivered,
                    nth: 2,
                    delay: Duration::from_millis(20),
                    by: None,
                },
            }
        );
        assert_eq!(
            Nemesis::parse("kill worker after acked").unwrap(),
            Nemesis::kill_after("worker", Kind::Acked, 1)
        );
    }

    #[test]
    fn malformed_specs_say_what_is_expected() {
        for text in [
            "kill worker after commited",
            "kill worker after acked 0",
            "pause worker at 1s",
            "pause worker after delivered +30ms",
            "pause worker after delivered 2 30ms for 1s",
            "kill worker after delivered +30ms",
            "kill worker after delivered unless alone",
            "kill worker at soon",
            "kill worker after relay publish_acked",
            "restart redis after delivered +5ms",
            "pause redis after worker delivered for 1s unless alone",
            "drop replies relay redis after worker publish_attempt",
            "cut relay redis after publish_attempt +5ms",
            "lose reply relay redis after publish_attempt",
            "partition relay redis after publish_attempt for 1s",
            "explode worker",
        ] {
            let e = Nemesis::parse(text).unwrap_err();
            assert!(e.contains(text) && e.contains("expected"), "{e}");
        }
    }

    #[test]
    fn timed_faults_say_when_they_are_over() {
        let pause = Nemesis::parse("pause api at 1s for 2s").unwrap();
        assert_eq!(pause.at(), Some(Duration::from_secs(1)));
        assert_eq!(pause.over_at(), Some(Duration::from_secs(3)));
        let after = Nemesis::parse("kill api after task_accepted").unwrap();
        assert_eq!((after.at(), after.over_at()), (None, None));
        assert!(after.follows_a_step());
        assert_eq!(after.target(), Some("api"));
        let restart = Nemesis::parse("restart nats at 2s").unwrap();
        assert_eq!((restart.target(), restart.service()), (None, Some("nats")));
    }

    #[test]
    fn a_pause_is_a_services_where_the_subject_says_its_target_is_one() {
        let is_service = |n: &str| n == "redis";
        let pause = |t: &str| Nemesis::parse(t).unwrap().resolve(is_service);
        let service = pause("pause redis at 1s for 2s").unwrap();
        assert_eq!(
            service.what,
            What::PauseService {
                service: "redis".into(),
                hold: Duration::from_secs(2)
            }
        );
        assert_eq!((service.service(), service.target()), (Some("redis"), None));
        assert_eq!(service.over_at(), Some(Duration::from_secs(3)));
        let after = pause("pause redis after delivered 2 for 1s").unwrap();
        assert_eq!(after.to_string(), "pause redis after delivered 2 for 1s");
        assert_eq!(after.service(), Some("redis"));
        let process = pause("pause worker after delivered for 1s").unwrap();
        assert_eq!(process.target(), Some("worker"));
        let by = pause("pause redis after worker-2 acked for 1s").unwrap();
        assert_eq!(by.reporter(), Some("worker-2"));
        let e = pause("pause worker after relay acked for 1s").unwrap_err();
        assert!(e.contains("no service"), "{e}");
        let e = pause("pause redis after acked for 1s unless alone").unwrap_err();
        assert!(e.contains("unless alone"), "{e}");
    }

    #[test]
    fn a_wire_fault_names_its_process_and_service_and_lasts_its_hold() {
        let drop = Nemesis::parse("drop replies relay redis after publish_attempt 3").unwrap();
        assert_eq!(
            (drop.target(), drop.service()),
            (Some("relay"), Some("redis"))
        );
        assert_eq!(
            drop.what,
            What::Wire {
                target: "relay".into(),
                service: "redis".into(),
                fault: WireFault::DropReplies { hold: DROP_FOR },
            }
        );
        let partition = Nemesis::parse("partition worker-2 redis at 1s for 4s").unwrap();
        assert_eq!(partition.over_at(), Some(Duration::from_secs(5)));
        let WireFault::Partition { hold } = (match partition.what {
            What::Wire { fault, .. } => fault,
            _ => unreachable!(),
        }) else {
            unreachable!()
        };
        assert_eq!(hold, Duration::from_secs(4));
        assert_eq!(
            WireFault::LosePuback.kind(),
            outbox_trace::FaultKind::LosePuback
        );
    }
}
