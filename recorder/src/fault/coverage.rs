//! What a scenario tried: every fault it named, searched or drew, how often and when it fired,
//! and, for one that never fired, why (from what the processes reported). This is the data behind
//! `run_end.detail.faults` and the line the recorder prints at a scenario's end.

use std::time::Duration;

use outbox_trace::detail::{FaultForm, FaultTried};
use outbox_trace::Kind;

use super::duration::show_duration;
use super::spec::{Nemesis, What, When, WireFault};

/// Where a scenario's faults come from, which decides how a fault that never fired is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Named by the user (`--fault`, `[[scenarios]].faults`): recorded in
    /// `run_start.detail.faults`; one that never fired leaves the scenario `unknown`.
    #[default]
    Named,
    /// One schedule of a systematic search (`recorder explore`): recorded in
    /// `run_start.detail.searched`; one that never fired is reported as not reached, not judged.
    Searched,
}

/// One fault and its count.
#[derive(Debug, Clone)]
pub struct Tally {
    /// The fault.
    pub nemesis: Nemesis,
    /// How many times it fired.
    pub fired: u64,
    /// When it first fired, from the scenario's first task.
    pub first: Option<Duration>,
}

impl Tally {
    /// A fault not fired yet.
    pub fn new(nemesis: Nemesis) -> Tally {
        Tally {
            nemesis,
            fired: 0,
            first: None,
        }
    }

    /// Counts one firing at `at` from the first task.
    pub fn fire(&mut self, at: Duration) {
        self.fired += 1;
        self.first.get_or_insert(at);
    }

    /// The entry of `run_end.detail.faults`, with `why` for a fault that never fired.
    pub fn entry(&self, why: impl FnOnce(&Nemesis) -> String) -> FaultTried {
        FaultTried {
            spec: self.nemesis.to_string(),
            fired: self.fired,
            first_ms: self.first.map(|d| d.as_millis() as u64),
            why: (self.fired == 0).then(|| why(&self.nemesis)),
            form: Some(form(&self.nemesis)),
            ..FaultTried::default()
        }
    }
}

/// `fault`'s parts, as `run_end.detail.faults[].form` records them.
pub fn form(fault: &Nemesis) -> FaultForm {
    let ms = |d: Duration| Some(d.as_millis() as u64);
    let unless_alone = match &fault.what {
        What::Pause { unless_alone, .. } => unless_alone.then_some(true),
        _ => None,
    };
    let (verb, target, service, hold_ms) = match &fault.what {
        What::Kill { target } => ("kill", Some(target), None, None),
        What::Pause { target, hold, .. } => ("pause", Some(target), None, ms(*hold)),
        What::Restart { service } => ("restart", None, Some(service), None),
        What::PauseService { service, hold } => ("pause", None, Some(service), ms(*hold)),
        What::Wire {
            target,
            service,
            fault,
        } => (
            fault.verb(),
            Some(target),
            Some(service),
            fault.hold().and_then(ms),
        ),
    };
    let mut form = FaultForm {
        verb: verb.to_string(),
        target: target.cloned(),
        service: service.cloned(),
        hold_ms,
        unless_alone,
        ..FaultForm::default()
    };
    match &fault.when {
        When::At(at) => form.at_ms = ms(*at),
        When::After {
            kind,
            nth,
            by,
            delay,
        } => {
            form.after = Some(kind.to_string());
            form.nth = Some(u64::from(*nth));
            form.by = by.clone();
            form.delay_ms = (!delay.is_zero()).then_some(delay.as_millis() as u64);
        }
    }
    form
}

