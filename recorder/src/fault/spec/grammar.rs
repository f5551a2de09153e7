//! A fault's one-line form read into a [`Nemesis`]: the words of each verb, the `after` clause
//! (`[ROLE] KIND [N] [+DELAY]`) and the durations; every error names the spec and the grammar.

use std::time::Duration;

use outbox_trace::Kind;

use super::{Nemesis, What, When, WireFault, DROP_FOR};
use crate::fault::duration::parse_duration;
use crate::fault::protocols::READS;

/// Every form a spec may take, for the error of one that takes none.
const GRAMMAR: &str = "expected `kill ROLE after KIND [N]`, `kill ROLE at DURATION`, \
                       `pause ROLE after KIND [N] [+DELAY] for DURATION [unless alone]`, \
                       `pause ROLE at DURATION for DURATION`, `restart SERVICE at DURATION`, \
                       `restart SERVICE after [ROLE] KIND [N]`, \
                       `pause SERVICE after [ROLE] KIND [N] [+DELAY] for DURATION` or \
                       `pause SERVICE at DURATION for DURATION`, \
                       `drop replies|requests ROLE SERVICE after KIND [N] [for DURATION]`, \
                       `cut ROLE SERVICE after KIND [N]`, `partition ROLE SERVICE at DURATION for DURATION`, \
                       `lose commit-reply ROLE SERVICE after KIND [N]` or \
                       `lose puback ROLE SERVICE after KIND [N]`";

impl Nemesis {
    /// Parses one spec, without checking names against a subject.
    pub fn parse(text: &str) -> Result<Nemesis, String> {
        let mut words: Vec<&str> = text.split_whitespace().collect();
        let bad = |why: &str| format!("fault `{text}`: {why}; {GRAMMAR}");
        let unless_alone = words.ends_with(&["unless", "alone"]);
        if unless_alone {
            words.truncate(words.len() - 2);
            if words.first() != Some(&"pause") {
                return Err(bad("only a pause takes `unless alone`"));
            }
        }
        let (what, when) = fault(&words, unless_alone).map_err(|why| bad(&why))?;
        Ok(Nemesis { what, when })
    }
}

/// What and when the words say (`unless alone` taken off them), or why they say nothing.
fn fault(words: &[&str], unless_alone: bool) -> Result<(What, When), String> {
    match words {
        ["kill", target, "after", step @ ..] => kill_after(target, step),
        ["pause", target, "after", step @ .., "for", hold] => {
            pause_after(target, step, hold, unless_alone)
        }
        ["kill", target, "at", at] => Ok((
            What::Kill {
                target: target.to_string(),
            },
            When::At(parse_duration(at)?),
        )),
        ["pause", target, "at", at, "for", hold] => Ok((
            What::Pause {
                target: target.to_string(),
                hold: parse_duration(hold)?,
                unless_alone,
            },
            When::At(parse_duration(at)?),
        )),
        ["restart", service, "at", at] => Ok((
            What::Restart {
                service: service.to_string(),
            },
            When::At(parse_duration(at)?),
        )),
        ["drop", way @ ("replies" | "requests"), target, service, "after", step @ ..] => {
            drop_after(way, target, service, step)
        }
        ["cut", target, service, "after", step @ ..] => {
            Ok((wire(target, service, WireFault::Cut), own_step(step)?))
        }
        ["lose", what, target, service, "after", step @ ..] => {
            let verb = format!("lose {what}");
            let Some(row) = READS.iter().find(|row| row.lose.verb() == verb) else {
                return Err(format!("no protocol offers `{verb}`"));
            };
            Ok((wire(target, service, row.lose), own_step(step)?))
        }
        ["partition", target, service, "at", at, "for", hold] => Ok((
            wire(
                target,
                service,
                WireFault::Partition {
                    hold: parse_duration(hold)?,
                },
            ),
            When::At(parse_duration(at)?),
        )),
        ["restart", service, "after", step @ ..] => restart_after(service, step),
        _ => Err("not understood".into()),
    }
}

/// `kill ROLE after KIND [N]`: on the process's own step, without delay.
fn kill_after(target: &str, step: &[&str]) -> Result<(What, When), String> {
    let when = after(step)?;
    if matches!(when, When::After { delay, .. } if !delay.is_zero()) {
        return Err("a kill takes no delay".into());
    }
    if matches!(when, When::After { by: Some(_), .. }) {
        return Err("a process's kill follows its own steps".into());
    }
    Ok((
        What::Kill {
            target: target.to_string(),
        },
        when,
    ))
}

/// `pause NAME after [ROLE] KIND [N] [+DELAY] for DURATION`: a process's pause on its own step,
/// or a service's after another's.
fn pause_after(
    target: &str,
    step: &[&str],
    hold: &str,
    unless_alone: bool,
) -> Result<(What, When), String> {
    let when = after(step)?;
    let what = if matches!(when, When::After { by: Some(_), .. }) {
        // Another's step: only a service's pause follows one.
        if unless_alone {
            return Err("only a process's pause takes `unless alone`".into());
        }
        What::PauseService {
            service: target.to_string(),
            hold: parse_duration(hold)?,
        }
    } else {
        What::Pause {
            target: target.to_string(),
            hold: parse_duration(hold)?,
            unless_alone,
        }
    };
    Ok((what, when))
}

/// `drop replies|requests ROLE SERVICE after KIND [N] [for DURATION]` (for [`DROP_FOR`] without
/// `for`).
fn drop_after(
    way: &str,
    target: &str,
    service: &str,
    step: &[&str],
) -> Result<(What, When), String> {
    let (step, hold) = match step {
        [step @ .., "for", hold] => (step, parse_duration(hold)?),
        step => (step, DROP_FOR),
    };
    let fault = if way == "replies" {
        WireFault::DropReplies { hold }
    } else {
        WireFault::DropRequests { hold }
    };
    Ok((wire(target, service, fault), own_step(step)?))
}

/// `restart SERVICE after [ROLE] KIND [N]`: without delay.
fn restart_after(service: &str, step: &[&str]) -> Result<(What, When), String> {
    let when = after(step)?;
    if matches!(when, When::After { delay, .. } if !delay.is_zero()) {
        return Err("a restart takes no delay".into());
    }
    Ok((
        What::Restart {
            service: service.to_string(),
        },
        when,
    ))
}

/// A wire fault of `target` on `service`.
fn wire(target: &str, service: &str, fault: WireFault) -> What {
    What::Wire {
        target: target.to_string(),
        service: service.to_string(),
        fault,
    }
}

/// The words after `after` for a fault on a process's own step: `KIND [N]`.
fn own_step(words: &[&str]) -> Result<When, String> {
    let when = after(words)?;
    match &when {
        When::After { by: Some(_), .. } => {
            Err("a wire fault follows its process's own steps".into())
        }
        When::After { delay, .. } if !delay.is_zero() => Err("a wire fault takes no delay".into()),
        _ => Ok(when),
    }
}

/// The words after `after`: `[ROLE] KIND [N] [+DELAY]`.
fn after(words: &[&str]) -> Result<When, String> {
    let (by, words) = match words {
        [first, second, ..] if first.parse::<Kind>().is_err() && second.parse::<Kind>().is_ok() => {
            (Some(first.to_string()), &words[1..])
        }
        _ => (None, words),
    };
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
        [] => Duration::ZERO,
        [d] if d.starts_with('+') => parse_duration(&d[1..])?,
        [word, ..] => return Err(format!("`{word}` is not understood")),
    };
    Ok(When::After {
        kind,
        nth,
        delay,
        by,
    })
}
