//! The ledger of a scenario's faults, one for both subjects: the timed faults still to come, in
//! time order; how often each named one fired and when first; and, at the scenario's end, what
//! it tried (`run_end.detail.faults`). A wire fault counts there only as often as its proxy says
//! it acted on traffic (bytes or a message dropped, a connection cut, reset or refused), not as
//! often as it was switched on: one that passed over an idle or unused connection did not fire,
//! and says why.

use std::collections::VecDeque;
use std::time::Duration;

use outbox_trace::detail::{FaultTried, RunEnd};
use outbox_trace::Kind;

use super::coverage::{why_not, wire_idle, Tally};
use super::spec::{Nemesis, What, WireFault};
use super::trigger::Armed;

/// What a subject's proxies saw in a scenario, for the wire faults it tried.
pub trait Proxies {
    /// How many times `fault` acted on traffic between the processes `target` names (a role or
    /// an actor) and `service`.
    fn acted(&self, target: &str, service: &str, fault: WireFault) -> u64;

    /// The bytes that went through the proxies between the processes `target` names and
    /// `service` in the whole scenario: `(toward the service, back)`.
    fn passed(&self, target: &str, service: &str) -> (u64, u64);
}

/// A timed fault come due, taken off the queue: the caller carries it out and says whether it
/// fired ([`Ledger::fired`]).
#[derive(Debug, Clone)]
pub struct TimedFault {
    /// The fault.
    pub nemesis: Nemesis,
    /// Its count among the named ones; `None` for a chaos plan's action, carried out uncounted.
    tally: Option<usize>,
}

/// A scenario's faults: the timed ones to come and what the named ones did.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The named timed faults, in the order given, each with how often it fired.
    named: Vec<Tally>,
    /// The timed faults not carried out yet, in time order.
    queue: VecDeque<TimedFault>,
    /// When the last timed fault is over (a pause: when it ends), from the scenario's zero.
    over: Duration,
}

impl Ledger {
    /// The ledger of a scenario that names `faults` (its timed ones are counted, reported in the
    /// order given) and carries out a chaos plan's `actions` besides (not counted).
    pub fn new(faults: &[Nemesis], actions: Vec<Nemesis>) -> Ledger {
        let named: Vec<Nemesis> = faults
            .iter()
            .filter(|f| f.at().is_some())
            .cloned()
            .collect();
        let counted = named
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, nemesis)| TimedFault {
                nemesis,
                tally: Some(i),
            });
        let uncounted = actions.into_iter().map(|nemesis| TimedFault {
            nemesis,
            tally: None,
        });
        let mut queue: Vec<TimedFault> = counted.chain(uncounted).collect();
        queue.sort_by_key(|t| t.nemesis.at());
        let over = queue
            .iter()
            .filter_map(|t| t.nemesis.over_at())
            .max()
            .unwrap_or_default();
        Ledger {
            named: named.into_iter().map(Tally::new).collect(),
            queue: queue.into(),
            over,
        }
    }

    /// The next timed fault, taken off the queue, if it is due `since` the scenario's zero and
    /// `ready(fault, overdue)` lets it go; the faults behind it wait for it.
    pub fn next_due(
        &mut self,
        since: Duration,
        ready: impl FnOnce(&Nemesis, Duration) -> bool,
    ) -> Option<TimedFault> {
        let fault = &self.queue.front()?.nemesis;
        let overdue = since.checked_sub(fault.at().unwrap_or_default())?;
        if !ready(fault, overdue) {
            return None;
        }
        self.queue.pop_front()
    }

    /// `fault` fired, `at` from the scenario's zero (a chaos plan's action is not counted).
    pub fn fired(&mut self, fault: &TimedFault, at: Duration) {
        if let Some(tally) = fault.tally.and_then(|i| self.named.get_mut(i)) {
            tally.fire(at);
        }
    }

    /// Whether a timed fault is still to come.
    pub fn pending(&self) -> bool {
        !self.queue.is_empty()
    }

    /// When the last timed fault is over (a pause: when it ends), from the scenario's zero.
    pub fn over(&self) -> Duration {
        self.over
    }

    /// What the scenario tried (`run_end.detail.faults`): its own step-following faults as the
    /// trigger counted them (`armed`, but for those a chaos draw added, the indexes in
    /// `drawn`), the named timed ones, then the drawn ones. For one that never fired, why, from
    /// `count(armed, who, kind)`: how many steps of `kind` the process `who` names (`None`:
    /// every process) reported. A wire fault counts as `proxies` say it acted (without
    /// proxies, as switched on). `ran` is how long the scenario ran from its zero.
    pub fn tried<P: Proxies>(
        &self,
        armed: &[Armed],
        drawn: &[usize],
        count: impl Fn(&Armed, Option<&str>, Kind) -> u64,
        proxies: Option<&P>,
        ran: Duration,
    ) -> Vec<FaultTried> {
        let step = |a: &Armed| {
            let tally = Tally {
                nemesis: a.nemesis.clone(),
                fired: u64::from(a.fired),
                first: a.first,
            };
            on_the_wire(tally, proxies, |f| {
                why_not(f, |who, kind| count(a, who, kind), ran)
            })
        };
        let is_drawn = |i: &usize| drawn.contains(i);
        let (chaos, own): (Vec<_>, Vec<_>) =
            armed.iter().enumerate().partition(|(i, _)| is_drawn(i));
        // A timed fault's why needs no count of steps.
        let timed = self
            .named
            .iter()
            .map(|t| on_the_wire(t.clone(), proxies, |f| why_not(f, |_, _| 0, ran)));
        let own = own.into_iter().map(|(_, a)| step(a));
        let chaos = chaos.into_iter().map(|(_, a)| step(a));
        own.chain(timed).chain(chaos).collect()
    }
}

