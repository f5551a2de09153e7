//! What a listening NATS reader hears ([`Heard`]): it keeps the messages it has a use for
//! (headers and payload, at most [`LARGEST_HEARD`] bytes each) and tells
//!
//! - a JetStream publish (a publish with a reply subject, to a subject outside `$JS.`, `$SYS.`
//!   and `_INBOX.`) once its payload has crossed toward the server, remembering it by its reply
//!   subject;
//! - the server's answer to a publish remembered, the message addressed to its reply subject, if
//!   it is a PubAck (`{"stream": ..., "seq": N}` without `"error"`); any answer forgets it;
//! - a delivery, a message from the server whose reply subject is a `$JS.ACK.` subject,
//!   remembering it by that subject;
//! - the process's ACK of a delivery remembered (`+ACK`, or an empty body, published to its ACK
//!   subject), forgetting it; `-NAK`, `+TERM` and `+NXT` forget it untold, `+WPI` keeps it.
//!
//! Each connection remembers at most [`REMEMBERED`] publishes and as many deliveries, and 64 MiB
//! of each; past that the oldest is forgotten (and the subject it awaits an answer on is kept, as long again). What
//! it then cannot tell it says it cannot, once per way ([`Heard::Unread`]): an answer that comes
//! to a forgotten publish's subject, an ACK to a `$JS.ACK.` subject it no longer knows once it
//! has forgotten a delivery, anything of a message too big to keep or whose headers do not read.
//! A publish or delivery forgotten that is never answered says nothing.

use super::lines::{carrying, jetstream_reply, Carrying, Piece};
use super::remembered::{Remembered, Weighed};
use crate::wire::heard::{Delivery, Heard, Message, Ways};

/// The largest message (headers and payload) that is kept and told; a larger one is only
/// framed.
pub(super) const LARGEST_HEARD: usize = 1024 * 1024;

/// How many publishes waiting for their answer, and how many deliveries waiting for their ACK,
/// a connection remembers.
pub(super) const REMEMBERED: usize = 4096;

/// How many bytes of publishes, of deliveries, and of forgotten subjects a connection
/// remembers.
const REMEMBERED_BYTES: usize = 64 * 1024 * 1024;

impl Weighed for Message {
    fn weight(&self) -> usize {
        let headers: usize = self.headers.iter().map(|(n, v)| n.len() + v.len()).sum();
        self.subject.len() + self.payload.len() + headers
    }
}

impl Weighed for Delivery {
    fn weight(&self) -> usize {
        self.message.weight() + self.stream.len() + self.consumer.len()
    }
}

/// Why a message whose header block does not read tells nothing.
const UNREADABLE: &str = "a message's headers did not read";

/// The prefix of the reply subject of a JetStream delivery.
const ACK_PREFIX: &[u8] = b"$JS.ACK.";

/// What a message being read tells once its payload is read.
enum Awaits {
    /// A JetStream publish, answered at `reply`.
    Publish { subject: Vec<u8>, reply: Vec<u8> },
    /// A publish to the ACK subject of a delivery remembered.
    Ack { ack_subject: Vec<u8> },
    /// The answer to a publish remembered (and now forgotten).
    Answer { publish: Message },
    /// A delivery, acknowledged at `ack_subject`.
    Delivery {
        subject: Vec<u8>,
        ack_subject: Vec<u8>,
    },
}

/// A message being read: what it tells, and its payload so far.
struct Reading {
    awaits: Awaits,
    header_size: usize,
    size: usize,
    bytes: Vec<u8>,
}

/// The listening half of a NATS reader: one connection's messages, decoded.
pub(super) struct Listen {
    publishes: Remembered<Message>,
    deliveries: Remembered<Delivery>,
    /// The message being read from the process, if it tells something.
    up: Option<Reading>,
    /// The message being read from the server, if it tells something.
    down: Option<Reading>,
    heard: Vec<Heard>,
    /// Said already that facts pass untold: toward the server, toward the process.
    said: [bool; 2],
    /// The reply subjects of the publishes forgotten, awaiting an answer.
    forgotten: Remembered<()>,
    /// A delivery was forgotten: an ACK to a subject not remembered may be its.
    forgot_a_delivery: bool,
}

impl Default for Listen {
    fn default() -> Listen {
        Listen {
            publishes: Remembered::new(REMEMBERED, REMEMBERED_BYTES),
            deliveries: Remembered::new(REMEMBERED, REMEMBERED_BYTES),
            up: None,
            down: None,
            heard: Vec::new(),
            said: [false; 2],
            forgotten: Remembered::new(REMEMBERED, REMEMBERED_BYTES),
            forgot_a_delivery: false,
        }
    }
}

impl Listen {
    /// A piece of the process's bytes: `line` is the control line read last, `bytes` the
    /// piece's own.
    pub(super) fn read_from_process(&mut self, piece: Piece, line: &[u8], bytes: &[u8]) {
        match piece {
            Piece::Line => self.line_from_process(line),
            Piece::Payload { last } => self.payload_from_process(bytes, last),
            Piece::Partial => {}
        }
    }

