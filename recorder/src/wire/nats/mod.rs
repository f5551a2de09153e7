//! The NATS client protocol as the proxy reads it, for `lose puback`: the process's next publish
//! to a JetStream subject (a `PUB` or `HPUB` with a reply subject, to a subject outside `$JS.`,
//! `$SYS.` and `_INBOX.`) is passed on and stored; the server's acknowledgement, the `MSG` or
//! `HMSG` addressed to that reply subject, is dropped whole. The connection stays up: the
//! publisher times out waiting, as after a lost publish ACK.
//!
//! A listening reader also decodes the messages it has a use for, and tells publishes, their
//! ACKs, deliveries and their ACKs ([`listen`]). Its framing is [`lines`].

mod lines;
mod listen;
mod remembered;

use std::time::Instant;

use self::lines::{addressed_to, jetstream_reply, Lines, Piece, LONGEST_LINE};
use self::listen::Listen;
use super::heard::{Heard, Ways};
use super::protocol::{Flow, Losses, Lost, Reader};
use crate::fault::spec::WireFault;

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
    /// When listening: decodes messages and tells publishes, their ACKs, deliveries and their
    /// ACKs ([`Reader::heard`]).
    listen: Option<Box<Listen>>,
}

impl Nats {
    /// A reader that also tells what it hears: publishes, their ACKs, deliveries, their ACKs.
    pub fn listening() -> Nats {
        Nats {
            listen: Some(Box::default()),
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
            if let Some(listen) = &mut self.listen {
                listen.read_from_process(piece, &self.up.line, &rest[..n]);
            }
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
                    self.unread();
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
            if let Some(listen) = &mut self.listen {
                listen.read_from_server(piece, &self.down.line, &rest[..n]);
                let losing = self.losing.as_ref().map(|(reply, _)| reply.as_slice());
                if matches!(piece, Piece::Line)
                    && losing.is_some()
                    && addressed_to(&self.down.line) == losing
                {
                    listen.unheard();
                }
            }
            match piece {
                Piece::Partial if self.down.line.len() > LONGEST_LINE => {
                    // The line held so far is passed on whole, and the rest as it comes.
                    out.append(&mut self.down.line);
                    self.down_opaque = true;
                    self.unread();
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

    fn heard(&mut self) -> Vec<Heard> {
        self.listen
            .as_mut()
            .map(|listen| listen.heard())
            .unwrap_or_default()
    }
}

impl Nats {
    /// A direction is no longer read: a listening reader says that facts pass untold, both
    /// ways (the answers to what it no longer reads are not told either).
    fn unread(&mut self) {
        if let Some(listen) = &mut self.listen {
            listen.unread(Ways::Both, "a control line was too long to read");
        }
    }

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
mod tests;
