//! The pauses of a scenario as data: those a step called for and not begun yet (a delay after
//! its export), and the processes stopped now, each with when it is continued. The signals are
//! the caller's: this says whom to stop, whom to continue and when. Both subjects pause by it:
//! a team's system from its scenario's loop, the lab one life at a time.
//!
//! The one rule: a process is in one pause at a time. A pause landing on a process stopped
//! already (a timed one, or one whose delay ran out while another held) does not stop it again
//! and lasts until the later of the two ends: it is continued once, when the last pause that
//! holds it is over, never early by the shorter one.

use std::time::{Duration, Instant};

/// A pause a step called for, not begun yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// When it begins.
    pub at: Instant,
    /// Whom it stops.
    pub actor: String,
    /// Which life of `actor`: a later one is not paused by it.
    pub life: u32,
    /// For how long.
    pub hold: Duration,
}

/// The pauses of a scenario.
#[derive(Debug, Default)]
pub struct Pauses {
    pending: Vec<Pending>,
    /// The processes stopped now, with when each is continued.
    stopped: Vec<(Instant, String)>,
}

impl Pauses {
    /// Calls for a pause that begins later.
    pub fn queue(&mut self, pause: Pending) {
        self.pending.push(pause);
    }

    /// Drops the pauses called for on `actor`'s life `life` and not begun.
    pub fn unqueue(&mut self, actor: &str, life: u32) {
        self.pending
            .retain(|p| !(p.actor == actor && p.life == life));
    }

    /// The pause called for, `pause`, begins by a clock of its own rather than by
    /// [`Pauses::due`]: no longer pending.
    pub fn take(&mut self, pause: &Pending) {
        if let Some(i) = self.pending.iter().position(|p| p == pause) {
            self.pending.remove(i);
        }
    }

    /// Whether `actor` is stopped now, or a pause of it is called for.
    pub fn holds(&self, actor: &str) -> bool {
        self.stopped.iter().any(|(_, a)| a == actor)
            || self.pending.iter().any(|p| p.actor == actor)
    }

    /// A pause of `actor` begins, until `until`; whether to stop the process (false: it is
    /// stopped already, and now stays so until the later end).
    pub fn begin(&mut self, actor: &str, until: Instant) -> bool {
        match self.stopped.iter_mut().find(|(_, a)| a == actor) {
            Some((end, _)) => {
                *end = (*end).max(until);
                false
            }
            None => {
                self.stopped.push((until, actor.to_string()));
                true
            }
        }
    }

    /// `actor`'s process is gone (killed): its pause ends with it.
    pub fn gone(&mut self, actor: &str) {
        self.stopped.retain(|(_, a)| a != actor);
    }

    /// The pauses called for that begin by `now`, in the order called for (no longer pending).
    pub fn due(&mut self, now: Instant) -> Vec<Pending> {
        let (due, later) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| p.at <= now);
        self.pending = later;
        due
    }

    /// The processes whose pause is over by `now`, to continue (no longer stopped).
    pub fn over(&mut self, now: Instant) -> Vec<String> {
        let (over, on): (Vec<_>, Vec<_>) = std::mem::take(&mut self.stopped)
            .into_iter()
            .partition(|(end, _)| *end <= now);
        self.stopped = on;
        over.into_iter().map(|(_, actor)| actor).collect()
    }

    /// The processes stopped now.
    pub fn stopped(&self) -> impl Iterator<Item = &str> {
        self.stopped.iter().map(|(_, a)| a.as_str())
    }

    /// When the next pause begins or ends.
    pub fn next(&self) -> Option<Instant> {
        let begins = self.pending.iter().map(|p| p.at);
        let ends = self.stopped.iter().map(|(end, _)| *end);
        begins.chain(ends).min()
    }

    /// Whether no pause is called for and no process stopped.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.stopped.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_pause_over_a_stopped_process_lasts_until_the_later_end() {
        let t0 = Instant::now();
        let mut p = Pauses::default();
        assert!(p.begin("worker", t0 + secs(4)));
        // A shorter pause while it is stopped: not stopped twice, and not continued early.
        assert!(!p.begin("worker", t0 + secs(2)));
        assert!(p.over(t0 + secs(3)).is_empty());
        assert_eq!(p.next(), Some(t0 + secs(4)));
        // A longer one moves the end.
        assert!(!p.begin("worker", t0 + secs(6)));
        assert!(p.over(t0 + secs(5)).is_empty());
        assert_eq!(p.over(t0 + secs(6)), vec!["worker".to_string()]);
        assert!(p.is_empty());
        // Stopped again later: a new pause.
        assert!(p.begin("worker", t0 + secs(8)));
    }

    #[test]
    fn pending_pauses_begin_when_due_and_a_killed_life_drops_its_own() {
        let t0 = Instant::now();
        let pending = |actor: &str, life, at| Pending {
            at: t0 + secs(at),
            actor: actor.to_string(),
            life,
            hold: secs(3),
        };
        let mut p = Pauses::default();
        p.queue(pending("worker", 1, 2));
        p.queue(pending("worker-2", 1, 1));
        p.queue(pending("worker", 2, 5));
        assert!(p.holds("worker") && p.holds("worker-2") && !p.holds("relay"));
        p.unqueue("worker", 1);
        assert_eq!(p.due(t0 + secs(3)), vec![pending("worker-2", 1, 1)]);
        assert_eq!(p.next(), Some(t0 + secs(5)));
        assert_eq!(p.due(t0 + secs(5)), vec![pending("worker", 2, 5)]);
        assert!(p.is_empty());
    }

    #[test]
    fn a_pause_taken_by_its_own_clock_is_no_longer_pending() {
        let t0 = Instant::now();
        let pending = Pending {
            at: t0 + secs(1),
            actor: "worker".to_string(),
            life: 1,
            hold: secs(2),
        };
        let mut p = Pauses::default();
        p.queue(pending.clone());
        p.queue(pending.clone());
        p.take(&pending);
        assert!(p.holds("worker"));
        p.take(&pending);
        assert!(!p.holds("worker") && p.is_empty());
    }

    #[test]
    fn a_gone_process_is_no_longer_stopped() {
        let t0 = Instant::now();
        let mut p = Pauses::default();
        p.begin("worker", t0 + secs(4));
        p.begin("worker-2", t0 + secs(4));
        p.gone("worker");
        assert_eq!(p.stopped().collect::<Vec<_>>(), vec!["worker-2"]);
        assert_eq!(p.over(t0 + secs(4)), vec!["worker-2".to_string()]);
    }
}