/// The entry of tally `t`, a wire fault's counted only as often as `proxies` say it acted on
/// traffic, with why when it never did (nothing crossed its proxy, say).
fn on_the_wire<P: Proxies>(
    mut t: Tally,
    proxies: Option<&P>,
    why: impl FnOnce(&Nemesis) -> String,
) -> FaultTried {
    let (
        Some(proxies),
        What::Wire {
            target,
            service,
            fault,
        },
    ) = (proxies, &t.nemesis.what)
    else {
        return t.entry(why);
    };
    let switched_on = t.fired > 0;
    t.fired = t.fired.min(proxies.acted(target, service, *fault));
    let idle = (switched_on && t.fired == 0)
        .then(|| wire_idle(target, service, *fault, proxies.passed(target, service)))
        .flatten();
    t.entry(|f| idle.unwrap_or_else(|| why(f)))
}

/// Says on stderr which faults scenario `name` named that never fired (and why), unless
/// `named_too` is false, and how many of its chaos draw's fired; `reporters` names who reported
/// the steps (`actors`, `roles`).
pub fn tell_faults(name: &str, end: &RunEnd, named_too: bool, reporters: &str) {
    let drawn = |spec: &str| {
        end.chaos
            .as_ref()
            .is_some_and(|c| c.armed.iter().any(|a| a.fault == spec))
    };
    let silent = end
        .faults
        .iter()
        .filter(|f| f.fired == 0 && !drawn(&f.spec));
    for fault in silent.filter(|_| named_too) {
        eprintln!(
            "recorder: scenario {name}: fault `{}` never fired: {}",
            fault.spec,
            fault.why.as_deref().unwrap_or("no reason known")
        );
    }
    if let Some(chaos) = &end.chaos {
        let fired = chaos.armed.iter().filter(|a| a.fired > 0).count();
        eprintln!(
            "recorder: scenario {name}: chaos armed {} fault(s) on the steps the {reporters} \
             reported; {fired} fired",
            chaos.armed.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(spec: &str) -> Nemesis {
        Nemesis::parse(spec).unwrap()
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// Proxies where a wire fault acted `acted` times and `passed` bytes went through.
    struct Seen {
        acted: u64,
        passed: (u64, u64),
    }

    impl Proxies for Seen {
        fn acted(&self, _: &str, _: &str, _: WireFault) -> u64 {
            self.acted
        }
        fn passed(&self, _: &str, _: &str) -> (u64, u64) {
            self.passed
        }
    }

    #[test]
    fn timed_faults_come_due_in_time_order_and_only_the_named_are_counted() {
        let named = [
            fault("restart redis at 2s"),
            fault("kill worker after delivered"),
            fault("kill relay at 1s"),
        ];
        let mut ledger = Ledger::new(&named, vec![fault("pause worker at 1500ms for 1s")]);
        assert_eq!(ledger.over(), ms(2500));
        assert!(ledger.next_due(ms(999), |_, _| true).is_none());
        let first = ledger.next_due(ms(1200), |_, _| true).unwrap();
        assert_eq!(first.nemesis, fault("kill relay at 1s"));
        ledger.fired(&first, ms(1201));
        // Not ready: it and those behind it wait.
        assert!(ledger
            .next_due(ms(3000), |_, overdue| overdue > ms(2000))
            .is_none());
        let action = ledger.next_due(ms(3000), |_, _| true).unwrap();
        ledger.fired(&action, ms(3000));
        let last = ledger.next_due(ms(3000), |_, _| true).unwrap();
        assert_eq!(last.nemesis, fault("restart redis at 2s"));
        assert!(!ledger.pending());
        let tried = ledger.tried::<Seen>(&[], &[], |_, _, _| 0, None, ms(4000));
        let counts: Vec<_> = tried.iter().map(|t| (t.spec.as_str(), t.fired)).collect();
        assert_eq!(
            counts,
            [("restart redis at 2s", 0), ("kill relay at 1s", 1)]
        );
        assert_eq!(tried[1].first_ms, Some(1201));
        assert_eq!(tried[0].why.as_deref(), Some("redis was not running at 2s"));
    }

    #[test]
    fn the_faults_tried_are_the_own_step_ones_the_timed_then_the_drawn() {
        let ledger = Ledger::new(&[fault("kill relay at 1s")], Vec::new());
        let armed = |spec: &str, seen, fired| Armed {
            nemesis: fault(spec),
            seen,
            fired,
            first: (fired > 0).then(|| ms(5)),
        };
        let armed = [
            armed("kill worker after delivered 9", 3, 0),
            armed("pause worker after acked for 1s", 4, 1),
            armed("kill api after task_accepted", 1, 1),
        ];
        let tried = ledger.tried::<Seen>(&armed, &[1], |a, _, _| u64::from(a.seen), None, ms(9));
        let specs: Vec<_> = tried.iter().map(|t| t.spec.as_str()).collect();
        assert_eq!(
            specs,
            [
                "kill worker after delivered 9",
                "kill api after task_accepted",
                "kill relay at 1s",
                "pause worker after acked for 1s",
            ]
        );
        assert_eq!(
            tried[0].why.as_deref(),
            Some("only 3 delivered spans from worker")
        );
    }

    #[test]
    fn a_wire_fault_counts_only_as_often_as_its_proxy_acted() {
        let drop = "drop replies worker redis after delivered";
        let armed = [Armed {
            nemesis: fault(drop),
            seen: 1,
            fired: 2,
            first: Some(ms(5)),
        }];
        let ledger = Ledger::default();
        let tried =
            |seen: Seen| ledger.tried(&armed, &[], |_, _, _| 1, Some(&seen), ms(9))[0].clone();
        let acted = tried(Seen {
            acted: 1,
            passed: (10, 10),
        });
        assert_eq!((acted.fired, acted.why), (1, None));
        let idle = tried(Seen {
            acted: 0,
            passed: (0, 0),
        });
        assert_eq!(idle.fired, 0);
        assert_eq!(
            idle.why.as_deref(),
            Some("no byte from worker to redis went through the proxy")
        );
        // Without proxies, as switched on.
        let unseen = ledger.tried::<Seen>(&armed, &[], |_, _, _| 1, None, ms(9));
        assert_eq!(unseen[0].fired, 2);
    }
}
