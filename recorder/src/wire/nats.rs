//! The NATS client protocol as the proxy reads it, for `lose puback`: the process's next publish
//! to a JetStream subject (a `PUB` or `HPUB` with a reply subject, to a subject outside `$JS.`,
//! `$SYS.` and `_INBOX.`) is passed on and stored; the server's acknowledgement, the `MSG` or
//! `HMSG` addressed to that reply subject, is dropped whole. The connection stays up: the
//! publisher times out waiting, as after a lost publish ACK.
//!
//! The protocol is lines ending in CRLF; `PUB`, `HPUB`, `MSG` and `HMSG` are followed by a
//! payload whose size is their last argument, and its own CRLF.

use std::time::Instant;

use super::protocol::{Flow, Losses, Lost, Reader};
use crate::fault::spec::WireFault;

/// How long a control line may grow before the connection is relayed unread (`INFO` and
/// `CONNECT` carry a JSON object; a few kilobytes at most).
const LONGEST_LINE: usize = 64 * 1024;

/// Splits one direction into control lines and payloads.
#[derive(Default)]
struct Lines {
    line: Vec<u8>,
    /// Bytes of the current payload (and its CRLF) still to come.
    payload: usize,
}

/// One piece of a direction's bytes.
enum Piece {
    /// Part of a control line not ended yet: nothing to pass on.
    Partial,
    /// A control line ended: it is in `Lines::line`; its payload follows.
    Line,
    /// Payload bytes.
    Payload { last: bool },
}

impl Lines {
    /// Reads the next piece of `bytes`: how many it took, and what they were.
    fn step(&mut self, bytes: &[u8]) -> (usize, Piece) {
        if self.payload > 0 {
            let n = self.payload.min(bytes.len());
            self.payload -= n;
            return (
                n,
                Piece::Payload {
                    last: self.payload == 0,
                },
            );
        }
        if self.line.last() == Some(&b'\n') {
            self.line.clear();
        }
        match bytes.iter().position(|&b| b == b'\n') {
            None => {
                self.line.extend_from_slice(bytes);
                (bytes.len(), Piece::Partial)
            }
            Some(at) => {
                self.line.extend_from_slice(&bytes[..=at]);
                self.payload = payload_size(&self.line);
                (at + 1, Piece::Line)
            }
        }
    }
}

