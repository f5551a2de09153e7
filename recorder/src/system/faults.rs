//! The faults a system run injects (`--fault SPEC`, `[[scenarios]].faults`), parsed from their
//! one-line form and shown back in it:
//!
//! - `kill ROLE after KIND [N]`: SIGKILL the process whose N-th span of kind KIND ends (its export
//!   is answered only after the process is dead);
//! - `pause ROLE after KIND [N] [+DELAY] for DURATION`: SIGSTOP that process DELAY (default 0) after
//!   the export carrying that span is answered, so it stops inside the work that follows the step
//!   (a worker between its dedup look-up and its commit), and SIGCONT after DURATION;
//! - `kill ROLE at DURATION`, `pause ROLE at DURATION for DURATION`, `restart SERVICE at DURATION`:
//!   at a time counted from the first task sent.
//!
//! ROLE is a role (for `after`: whichever instance reported the step; for a timed fault: its first
//! instance) or one instance's actor name (`worker-2`).

use std::fmt;
use std::time::Duration;

use outbox_trace::Kind;

use crate::fault::duration::{parse_duration, show_duration};

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultSpec {
    /// SIGKILL after the `nth` span of `kind` that `target` reports.
    KillAfter {
        /// A role or an actor.
        target: String,
        /// The step.
        kind: Kind,
        /// Which such span (1-based).
        nth: u32,
    },
    /// SIGSTOP `delay` after the export carrying the `nth` span of `kind` that `target` reports
    /// reaches the recorder (it is answered at once, unless a kill holds it), SIGCONT after
    /// `hold`.
    PauseAfter {
        /// A role or an actor.
        target: String,
        /// The step.
        kind: Kind,
        /// Which such span (1-based).
        nth: u32,
        /// From the export's arrival to the SIGSTOP.
        delay: Duration,
        /// How long the process stays stopped.
        hold: Duration,
    },
    /// SIGKILL at a time.
    KillAt {
        /// A role (its first instance) or an actor.
        target: String,
        /// From the first task sent.
        at: Duration,
    },
    /// SIGSTOP at a time, SIGCONT after `hold`.
    PauseAt {
        /// A role (its first instance) or an actor.
        target: String,
        /// From the first task sent.
        at: Duration,
        /// How long the process stays stopped.
        hold: Duration,
    },
    /// SIGKILL a service and start it again, its directory kept.
    RestartAt {
        /// The service's name.
        service: String,
        /// From the first task sent.
        at: Duration,
    },
}

const GRAMMAR: &str = "expected `kill ROLE after KIND [N]`, `kill ROLE at DURATION`, \
                       `pause ROLE after KIND [N] [+DELAY] for DURATION`, \
                       `pause ROLE at DURATION for DURATION` or `restart SERVICE at DURATION`";

impl FaultSpec {
    /// Parses one spec, without checking names against a system.
    pub fn parse(text: &str) -> Result<FaultSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |why: &str| format!("fault `{text}`: {why}; {GRAMMAR}");
        let duration = |w: &str| parse_duration(w).map_err(|e| bad(&e));
        match words.as_slice() {
            ["kill", target, "after", step @ ..] => {
                let (kind, nth, delay) = after(step).map_err(|e| bad(&e))?;
                if delay.is_some() {
                    return Err(bad("a kill takes no delay"));
                }
                Ok(FaultSpec::KillAfter {
                    target: target.to_string(),
                    kind,
                    nth,
                })
            }
            ["pause", target, "after", step @ .., "for", hold] => {
                let (kind, nth, delay) = after(step).map_err(|e| bad(&e))?;
                Ok(FaultSpec::PauseAfter {
                    target: target.to_string(),
                    kind,
                    nth,
                    delay: delay.unwrap_or_default(),
                    hold: duration(hold)?,
                })
            }
            ["kill", target, "at", at] => Ok(FaultSpec::KillAt {
                target: target.to_string(),
                at: duration(at)?,
            }),
            ["pause", target, "at", at, "for", hold] => Ok(FaultSpec::PauseAt {
                target: target.to_string(),
                at: duration(at)?,
                hold: duration(hold)?,
            }),
            ["restart", service, "at", at] => Ok(FaultSpec::RestartAt {
                service: service.to_string(),
                at: duration(at)?,
            }),
            _ => Err(bad("not understood")),
        }
    }

    /// When a timed fault fires, from the first task sent.
    pub fn at(&self) -> Option<Duration> {
        match self {
            FaultSpec::KillAfter { .. } | FaultSpec::PauseAfter { .. } => None,
            FaultSpec::KillAt { at, .. }
            | FaultSpec::PauseAt { at, .. }
            | FaultSpec::RestartAt { at, .. } => Some(*at),
        }
    }

    /// Whether the fault follows a step (`after`) rather than the clock.
    pub fn follows_a_step(&self) -> bool {
        matches!(
            self,
            FaultSpec::KillAfter { .. } | FaultSpec::PauseAfter { .. }
        )
    }

    /// When a timed fault is over (a pause: when it ends).
    pub fn over_at(&self) -> Option<Duration> {
        match self {
            FaultSpec::PauseAt { at, hold, .. } => Some(*at + *hold),
            other => other.at(),
        }
    }
}

