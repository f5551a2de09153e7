//! A protocol as the proxy reads it: how a protocol reader answers the proxy for each chunk of
//! bytes, and the faults that wait for a message of that protocol (the next COMMIT, the next
//! JetStream publish). Which protocols there are, and what each offers the faults, is
//! [`crate::fault::protocols`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::fault::protocols::READS;
use crate::fault::spec::WireFault;

/// What the proxy does with a connection after a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on relaying.
    Go,
    /// Reset the connection both ways, now.
    Reset,
}

/// One connection's reading of its protocol, one chunk at a time in each direction: it puts
/// into `out` the bytes to pass on, and may take a fault that waits in `losses`.
pub trait Reader: Send {
    /// Bytes from the process toward the service.
    fn request(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow;
    /// Bytes from the service toward the process.
    fn reply(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow;
    /// Bytes from the service that a fault drops on their way to the process: if the reader
    /// read them and keeps its place, what to do with the connection then (by default it does
    /// not read them, and reads no more replies).
    fn dropped_reply(&mut self, _bytes: &[u8], _losses: &Losses) -> Option<Flow> {
        None
    }

    /// Whether the service may have committed something whose answer has not been read yet (a
    /// reset now would lose a fact). By default nothing is.
    fn commit_awaited(&self) -> bool {
        false
    }
    /// What it heard since the last call, when it listens (a reader made to listen decodes what
    /// it would otherwise only frame; see [`super::heard`]).
    fn heard(&mut self) -> Vec<super::heard::Heard> {
        Vec::new()
    }
}

/// A protocol fault that acted: what it lost, and when it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// Which one (a lose fault of [`READS`]).
    pub what: WireFault,
    /// When the message it waited for crossed the proxy.
    pub began: Instant,
    /// Bytes of replies dropped.
    pub bytes: u64,
    /// Protocol messages dropped.
    pub messages: u64,
    /// Connections reset.
    pub resets: u64,
}

/// The protocol faults a proxy holds until a connection takes them (how many of each lose
/// fault of [`READS`], in its order), and those that acted.
#[derive(Debug, Default)]
pub struct Losses {
    armed: [AtomicU32; READS.len()],
    lost: Mutex<Vec<Lost>>,
}

impl Losses {
    /// Arms one more `what` (a lose fault): the next matching message on any connection takes
    /// it.
    pub fn arm(&self, what: WireFault) {
        if let Some(counter) = self.counter(what) {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Takes one armed `what`, if one waits.
    pub fn take(&self, what: WireFault) -> bool {
        self.counter(what).is_some_and(|counter| {
            counter
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        })
    }

    /// Notes a fault that acted.
    pub fn acted(&self, lost: Lost) {
        self.lost.lock().expect("losses").push(lost);
    }

    /// The faults that acted since the last call.
    pub fn drain(&self) -> Vec<Lost> {
        std::mem::take(&mut *self.lost.lock().expect("losses"))
    }

    fn counter(&self, what: WireFault) -> Option<&AtomicU32> {
        let at = READS.iter().position(|r| r.lose == what)?;
        Some(&self.armed[at])
    }
}
