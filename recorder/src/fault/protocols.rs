//! The protocols a service may speak on its port (`wire` in the system file) and what each offers
//! the faults: the one registry the system file's checks, the reasons a fault never fired,
//! `explore`'s list of schedules, the lab's refusals and the proxy ask. A protocol the proxy reads
//! is a reader under `crate::wire`, a row of [`READS`] and its lose fault in the vocabulary
//! ([`WireFault`]).

use outbox_trace::Kind;
use serde::{Deserialize, Serialize};

use super::spec::WireFault;

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

/// A protocol the proxy reads, as the faults see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    /// The protocol.
    pub wire: Wire,
    /// Its name in words (`PostgreSQL`).
    pub name: &'static str,
    /// The fault that loses one reply of it.
    pub lose: WireFault,
    /// The message that fault waits for, in words (`COMMIT`).
    pub waits_for: &'static str,
    /// The one step kind a search tries it after, where the message follows one kind only (a
    /// publish follows `publish_attempt`); `None`: after every kind the process reports.
    pub after: Option<Kind>,
}

/// Every protocol the proxy reads: one row each.
pub const READS: [Reads; 2] = [
    Reads {
        wire: Wire::Postgres,
        name: "PostgreSQL",
        lose: WireFault::LoseCommitReply,
        waits_for: "COMMIT",
        after: None,
    },
    Reads {
        wire: Wire::Nats,
        name: "NATS",
        lose: WireFault::LosePuback,
        waits_for: "JetStream publish",
        after: Some(Kind::PublishAttempt),
    },
];

impl Wire {
    /// What the proxy reads of this protocol, if it reads it (not bytes only).
    pub fn reads(self) -> Option<&'static Reads> {
        READS.iter().find(|r| r.wire == self)
    }
}

impl WireFault {
    /// The protocol this fault reads, for a fault that loses one reply; `None` for one that
    /// acts on bytes whatever the protocol.
    pub fn reads(self) -> Option<&'static Reads> {
        READS.iter().find(|r| r.lose == self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_read_protocol_offers_one_lose_fault_and_each_lose_fault_names_its_protocol() {
        for row in READS {
            assert_eq!(row.wire.reads(), Some(&row));
            assert_eq!(row.lose.reads(), Some(&row));
            assert!(row.lose.verb().starts_with("lose "));
        }
        assert_eq!(Wire::Tcp.reads(), None);
        assert_eq!(Wire::Redis.reads(), None);
        assert_eq!(WireFault::Cut.reads(), None);
    }
}
