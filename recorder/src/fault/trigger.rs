//! Which step-following faults a reported step sets off: the `after KIND [N]` matcher, pure and
//! shared by both subjects (the lab's actors report steps on their standard output, a system's
//! processes as spans; both hold the report while the recorder decides).
//!
//! A fault counts the steps of its kind that its target reports (a role counts any of its
//! instances, an actor only itself) and fires on the N-th: a kill once, a pause on the first such
//! step at or after the N-th on which it may pause (a process already stopped, or the last of its
//! role for an `unless alone` pause, lets the pause wait for the next such step). A service's
//! fault counts the steps of the role or actor it names after `after` (or of every process) and
//! fires on the N-th. Every fault keeps how often it fired, and when first.

use std::time::Duration;

use outbox_trace::{CrashSite, Kind};

use super::spec::{Nemesis, What, When};

/// One step-following fault and its counts.
#[derive(Debug, Clone)]
pub struct Armed {
    /// The fault.
    pub nemesis: Nemesis,
    /// Steps of its kind its target reported.
    pub seen: u32,
    /// How often it fired.
    pub fired: u32,
    /// When it first fired, from the scenario's first task.
    pub first: Option<Duration>,
}

/// What one step set off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Struck {
    /// The process dies on this step: `<role>:after-<kind>`.
    pub kill: Option<CrashSite>,
    /// Pauses to begin, `(fault index, delay, hold)`.
    pub pauses: Vec<(usize, Duration, Duration)>,
    /// Service faults to carry out (a restart while the report is held; a service's pause
    /// `delay` after it is answered), by fault index.
    pub services: Vec<usize>,
    /// Wire faults to switch on before the report is answered, by fault index.
    pub wire: Vec<usize>,
}

/// Who reported a step, and whether it may be paused now.
#[derive(Debug, Clone, Copy)]
pub struct Reporter<'a> {
    /// Its actor name (`worker-2`).
    pub actor: &'a str,
    /// Its role (`worker`).
    pub role: &'a str,
    /// It runs (is not stopped already).
    pub running: bool,
    /// Another process of its role runs on.
    pub has_sibling: bool,
    /// When the step was reported, from the scenario's first task.
    pub at: Duration,
}

/// The step-following faults of a scenario.
#[derive(Debug, Clone, Default)]
pub struct Trigger {
    armed: Vec<Armed>,
}