    /// A piece of the server's bytes: `line` is the control line read last, `bytes` the
    /// piece's own.
    pub(super) fn read_from_server(&mut self, piece: Piece, line: &[u8], bytes: &[u8]) {
        match piece {
            Piece::Line => self.line_from_server(line),
            Piece::Payload { last } => self.payload_from_server(bytes, last),
            Piece::Partial => {}
        }
    }

    /// A control line from the process ended.
    fn line_from_process(&mut self, line: &[u8]) {
        self.up = carrying(line).and_then(|c| {
            let awaits = if let Some(reply) = jetstream_reply(line) {
                Awaits::Publish {
                    subject: c.subject.to_vec(),
                    reply,
                }
            } else if self.deliveries.get(c.subject).is_some() {
                Awaits::Ack {
                    ack_subject: c.subject.to_vec(),
                }
            } else {
                if self.forgot_a_delivery && c.subject.starts_with(ACK_PREFIX) {
                    self.unread(
                        Ways::Requests,
                        "an ACK came for a delivery it had forgotten",
                    );
                }
                return None;
            };
            self.read_whole(awaits, c)
        });
    }

    /// A control line from the server ended.
    fn line_from_server(&mut self, line: &[u8]) {
        self.down = carrying(line).and_then(|c| {
            let awaits = if let Some(publish) = self.publishes.forget(c.subject) {
                Awaits::Answer { publish }
            } else if self.forgotten.forget(c.subject).is_some() {
                self.unread(
                    Ways::Replies,
                    "an answer came to a publish it had forgotten",
                );
                return None;
            } else if let Some(ack) = c.reply.filter(|r| r.starts_with(ACK_PREFIX)) {
                Awaits::Delivery {
                    subject: c.subject.to_vec(),
                    ack_subject: ack.to_vec(),
                }
            } else {
                return None;
            };
            self.read_whole(awaits, c)
        });
    }

    /// The reading of a message that tells something: none for one too big to keep, whose
    /// facts (and its answer's) pass untold.
    fn read_whole(&mut self, awaits: Awaits, carrying: Carrying<'_>) -> Option<Reading> {
        let reading = Reading::of(awaits, carrying);
        if reading.is_none() {
            self.unread(Ways::Both, "a message was too big to keep");
        }
        reading
    }

    /// Says (once per way) that facts carried `way` pass untold, for `why`.
    pub(super) fn unread(&mut self, way: Ways, why: &'static str) {
        let requests = way.meets(Ways::Requests) && !std::mem::replace(&mut self.said[0], true);
        let replies = way.meets(Ways::Replies) && !std::mem::replace(&mut self.said[1], true);
        let way = match (requests, replies) {
            (true, true) => Ways::Both,
            (true, false) => Ways::Requests,
            (false, true) => Ways::Replies,
            (false, false) => return,
        };
        self.heard.push(Heard::Unread { way, why });
    }

    /// Payload bytes from the process; `last` when they end it (its CRLF included).
    fn payload_from_process(&mut self, bytes: &[u8], last: bool) {
        if let Some(reading) = &mut self.up {
            reading.take(bytes);
        }
        if last {
            if let Some(reading) = self.up.take() {
                self.read(reading);
            }
        }
    }

    /// Payload bytes from the server; `last` when they end it (its CRLF included).
    fn payload_from_server(&mut self, bytes: &[u8], last: bool) {
        if let Some(reading) = &mut self.down {
            reading.take(bytes);
        }
        if last {
            if let Some(reading) = self.down.take() {
                self.read(reading);
            }
        }
    }

    /// The message from the server being read is dropped on its way to the process (a lost
    /// publish ACK): it is not heard, for the process never hears it.
    pub(super) fn unheard(&mut self) {
        self.down = None;
    }

    /// What it heard since the last call.
    pub(super) fn heard(&mut self) -> Vec<Heard> {
        std::mem::take(&mut self.heard)
    }

