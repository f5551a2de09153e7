//! The protocol a service speaks, as its proxy reads it: which wire (`wire = "postgres"` in the
//! system file), how a protocol reader answers the proxy for each chunk of bytes, and the faults
//! that wait for a message of that protocol (the next COMMIT, the next JetStream publish).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The protocol a service speaks on its port (`wire` in the system file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// Bytes, read as nothing more: the faults that drop, cut and partition.
    #[default]
    Tcp,
    /// PostgreSQL's frontend/backend protocol (version 3): also `lose commit-reply`.
    Postgres,
    /// The NATS client protocol: also `lose puback` (a JetStream publish acknowledgement).
    Nats,
    /// RESP: relayed as bytes (no fault of its own yet).
    Redis,
}

impl Wire {
    /// The name as written in the system file.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Tcp => "tcp",
            Wire::Postgres => "postgres",
            Wire::Nats => "nats",
            Wire::Redis => "redis",
        }
    }
}

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
}

/// A protocol fault that acted: what it lost, and when it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// Which one (`lose commit-reply` or `lose puback`).
    pub what: Loss,
    /// When the message it waited for crossed the proxy.
    pub began: Instant,
    /// Bytes of replies dropped.
    pub bytes: u64,
    /// Protocol messages dropped.
    pub messages: u64,
    /// Connections reset.
    pub resets: u64,
}

/// The faults that wait for a message of the service's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The reply to the process's next COMMIT.
    CommitReply,
    /// The acknowledgement of the process's next JetStream publish.
    Puback,
}

/// The protocol faults a proxy holds until a connection takes them, and those that acted.
#[derive(Debug, Default)]
pub struct Losses {
    commit_replies: AtomicU32,
    pubacks: AtomicU32,
    lost: Mutex<Vec<Lost>>,
}

impl Losses {
    /// Arms one more `what`: the next matching message on any connection takes it.
    pub fn arm(&self, what: Loss) {
        self.counter(what).fetch_add(1, Ordering::SeqCst);
    }

    /// Takes one armed `what`, if one waits.
    pub fn take(&self, what: Loss) -> bool {
        self.counter(what)
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Notes a fault that acted.
    pub fn acted(&self, lost: Lost) {
        self.lost.lock().expect("losses").push(lost);
    }

    /// The faults that acted since the last call.
    pub fn drain(&self) -> Vec<Lost> {
        std::mem::take(&mut *self.lost.lock().expect("losses"))
    }

    fn counter(&self, what: Loss) -> &AtomicU32 {
        match what {
            Loss::CommitReply => &self.commit_replies,
            Loss::Puback => &self.pubacks,
        }
    }
}