/// Why `fault` never fired, from what the processes reported: `count(Some(who), kind)` is how
/// many steps of `kind` a role or actor reported, `count(None, kind)` every process's; `ran` is
/// how long the scenario ran from its first task.
pub fn why_not(
    fault: &Nemesis,
    count: impl Fn(Option<&str>, Kind) -> u64,
    ran: Duration,
) -> String {
    match (&fault.what, &fault.when) {
        (_, When::At(at)) if ran < *at => format!(
            "the scenario ended {} after its first task, before {}",
            show_duration(ran),
            show_duration(*at)
        ),
        (_, When::At(at)) => {
            let name = fault.target().or(fault.service()).unwrap_or("its target");
            format!("{name} was not running at {}", show_duration(*at))
        }
        (what, When::After { kind, nth, by, .. }) => {
            let who = fault.target().or(by.as_deref());
            let named = who.unwrap_or("no process");
            let seen = count(who, *kind);
            match seen {
                0 if who.is_none() => format!("no process reported {kind}"),
                0 => format!("{named} reported no {kind}"),
                n if n < u64::from(*nth) => {
                    let from = who.map(|w| format!(" from {w}")).unwrap_or_default();
                    format!(
                        "only {n} {kind} span{}{from}",
                        if n == 1 { "" } else { "s" }
                    )
                }
                _ => match what {
                    What::Wire { service, fault, .. } if fault.loses_a_reply() => format!(
                        "armed on the wire, but no {} from {named} reached {service} after it",
                        fault.waits_for()
                    ),
                    What::Pause { .. } => format!(
                        "{named} could not be paused at its {kind} steps (stopped already, or \
                         the last of its role running)"
                    ),
                    _ => format!("its {kind} steps came from lives no longer running"),
                },
            }
        }
    }
}