/// The words after `after`: `KIND [N] [+DELAY]`.
fn after(words: &[&str]) -> Result<(Kind, u32, Option<Duration>), String> {
    let Some((kind, mut rest)) = words.split_first() else {
        return Err("a kind is missing".into());
    };
    let kind: Kind = kind.parse().map_err(|_| format!("`{kind}` is no kind"))?;
    let mut nth = 1;
    if let Some((n, tail)) = rest.split_first().filter(|(n, _)| !n.starts_with('+')) {
        nth = n
            .parse::<u32>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| format!("`{n}` is not a count from 1"))?;
        rest = tail;
    }
    let delay = match rest {
        [] => None,
        [d] if d.starts_with('+') => Some(parse_duration(&d[1..])?),
        [word, ..] => return Err(format!("`{word}` is not understood")),
    };
    Ok((kind, nth, delay))
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultSpec::KillAfter { target, kind, nth } if *nth == 1 => {
                write!(f, "kill {target} after {kind}")
            }
            FaultSpec::KillAfter { target, kind, nth } => {
                write!(f, "kill {target} after {kind} {nth}")
            }
            FaultSpec::PauseAfter {
                target,
                kind,
                nth,
                delay,
                hold,
            } => {
                write!(f, "pause {target} after {kind}")?;
                if *nth != 1 {
                    write!(f, " {nth}")?;
                }
                if !delay.is_zero() {
                    write!(f, " +{}", show_duration(*delay))?;
                }
                write!(f, " for {}", show_duration(*hold))
            }
            FaultSpec::KillAt { target, at } => {
                write!(f, "kill {target} at {}", show_duration(*at))
            }
            FaultSpec::PauseAt { target, at, hold } => write!(
                f,
                "pause {target} at {} for {}",
                show_duration(*at),
                show_duration(*hold)
            ),
            FaultSpec::RestartAt { service, at } => {
                write!(f, "restart {service} at {}", show_duration(*at))
            }
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
            "restart redis at 2s",
        ] {
            let spec = FaultSpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!(
            FaultSpec::parse("pause worker after delivered 2 +20ms for 3s").unwrap(),
            FaultSpec::PauseAfter {
                target: "worker".into(),
                kind: Kind::Delivered,
                nth: 2,
                delay: Duration::from_millis(20),
                hold: Duration::from_secs(3),
            }
        );
        assert_eq!(
            FaultSpec::parse("kill worker after acked").unwrap(),
            FaultSpec::KillAfter {
                target: "worker".into(),
                kind: Kind::Acked,
                nth: 1
            }
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
            "kill worker at soon",
            "explode worker",
        ] {
            let e = FaultSpec::parse(text).unwrap_err();
            assert!(e.contains(text) && e.contains("expected"), "{e}");
        }
    }
}