impl Trigger {
    /// The faults among `faults` that follow a step.
    pub fn new<'a>(faults: impl IntoIterator<Item = &'a Nemesis>) -> Trigger {
        Trigger {
            armed: faults
                .into_iter()
                .filter(|f| f.follows_a_step())
                .map(|f| Armed {
                    nemesis: f.clone(),
                    seen: 0,
                    fired: 0,
                    first: None,
                })
                .collect(),
        }
    }

    /// Whether no fault follows a step.
    pub fn is_empty(&self) -> bool {
        self.armed.is_empty()
    }

    /// The kinds whose report must be held for `actor` of `role`: the kinds some fault that
    /// follows its steps follows.
    pub fn held_kinds(&self, actor: &str, role: &str) -> Vec<Kind> {
        let mut kinds: Vec<Kind> = self
            .armed
            .iter()
            .filter(|a| a.follows(actor, role))
            .filter_map(|a| match &a.nemesis.when {
                When::After { kind, .. } => Some(*kind),
                When::At(_) => None,
            })
            .collect();
        kinds.sort_by_key(|k| k.as_str());
        kinds.dedup();
        kinds
    }

    /// A step of `kind` reported by `who`: what it sets off. A process this step kills is not
    /// paused by it: its pauses wait for a later step.
    pub fn on_step(&mut self, who: Reporter<'_>, kind: Kind) -> Struck {
        let mut struck = Struck::default();
        let mut may_pause = who.running;
        for (i, armed) in self.armed.iter_mut().enumerate() {
            let (k, nth, delay) = match &armed.nemesis.when {
                When::After {
                    kind, nth, delay, ..
                } => (*kind, *nth, *delay),
                When::At(_) => continue,
            };
            if k != kind || !armed.follows(who.actor, who.role) {
                continue;
            }
            armed.seen += 1;
            let fires = match &armed.nemesis.what {
                What::Kill { .. } => armed.seen == nth,
                What::Pause { unless_alone, .. } => {
                    let allowed = may_pause && (!unless_alone || who.has_sibling);
                    armed.seen >= nth && armed.fired == 0 && allowed
                }
                What::Restart { .. } | What::PauseService { .. } | What::Wire { .. } => {
                    armed.seen == nth
                }
            };
            if !fires {
                continue;
            }
            armed.fired += 1;
            armed.first.get_or_insert(who.at);
            match &armed.nemesis.what {
                What::Kill { .. } => {
                    struck
                        .kill
                        .get_or_insert_with(|| CrashSite::after_step(who.role, kind));
                }
                What::Pause { hold, .. } => {
                    may_pause = false;
                    struck.pauses.push((i, delay, *hold));
                }
                What::Restart { .. } | What::PauseService { .. } => struck.services.push(i),
                What::Wire { .. } => struck.wire.push(i),
            }
        }
        if struck.kill.is_some() {
            for (i, _, _) in std::mem::take(&mut struck.pauses) {
                self.rearm(i);
            }
        }
        struck
    }

    /// Takes back a pause that was set off but will not happen (its process is killed by the
    /// same report): it waits for the next such step.
    pub fn rearm(&mut self, index: usize) {
        if let Some(armed) = self.armed.get_mut(index) {
            armed.fired = armed.fired.saturating_sub(1);
            if armed.fired == 0 {
                armed.first = None;
            }
        }
    }

    /// Every step-following fault with its counts.
    pub fn armed(&self) -> &[Armed] {
        &self.armed
    }

    /// Adds a step-following fault after the start (a chaos draw arms them as the processes
    /// report their kinds); returns its index.
    pub fn arm(&mut self, nemesis: Nemesis) -> usize {
        self.armed.push(Armed {
            nemesis,
            seen: 0,
            fired: 0,
            first: None,
        });
        self.armed.len() - 1
    }
}

