//! The protocols a service may speak on its port (`wire` in the system file) and what each offers
//! the faults: the one registry the system file's checks, the reasons a fault never fired,
//! `explore`'s list of schedules, the lab's refusals and the proxy ask. A protocol the proxy reads
//! is a reader under `crate::wire`, its rows of [`READS`] (one per reply it can lose) and its lose
//! faults in the vocabulary ([`WireFault`]).

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
    /// Kafka's protocol: also `lose produce-ack` and `lose commit-reply` (an offset commit's).
    Kafka,
}

impl Wire {
    /// The name as written in the system file.
    pub fn as_str(self) -> &'static str {
        match self {
            Wire::Tcp => "tcp",
            Wire::Postgres => "postgres",
            Wire::Nats => "nats",
            Wire::Redis => "redis",
            Wire::Kafka => "kafka",
        }
    }
}

/// One reply a protocol the proxy reads can lose, as the faults see it.
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

/// Every reply the proxy can lose: one row for each protocol and lose fault.
pub const READS: [Reads; 4] = [
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
    Reads {
        wire: Wire::Kafka,
        name: "Kafka",
        lose: WireFault::LoseProduceAck,
        waits_for: "produce",
        after: Some(Kind::PublishAttempt),
    },
    Reads {
        wire: Wire::Kafka,
        name: "Kafka",
        lose: WireFault::LoseCommitReply,
        waits_for: "offset commit",
        // A consumer commits its offset once the effect is committed.
        after: Some(Kind::EffectCommitted),
    },
];

impl Wire {
    /// The replies the proxy can lose on this protocol (none for one it relays as bytes).
    pub fn offers(self) -> impl Iterator<Item = &'static Reads> {
        READS.iter().filter(move |r| r.wire == self)
    }

    /// How this protocol offers `fault`, if it does.
    pub fn offer(self, fault: WireFault) -> Option<&'static Reads> {
        self.offers().find(|r| r.lose == fault)
    }
}

impl WireFault {
    /// Whether this fault loses one reply of a protocol the proxy reads (not bytes whatever the
    /// protocol).
    pub fn loses_a_reply(self) -> bool {
        self.offered_by().next().is_some()
    }

    /// The protocols that offer this fault, as their rows.
    pub fn offered_by(self) -> impl Iterator<Item = &'static Reads> {
        READS.iter().filter(move |r| r.lose == self)
    }

    /// The protocols that offer this fault, in words: `"postgres" or "kafka"`.
    pub fn wires_in_words(self) -> String {
        let names: Vec<String> = self
            .offered_by()
            .map(|r| format!("\"{}\"", r.wire.as_str()))
            .collect();
        names.join(" or ")
    }

    /// The messages this fault waits for, in words (`COMMIT or offset commit`).
    pub fn waits_for(self) -> String {
        either(self.offered_by().map(|r| r.waits_for))
    }

    /// The protocols that offer this fault, by name (`PostgreSQL or Kafka`).
    pub fn protocols_in_words(self) -> String {
        either(self.offered_by().map(|r| r.name))
    }
}

/// Words joined by "or", each once.
fn either<'a>(words: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for word in words {
        if !seen.contains(&word) {
            seen.push(word);
        }
    }
    seen.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_is_found_from_its_protocol_and_from_its_fault() {
        for row in READS {
            assert_eq!(row.wire.offer(row.lose), Some(&row));
            assert!(row.lose.offered_by().any(|r| *r == row));
            assert!(row.lose.loses_a_reply());
            assert!(row.lose.verb().starts_with("lose "));
        }
        assert_eq!(Wire::Tcp.offers().count(), 0);
        assert_eq!(Wire::Redis.offers().count(), 0);
        assert_eq!(Wire::Kafka.offers().count(), 2);
        assert!(!WireFault::Cut.loses_a_reply());
        assert_eq!(
            WireFault::LoseCommitReply.wires_in_words(),
            "\"postgres\" or \"kafka\""
        );
        assert_eq!(
            WireFault::LoseCommitReply.waits_for(),
            "COMMIT or offset commit"
        );
        assert_eq!(
            WireFault::LoseCommitReply.protocols_in_words(),
            "PostgreSQL or Kafka"
        );
        assert_eq!(WireFault::LosePuback.protocols_in_words(), "NATS");
    }
}