/// Why wire fault `fault` on the wire between `target` and `service`, switched on, never acted:
/// `passed` is what went through those proxies in the whole scenario (toward the service, back).
/// `None` for a `lose` fault on a wire that carried bytes ([`why_not`] says it then).
pub fn wire_idle(
    target: &str,
    service: &str,
    fault: WireFault,
    passed: (u64, u64),
) -> Option<String> {
    if passed == (0, 0) {
        return Some(format!(
            "no byte from {target} to {service} went through the proxy"
        ));
    }
    let (to, back) = passed;
    let whole = format!("{to} bytes to {service} and {back} back in the whole scenario");
    Some(match fault {
        WireFault::Cut => format!(
            "no connection from {target} to {service} was open through the proxy when it was \
             cut ({whole})"
        ),
        WireFault::DropReplies { .. } => format!(
            "no byte from {service} to {target} crossed the proxy while it lasted ({whole})"
        ),
        WireFault::DropRequests { .. } => format!(
            "no byte from {target} to {service} crossed the proxy while it lasted ({whole})"
        ),
        WireFault::Partition { .. } => format!(
            "no byte between {target} and {service} crossed the proxy and no connection was \
             tried while it lasted ({whole})"
        ),
        lose => {
            debug_assert!(lose.loses_a_reply(), "a lose fault");
            return None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_s_form_holds_what_its_text_says() {
        let form_of = |spec: &str| form(&Nemesis::parse(spec).unwrap());
        let kill = form_of("kill worker-2 after effect_committed 3");
        assert_eq!(
            (
                kill.verb.as_str(),
                kill.target.as_deref(),
                kill.service.as_deref()
            ),
            ("kill", Some("worker-2"), None)
        );
        assert_eq!(
            (kill.after.as_deref(), kill.nth),
            (Some("effect_committed"), Some(3))
        );
        let pause = form_of("pause worker after delivered +32ms for 5s unless alone");
        assert_eq!(
            (pause.delay_ms, pause.hold_ms, pause.unless_alone),
            (Some(32), Some(5000), Some(true))
        );
        let restart = form_of("restart nats after relay publish_attempt 2");
        assert_eq!(
            (
                restart.service.as_deref(),
                restart.by.as_deref(),
                restart.nth
            ),
            (Some("nats"), Some("relay"), Some(2))
        );
        let wire = form_of("drop replies api postgres after intent_recorded for 2s");
        assert_eq!(wire.verb, "drop replies");
        assert_eq!(wire.place(), "api postgres");
        assert_eq!(wire.hold_ms, Some(2000));
        let timed = form_of("partition worker redis at 1500ms for 2s");
        assert_eq!((timed.at_ms, timed.after.as_deref()), (Some(1500), None));
        assert_eq!(timed.when().as_deref(), Some("at 1500ms"));
        assert_eq!(
            form_of("lose puback relay nats after publish_attempt").verb,
            "lose puback"
        );
    }

    fn why(spec: &str, ran_ms: u64) -> String {
        let fault = Nemesis::parse(spec).unwrap();
        let count = |who: Option<&str>, kind: Kind| match (who, kind) {
            (Some("worker"), Kind::EffectCommitted) => 40,
            (None, Kind::EffectCommitted) => 40,
            (Some("worker"), Kind::Delivered) => 41,
            _ => 0,
        };
        why_not(&fault, count, Duration::from_millis(ran_ms))
    }

    #[test]
    fn a_wire_fault_that_never_acted_says_what_crossed_the_proxy() {
        let hold = Duration::from_secs(2);
        assert_eq!(
            wire_idle("api", "kafka", WireFault::DropReplies { hold }, (0, 0)).as_deref(),
            Some("no byte from api to kafka went through the proxy")
        );
        assert_eq!(
            wire_idle("worker", "kafka", WireFault::DropRequests { hold }, (31, 9)).as_deref(),
            Some(
                "no byte from worker to kafka crossed the proxy while it lasted (31 bytes to \
                 kafka and 9 back in the whole scenario)"
            )
        );
        assert!(wire_idle("worker", "pg", WireFault::Cut, (5, 5))
            .is_some_and(|w| w.starts_with("no connection from worker to pg was open")));
        assert_eq!(
            wire_idle("worker", "pg", WireFault::LoseCommitReply, (5, 5)),
            None
        );
        for fault in [WireFault::Cut, WireFault::Partition { hold }] {
            for passed in [(0, 0), (3, 4)] {
                let why = wire_idle("api", "kafka", fault, passed).unwrap();
                assert!(!why.contains("lost"), "{why}");
            }
        }
    }

    #[test]
    fn a_fault_that_never_fired_says_why_in_the_words_of_the_shape() {
        assert_eq!(
            why("kill worker after outbox_marked", 9000),
            "worker reported no outbox_marked"
        );
        assert_eq!(
            why("kill worker after effect_committed 99", 9000),
            "only 40 effect_committed spans from worker"
        );
        assert_eq!(
            why("restart redis after effect_committed 41", 9000),
            "only 40 effect_committed spans"
        );
        assert_eq!(
            why("restart redis after acked", 9000),
            "no process reported acked"
        );
        assert_eq!(
            why("restart redis after relay acked", 9000),
            "relay reported no acked"
        );
        assert!(
            why("pause worker after delivered for 1s unless alone", 9000)
                .contains("could not be paused")
        );
        assert_eq!(
            why("lose commit-reply worker postgres after delivered 3", 9000),
            "armed on the wire, but no COMMIT or offset commit from worker reached postgres after it"
        );
        assert_eq!(
            why("lose produce-ack worker kafka after delivered 3", 9000),
            "armed on the wire, but no produce from worker reached kafka after it"
        );
        assert_eq!(
            why("kill relay at 12s", 9000),
            "the scenario ended 9s after its first task, before 12s"
        );
        assert_eq!(
            why("restart redis at 2s", 9000),
            "redis was not running at 2s"
        );
        let mut tally = Tally::new(Nemesis::parse("kill relay at 1s").unwrap());
        assert_eq!(
            tally.entry(|_| "not yet".into()).why.as_deref(),
            Some("not yet")
        );
        tally.fire(Duration::from_millis(1002));
        let entry = tally.entry(|_| unreachable!("fired"));
        assert_eq!(
            (entry.fired, entry.first_ms, entry.why),
            (1, Some(1002), None)
        );
    }
}
