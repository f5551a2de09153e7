//! The lives of one actor, for both subjects: which life runs now (the `incarnation` column), how
//! many of its lives ended on their own, and the one restart back-off after such an end. A life
//! killed by a fault is followed at once; one that exited or failed on its own waits, a little
//! longer each time, so a process that cannot start does not spin.

use std::time::Duration;

/// The first wait after a life ended on its own.
const FIRST_WAIT: Duration = Duration::from_millis(200);
/// The longest wait.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// A life shorter than this that ends on its own ended "at once".
pub const AT_ONCE: Duration = Duration::from_secs(1);
/// Lives in a row that end at once before the actor is given up: it cannot run.
pub const AT_ONCE_IN_A_ROW: u32 = 5;

/// The lives of one actor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lives {
    /// The life that runs now: 0 for the first, one more at each restart.
    pub incarnation: u32,
    /// Lives that ended on their own (an exit or an error, not a fault).
    pub failures: u32,
    /// Lives in a row that ended on their own within [`AT_ONCE`] of starting.
    pub at_once: u32,
}

impl Lives {
    /// The next life follows at once (a fault killed this one, or it is restarted on purpose);
    /// returns its incarnation.
    pub fn next_life(&mut self) -> u32 {
        self.incarnation += 1;
        self.incarnation
    }

    /// The life ended on its own: returns how long to wait before the next one.
    pub fn failed(&mut self) -> Duration {
        self.failures += 1;
        backoff(self.failures)
    }

    /// A life that lasted `lived` ended on its own: how long to wait before the next one, or
    /// `None` when [`AT_ONCE_IN_A_ROW`] lives in a row ended at once (the actor cannot run, and
    /// waiting would not change that).
    pub fn ended(&mut self, lived: Duration) -> Option<Duration> {
        self.at_once = if lived < AT_ONCE { self.at_once + 1 } else { 0 };
        let wait = self.failed();
        (self.at_once < AT_ONCE_IN_A_ROW).then_some(wait)
    }
}

/// The wait before the next life after `failures` lives ended on their own: 200 ms, doubling,
/// at most 5 s.
pub fn backoff(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(5);
    (FIRST_WAIT * 2u32.pow(doublings)).min(LONGEST_WAIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_200ms_up_to_5s() {
        let waits: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    }

    #[test]
    fn lives_that_end_at_once_in_a_row_give_the_actor_up_and_a_long_one_resets_the_count() {
        let mut lives = Lives::default();
        let short = Duration::from_millis(50);
        for _ in 1..AT_ONCE_IN_A_ROW {
            assert!(lives.ended(short).is_some());
        }
        assert!(
            lives.ended(Duration::from_secs(3)).is_some(),
            "a long life resets"
        );
        for _ in 1..AT_ONCE_IN_A_ROW {
            assert!(lives.ended(short).is_some());
        }
        assert_eq!(lives.ended(short), None);
    }

    #[test]
    fn a_killed_life_is_followed_at_once_and_a_failed_one_after_a_wait() {
        let mut lives = Lives::default();
        assert_eq!(lives.next_life(), 1);
        assert_eq!(lives.failed(), Duration::from_millis(200));
        assert_eq!(lives.failed(), Duration::from_millis(400));
        assert_eq!((lives.incarnation, lives.failures), (1, 2));
    }
}
