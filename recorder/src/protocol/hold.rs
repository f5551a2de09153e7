//! Held reports, the lab's side of a step-following fault: after reporting a step of a held kind,
//! an actor waits for the recorder's answer (one line on its standard input) before it goes on,
//! so a `kill ROLE after KIND` lands right after that step and before the next, as a held span
//! export does for a team's own process. Standard input closing (the recorder stopping the actor
//! or dying) releases every wait.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, OnceLock};

use outbox_trace::Kind;

/// The kinds held in this process and the answers that release them.
struct Gate {
    kinds: Vec<Kind>,
    answers: Mutex<Receiver<()>>,
}

static GATE: OnceLock<Gate> = OnceLock::new();

/// Holds the reports of `kinds` in this process from now on; returns where the recorder's
/// answers go (the sender dropped: every wait ends).
pub fn install(kinds: Vec<Kind>) -> Sender<()> {
    let (tx, rx) = channel();
    let _ = GATE.set(Gate {
        kinds,
        answers: Mutex::new(rx),
    });
    tx
}

/// Called after a step of `kind` was reported: waits for the recorder's answer if the kind is
/// held.
pub fn after_report(kind: Kind) {
    let Some(gate) = GATE.get() else { return };
    if !gate.kinds.contains(&kind) {
        return;
    }
    if let Ok(answers) = gate.answers.lock() {
        let _ = answers.recv();
    }
}