impl Armed {
    /// Whether the steps of `actor` of `role` count for this fault: a process's fault counts
    /// its target's steps, a service's fault those of the process it names (or of any).
    fn follows(&self, actor: &str, role: &str) -> bool {
        let names = |n: &str| n == actor || n == role;
        match (&self.nemesis.what, &self.nemesis.when) {
            (_, When::At(_)) => false,
            (What::Kill { target } | What::Pause { target, .. } | What::Wire { target, .. }, _) => {
                names(target)
            }
            (What::Restart { .. } | What::PauseService { .. }, When::After { by, .. }) => {
                by.as_deref().is_none_or(names)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(specs: &[&str]) -> Trigger {
        let faults: Vec<Nemesis> = specs
            .iter()
            .map(|s| {
                Nemesis::parse(s)
                    .unwrap()
                    .resolve(|n| n == "redis")
                    .unwrap()
            })
            .collect();
        Trigger::new(&faults)
    }

    fn who<'a>(actor: &'a str, role: &'a str) -> Reporter<'a> {
        Reporter {
            actor,
            role,
            running: true,
            has_sibling: true,
            at: Duration::ZERO,
        }
    }

    #[test]
    fn a_kill_fires_on_the_nth_step_of_its_target_only() {
        let mut t = trigger(&["kill worker after effect_committed 2", "kill relay at 1s"]);
        assert_eq!(t.armed().len(), 1, "timed faults are not step-following");
        let w = who("worker-2", "worker");
        assert_eq!(
            t.on_step(who("relay", "relay"), Kind::EffectCommitted),
            Struck::default()
        );
        assert_eq!(t.on_step(w, Kind::Acked), Struck::default());
        assert_eq!(t.on_step(w, Kind::EffectCommitted).kill, None);
        assert_eq!(
            t.on_step(who("worker", "worker"), Kind::EffectCommitted)
                .kill,
            Some(CrashSite::after_step("worker", Kind::EffectCommitted))
        );
        assert_eq!(t.on_step(w, Kind::EffectCommitted).kill, None, "once");
        assert_eq!(t.armed()[0].fired, 1);
    }

    #[test]
    fn an_actor_target_counts_only_its_own_steps() {
        let mut t = trigger(&["kill worker-2 after delivered"]);
        assert_eq!(
            t.on_step(who("worker", "worker"), Kind::Delivered).kill,
            None
        );
        assert!(t
            .on_step(who("worker-2", "worker"), Kind::Delivered)
            .kill
            .is_some());
    }

    #[test]
    fn a_pause_waits_for_a_step_on_which_it_may_pause() {
        let mut t = trigger(&["pause worker after delivered 2 +30ms for 3s unless alone"]);
        let mut w = who("worker", "worker");
        assert!(
            t.on_step(w, Kind::Delivered).pauses.is_empty(),
            "before the 2nd"
        );
        w.has_sibling = false;
        assert!(t.on_step(w, Kind::Delivered).pauses.is_empty(), "alone");
        w.has_sibling = true;
        w.running = false;
        assert!(
            t.on_step(w, Kind::Delivered).pauses.is_empty(),
            "stopped already"
        );
        w.running = true;
        let struck = t.on_step(w, Kind::Delivered);
        assert_eq!(
            struck.pauses,
            vec![(0, Duration::from_millis(30), Duration::from_secs(3))]
        );
        assert!(t.on_step(w, Kind::Delivered).pauses.is_empty(), "once");
    }

    #[test]
    fn a_pause_of_the_only_instance_fires_unless_the_spec_asks_for_a_sibling() {
        let mut t = trigger(&["pause worker after delivered for 3s"]);
        let mut w = who("worker", "worker");
        w.has_sibling = false;
        assert_eq!(t.on_step(w, Kind::Delivered).pauses.len(), 1);
    }

    #[test]
    fn a_step_that_kills_its_process_pauses_it_not_and_the_pause_waits() {
        let mut t = trigger(&["pause worker after acked for 1s", "kill worker after acked"]);
        let w = who("worker", "worker");
        let struck = t.on_step(w, Kind::Acked);
        assert!(struck.kill.is_some() && struck.pauses.is_empty());
        assert_eq!(t.on_step(w, Kind::Acked).pauses.len(), 1);
    }

    #[test]
    fn held_kinds_are_the_kinds_the_target_s_faults_follow() {
        let t = trigger(&[
            "kill worker after effect_committed",
            "pause worker-2 after delivered for 1s",
            "kill relay after publish_acked",
        ]);
        assert_eq!(
            t.held_kinds("worker-2", "worker"),
            vec![Kind::Delivered, Kind::EffectCommitted]
        );
        assert_eq!(
            t.held_kinds("worker", "worker"),
            vec![Kind::EffectCommitted]
        );
        assert!(t.held_kinds("api", "api").is_empty());
    }

    #[test]
    fn a_service_fault_follows_the_steps_of_the_process_it_names_or_of_any() {
        let mut t = trigger(&[
            "restart redis after worker-2 delivered 2",
            "pause redis after acked for 1s",
        ]);
        let (w1, mut w2) = (who("worker", "worker"), who("worker-2", "worker"));
        assert!(t.on_step(w1, Kind::Delivered).services.is_empty());
        assert!(t.on_step(w2, Kind::Delivered).services.is_empty());
        w2.at = Duration::from_millis(70);
        assert_eq!(t.on_step(w2, Kind::Delivered).services, vec![0]);
        assert!(t.on_step(w2, Kind::Delivered).services.is_empty(), "once");
        assert_eq!(
            t.on_step(who("relay", "relay"), Kind::Acked).services,
            vec![1]
        );
        assert_eq!(
            (t.armed()[0].fired, t.armed()[0].first),
            (1, Some(Duration::from_millis(70)))
        );
        assert_eq!(
            t.held_kinds("worker-2", "worker"),
            vec![Kind::Acked, Kind::Delivered]
        );
        assert_eq!(t.held_kinds("worker", "worker"), vec![Kind::Acked]);
    }
}