    /// A message read whole: what it tells.
    fn read(&mut self, reading: Reading) {
        match &reading.awaits {
            Awaits::Publish { subject, reply } => {
                let Some(message) = reading.message(subject) else {
                    return self.unread(Ways::Both, UNREADABLE);
                };
                if let Some(forgot) = self.publishes.remember(reply, message.clone()) {
                    if self.forgotten.remember(&forgot, ()).is_some() {
                        // Past this bound too: any answer may be one of theirs.
                        let why = "it remembered more publishes than it follows";
                        self.unread(Ways::Replies, why);
                    }
                }
                self.heard.push(Heard::Published(message));
            }
            Awaits::Answer { publish } => {
                let seq = reading.message(b"").and_then(|a| pub_ack_seq(&a.payload));
                if let Some(seq) = seq {
                    let publish = publish.clone();
                    self.heard.push(Heard::PubAcked { publish, seq });
                }
            }
            Awaits::Delivery {
                subject,
                ack_subject,
            } => {
                let Some(message) = reading.message(subject) else {
                    return self.unread(Ways::Both, UNREADABLE);
                };
                if let Some(delivery) = delivery(ack_subject, message) {
                    if self
                        .deliveries
                        .remember(ack_subject, delivery.clone())
                        .is_some()
                    {
                        self.forgot_a_delivery = true;
                    }
                    self.heard.push(Heard::Delivered(delivery));
                }
            }
            Awaits::Ack { ack_subject } => {
                let Some(body) = reading.message(b"").map(|m| m.payload) else {
                    return;
                };
                match ack_kind(&body) {
                    AckKind::Ack => {
                        if let Some(delivery) = self.deliveries.forget(ack_subject) {
                            self.heard.push(Heard::Acked(delivery));
                        }
                    }
                    AckKind::Ends => {
                        self.deliveries.forget(ack_subject);
                    }
                    AckKind::Keeps => {}
                }
            }
        }
    }
}

impl Reading {
    /// Reads the payload of `carrying` for `awaits`, unless it is larger than [`LARGEST_HEARD`]
    /// (then the message is only framed).
    fn of(awaits: Awaits, carrying: Carrying<'_>) -> Option<Reading> {
        (carrying.size <= LARGEST_HEARD).then(|| Reading {
            awaits,
            header_size: carrying.header_size,
            size: carrying.size,
            bytes: Vec::with_capacity(carrying.size),
        })
    }

    /// Keeps the payload's bytes of `bytes` (not the CRLF after it).
    fn take(&mut self, bytes: &[u8]) {
        let room = self.size - self.bytes.len();
        self.bytes
            .extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    /// The message read, published to or delivered on `subject`: its headers and payload;
    /// `None` when its header block cannot be read.
    fn message(&self, subject: &[u8]) -> Option<Message> {
        let (block, payload) = self.bytes.split_at(self.header_size.min(self.bytes.len()));
        Some(Message {
            subject: String::from_utf8_lossy(subject).into_owned(),
            headers: headers(block)?,
            payload: payload.to_vec(),
        })
    }
}

/// The headers of a header block (`NATS/1.0` and maybe a status, then `Name: value` lines, then
/// a blank line); none for an empty block; `None` when it is not one.
fn headers(block: &[u8]) -> Option<Vec<(String, String)>> {
    if block.is_empty() {
        return Some(Vec::new());
    }
    let text = std::str::from_utf8(block).ok()?;
    let mut lines = text.split("\r\n");
    if !lines.next()?.starts_with("NATS/") {
        return None;
    }
    let headers = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_string(), value.trim().to_string()))
        })
        .collect();
    Some(headers)
}

/// The stream sequence a PubAck gives (`{"stream": ..., "seq": N}` without `"error"`).
fn pub_ack_seq(payload: &[u8]) -> Option<u64> {
    let answer: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let answer = answer.as_object()?;
    if answer.contains_key("error") {
        return None;
    }
    answer.get("seq")?.as_u64()
}

/// The delivery a `$JS.ACK.` subject describes, of `message`. Two forms:
/// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>`
/// and `$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>.
/// <consumer seq>.<timestamp>.<pending>[.<random>]`.
fn delivery(ack_subject: &[u8], message: Message) -> Option<Delivery> {
    let subject = std::str::from_utf8(ack_subject.strip_prefix(ACK_PREFIX)?).ok()?;
    let tokens: Vec<&str> = subject.split('.').collect();
    let from = match tokens.len() {
        7 => 0,
        9 | 10 => 2,
        _ => return None,
    };
    Some(Delivery {
        message,
        stream: tokens[from].to_string(),
        consumer: tokens[from + 1].to_string(),
        delivered: tokens[from + 2].parse().ok()?,
        stream_seq: tokens[from + 3].parse().ok()?,
    })
}

/// What a publish to a delivery's ACK subject does to it.
#[derive(Debug, PartialEq, Eq)]
enum AckKind {
    /// Acknowledges it (`+ACK`, maybe with options, or an empty body).
    Ack,
    /// Ends it without an ACK (`-NAK`, `+TERM`; `+NXT` acknowledges and asks for more).
    Ends,
    /// Leaves it waiting (`+WPI`, or a body not known).
    Keeps,
}

/// What the body of a publish to an ACK subject does.
fn ack_kind(body: &[u8]) -> AckKind {
    let word = body
        .trim_ascii_start()
        .split(|b| b.is_ascii_whitespace())
        .next()
        .unwrap_or_default();
    match word {
        // `+NXT` acknowledges the message and asks for the next.
        b"" | b"+ACK" | b"+NXT" => AckKind::Ack,
        b"-NAK" | b"+TERM" => AckKind::Ends,
        _ => AckKind::Keeps,
    }
}

#[cfg(test)]
mod tests;
