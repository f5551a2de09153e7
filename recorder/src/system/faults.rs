//! The faults a system run injects (`--fault SPEC`, `[[scenarios]].faults`), parsed from their
//! one-line form and shown back in it:
//!
//! - `kill ROLE after KIND [N]`: SIGKILL the process whose N-th span of kind KIND ends (its export
//!   is answered only after the process is dead);
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
                       `pause ROLE at DURATION for DURATION` or `restart SERVICE at DURATION`";

impl FaultSpec {
    /// Parses one spec, without checking names against a system.
    pub fn parse(text: &str) -> Result<FaultSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |why: &str| format!("fault `{text}`: {why}; {GRAMMAR}");
        let duration = |w: &str| parse_duration(w).map_err(|e| bad(&e));
        match words.as_slice() {
            ["kill", target, "after", kind, rest @ ..] if rest.len() <= 1 => {
                let kind: Kind = kind
                    .parse()
                    .map_err(|_| bad(&format!("`{kind}` is no kind")))?;
                let nth = match rest.first() {
                    None => 1,
                    Some(n) => n
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| bad(&format!("`{n}` is not a count from 1")))?,
                };
                Ok(FaultSpec::KillAfter {
                    target: target.to_string(),
                    kind,
                    nth,
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
            FaultSpec::KillAfter { .. } => None,
            FaultSpec::KillAt { at, .. }
            | FaultSpec::PauseAt { at, .. }
            | FaultSpec::RestartAt { at, .. } => Some(*at),
        }
    }

    /// When a timed fault is over (a pause: when it ends).
    pub fn over_at(&self) -> Option<Duration> {
        match self {
            FaultSpec::PauseAt { at, hold, .. } => Some(*at + *hold),
            other => other.at(),
        }
    }
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
            "restart redis at 2s",
        ] {
            let spec = FaultSpec::parse(text).unwrap();
            assert_eq!(spec.to_string(), text);
        }
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
            "kill worker at soon",
            "explode worker",
        ] {
            let e = FaultSpec::parse(text).unwrap_err();
            assert!(e.contains(text) && e.contains("expected"), "{e}");
        }
    }
}