/// The words of a control line, without its CRLF.
fn words(line: &[u8]) -> Vec<&[u8]> {
    line.split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The payload (with its CRLF) that follows `line`: for `PUB`, `HPUB`, `MSG` and `HMSG`.
fn payload_size(line: &[u8]) -> usize {
    let words = words(line);
    let carries = words.first().is_some_and(|op| {
        ["PUB", "HPUB", "MSG", "HMSG"]
            .iter()
            .any(|o| op.eq_ignore_ascii_case(o.as_bytes()))
    });
    let size = words
        .last()
        .and_then(|w| std::str::from_utf8(w).ok()?.parse::<usize>().ok());
    match (carries, size) {
        (true, Some(size)) => size + 2,
        _ => 0,
    }
}

/// The reply subject of a publish to a JetStream subject, if `line` is one.
fn jetstream_reply(line: &[u8]) -> Option<Vec<u8>> {
    let words = words(line);
    let op = words.first()?;
    let publishes = (op.eq_ignore_ascii_case(b"PUB") && words.len() == 4)
        || (op.eq_ignore_ascii_case(b"HPUB") && words.len() == 5);
    if !publishes {
        return None;
    }
    let reply = words[2];
    let subject = words[1];
    let internal = [&b"$JS."[..], b"$SYS.", b"_INBOX."]
        .iter()
        .any(|p| subject.starts_with(p));
    (!internal).then(|| reply.to_vec())
}

/// The subject a message from the server is addressed to, if `line` is a `MSG` or `HMSG`.
fn addressed_to(line: &[u8]) -> Option<&[u8]> {
    let words = words(line);
    let op = words.first()?;
    let is_msg = op.eq_ignore_ascii_case(b"MSG") || op.eq_ignore_ascii_case(b"HMSG");
    (is_msg && words.len() >= 4).then(|| {
        let start = words[1].as_ptr() as usize - line.as_ptr() as usize;
        &line[start..start + words[1].len()]
    })
}

/// One connection to a NATS server.
#[derive(Default)]
pub struct Nats {
    up: Lines,
    down: Lines,
    /// The reply subject whose message is lost, and when its publish crossed.
    losing: Option<(Vec<u8>, Instant)>,
    /// The message being read from the server is dropped; its bytes so far.
    dropping: Option<u64>,
    /// A line from the process outgrew [`LONGEST_LINE`]: that direction is relayed unread.
    up_opaque: bool,
    /// A line from the server outgrew [`LONGEST_LINE`]: that direction is relayed unread.
    down_opaque: bool,
    /// Decodes messages and tells publishes, their ACKs, deliveries and their ACKs
    /// ([`Reader::heard`]).
    listening: bool,
}

impl Nats {
    /// A reader that also tells what it hears: publishes, their ACKs, deliveries, their ACKs.
    pub fn listening() -> Nats {
        Nats {
            listening: true,
            ..Nats::default()
        }
    }
}

impl Reader for Nats {
    fn request(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        out.extend_from_slice(bytes);
        let mut rest = bytes;
        while !rest.is_empty() && !self.up_opaque {
            let (n, piece) = self.up.step(rest);
            rest = &rest[n..];
            match piece {
                Piece::Line if self.losing.is_none() => {
                    if let Some(reply) = jetstream_reply(&self.up.line) {
                        if losses.take(WireFault::LosePuback) {
                            self.losing = Some((reply, Instant::now()));
                        }
                    }
                }
                Piece::Partial if self.up.line.len() > LONGEST_LINE => {
                    // Every request byte is already passed on: only the reading stops.
                    self.up_opaque = true;
                    self.up.line = Vec::new();
                }
                _ => {}
            }
        }
        Flow::Go
    }

    fn reply(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.down_opaque {
                out.extend_from_slice(rest);
                break;
            }
            let (n, piece) = self.down.step(rest);
            match piece {
                Piece::Partial if self.down.line.len() > LONGEST_LINE => {
                    // The line held so far is passed on whole, and the rest as it comes.
                    out.append(&mut self.down.line);
                    self.down_opaque = true;
                }
                Piece::Partial => {}
                Piece::Line => {
                    let line = &self.down.line;
                    let lost = match (&self.losing, addressed_to(line)) {
                        (Some((reply, _)), Some(to)) => reply == to,
                        _ => false,
                    };
                    if lost {
                        self.dropping = Some(line.len() as u64);
                    } else {
                        out.extend_from_slice(line);
                    }
                    if lost && self.down.payload == 0 {
                        self.lost(losses);
                    }
                }
                Piece::Payload { last } => match &mut self.dropping {
                    Some(bytes) => {
                        *bytes += n as u64;
                        if last {
                            self.lost(losses);
                        }
                    }
                    None => out.extend_from_slice(&rest[..n]),
                },
            }
            rest = &rest[n..];
        }
        Flow::Go
    }
}

