//! A [`Nemesis`] shown in its one-line form, the form it is parsed from: parsing what is shown
//! gives the same fault.

use std::fmt;

use super::{Nemesis, What, When, WireFault, DROP_FOR};
use crate::fault::duration::show_duration;

impl fmt::Display for Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        show_what(f, &self.what)?;
        show_when(f, &self.when)?;
        show_hold(f, &self.what)
    }
}

/// The verb and whom it hits: `kill worker`, `drop replies relay redis`, ...
fn show_what(f: &mut fmt::Formatter<'_>, what: &What) -> fmt::Result {
    match what {
        What::Kill { target } => write!(f, "kill {target}")?,
        What::Pause { target, .. } => write!(f, "pause {target}")?,
        What::Restart { service } => write!(f, "restart {service}")?,
        What::PauseService { service, .. } => write!(f, "pause {service}")?,
        What::Wire {
            target,
            service,
            fault,
        } => write!(f, "{} {target} {service}", fault.verb())?,
    }
    Ok(())
}

/// ` at DURATION`, or ` after [ROLE] KIND [N] [+DELAY]` (the count only past 1, the delay only
/// when there is one).
fn show_when(f: &mut fmt::Formatter<'_>, when: &When) -> fmt::Result {
    match when {
        When::At(at) => write!(f, " at {}", show_duration(*at))?,
        When::After {
            kind,
            nth,
            delay,
            by,
        } => {
            f.write_str(" after")?;
            if let Some(by) = by {
                write!(f, " {by}")?;
            }
            write!(f, " {kind}")?;
            if *nth != 1 {
                write!(f, " {nth}")?;
            }
            if !delay.is_zero() {
                write!(f, " +{}", show_duration(*delay))?;
            }
        }
    }
    Ok(())
}

/// ` for DURATION` where the fault lasts (a drop only when not [`DROP_FOR`]), and a pause's
/// ` unless alone`.
fn show_hold(f: &mut fmt::Formatter<'_>, what: &What) -> fmt::Result {
    if let What::Pause {
        hold, unless_alone, ..
    } = what
    {
        write!(f, " for {}", show_duration(*hold))?;
        if *unless_alone {
            f.write_str(" unless alone")?;
        }
    }
    match what {
        What::PauseService { hold, .. }
        | What::Wire {
            fault: WireFault::Partition { hold },
            ..
        } => write!(f, " for {}", show_duration(*hold))?,
        What::Wire {
            fault: WireFault::DropReplies { hold } | WireFault::DropRequests { hold },
            ..
        } if *hold != DROP_FOR => write!(f, " for {}", show_duration(*hold))?,
        _ => {}
    }
    Ok(())
}