impl Nats {
    /// The acknowledgement is dropped whole.
    fn lost(&mut self, losses: &Losses) {
        let bytes = self.dropping.take().unwrap_or_default();
        if let Some((_, began)) = self.losing.take() {
            losses.acted(Lost {
                what: WireFault::LosePuback,
                began,
                bytes,
                messages: 1,
                resets: 0,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(nats: &mut Nats, up: bool, text: &[u8], losses: &Losses) -> Vec<u8> {
        let mut out = Vec::new();
        for b in text.chunks(3) {
            if up {
                nats.request(b, &mut out, losses);
            } else {
                nats.reply(b, &mut out, losses);
            }
        }
        out
    }

    #[test]
    fn the_ack_of_the_next_jetstream_publish_is_dropped_whole() {
        let losses = Losses::default();
        let mut nats = Nats::default();
        let info = b"INFO {\"server_id\":\"x\",\"jetstream\":true}\r\nPING\r\n";
        assert_eq!(feed(&mut nats, false, info, &losses), info);
        losses.arm(WireFault::LosePuback);
        // A fetch request and an ACK are not publishes to a stream.
        let fetch = b"PUB $JS.API.CONSUMER.MSG.NEXT.S.C _INBOX.a.1 9\r\n{\"batch\"}\r\n";
        feed(&mut nats, true, fetch, &losses);
        feed(
            &mut nats,
            true,
            b"PUB $JS.ACK.S.C.1.2.3.4.0 0\r\n\r\n",
            &losses,
        );
        let headers = "NATS/1.0\r\nMsg-Id: 1\r\n\r\n";
        let publish = format!(
            "HPUB orders.created _INBOX.a.2 {} {}\r\n{headers}hello\r\n",
            headers.len(),
            headers.len() + 5
        );
        let publish = publish.as_bytes();
        assert_eq!(
            feed(&mut nats, true, publish, &losses),
            publish,
            "the publish passes"
        );
        let other = b"MSG _INBOX.a.1 1 5\r\nfetch\r\n";
        let body = r#"{"stream":"S","seq":7}"#;
        let ack = format!("MSG _INBOX.a.2 1 {}\r\n{body}\r\n", body.len());
        let ack = ack.as_bytes();
        let after = b"PING\r\n";
        let all = [&other[..], ack, after].concat();
        let out = feed(&mut nats, false, &all, &losses);
        assert_eq!(out, [&other[..], after].concat(), "only the ack is dropped");
        let lost = losses.drain();
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].bytes, lost[0].messages), (ack.len() as u64, 1));
    }

    #[test]
    fn a_control_line_longer_than_the_longest_passes_whole_and_only_its_direction_turns_opaque() {
        let losses = Losses::default();
        let mut nats = Nats::default();
        let mut info = b"INFO {\"x\":\"".to_vec();
        info.resize(100 * 1024, b'a');
        info.extend_from_slice(b"\"}\r\nPING\r\n");
        let mut out = Vec::new();
        for chunk in info.chunks(16 * 1024) {
            nats.reply(chunk, &mut out, &losses);
        }
        assert_eq!(out.len(), info.len(), "every byte of the long line passes");
        assert_eq!(out, info);
        // A long partial line from the process leaves the server's direction read.
        let mut nats = Nats::default();
        let long = vec![b'x'; LONGEST_LINE + 10];
        assert_eq!(feed(&mut nats, true, &long, &losses), long);
        losses.arm(WireFault::LosePuback);
        let ok = b"MSG _INBOX.q 1 2\r\nok\r\n";
        let mut nats2 = Nats::default();
        feed(
            &mut nats2,
            true,
            b"PUB orders _INBOX.q 2\r\nhi\r\n",
            &losses,
        );
        let mut long_up = vec![b'y'; LONGEST_LINE + 10];
        long_up.insert(0, b'P');
        feed(&mut nats2, true, &long_up, &losses);
        assert!(
            feed(&mut nats2, false, ok, &losses).is_empty(),
            "the ack is still found and dropped"
        );
    }

    #[test]
    fn a_publish_before_the_fault_is_armed_keeps_its_ack() {
        let losses = Losses::default();
        let mut nats = Nats::default();
        feed(
            &mut nats,
            true,
            b"PUB orders _INBOX.z.9 2\r\nhi\r\n",
            &losses,
        );
        losses.arm(WireFault::LosePuback);
        let ack = b"MSG _INBOX.z.9 3 2\r\nok\r\n";
        assert_eq!(feed(&mut nats, false, ack, &losses), ack);
        assert!(losses.drain().is_empty());
    }
}
