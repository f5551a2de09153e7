//! PostgreSQL's frontend/backend protocol (version 3) as the proxy reads it, for `lose
//! commit-reply`: the process's next `COMMIT` (a simple query, or a parsed statement and its
//! Sync) is passed on to the server, and from the first reply byte that belongs to it everything
//! the server sends is dropped; when the server's ReadyForQuery closes the commit (it is
//! committed), the connection is reset. The client is told nothing.
//!
//! Messages are a type byte and a length that counts itself; the client's first message (the
//! startup, or an SSL or GSS encryption request) has no type byte, and the server answers an
//! encryption request with one bare byte. A connection that turns to TLS is relayed unread.

use std::time::Instant;

use super::protocol::{Flow, Losses, Lost, Reader};
use crate::fault::spec::WireFault;

/// The codes of the untyped requests for an encrypted connection.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
/// The code of the untyped request that cancels another connection's query.
const CANCEL_REQUEST: u32 = 80_877_102;

/// How much of a message's body is kept to read it (a query's first words).
const KEEP: usize = 256;

/// One message, read to its end.
struct Message<'a> {
    /// Its type byte (0 for an untyped message, the byte itself for a bare one).
    kind: u8,
    /// The first [`KEEP`] bytes of its body.
    body: &'a [u8],
}

/// Splits one direction of a connection into messages as bytes come.
#[derive(Default)]
struct Splitter {
    /// Whether the next message has a type byte.
    typed: bool,
    /// Bare one-byte messages expected next (answers to encryption requests).
    bare: u32,
    head: [u8; 5],
    have: usize,
    /// Body bytes of the current message still to come, once its head is read.
    left: Option<usize>,
    body: Vec<u8>,
}

impl Splitter {
    fn typed() -> Splitter {
        Splitter {
            typed: true,
            ..Splitter::default()
        }
    }

    /// Whether the next byte begins a message.
    fn at_start(&self) -> bool {
        self.have == 0 && self.left.is_none()
    }

    /// Reads the next piece of `bytes`: how many it took, and the message it ended, if one.
    fn step(&mut self, bytes: &[u8]) -> (usize, Option<Message<'_>>) {
        if self.at_start() && self.bare > 0 {
            self.bare -= 1;
            self.body.clear();
            return (
                1,
                Some(Message {
                    kind: bytes[0],
                    body: &[],
                }),
            );
        }
        let head_len = if self.typed { 5 } else { 4 };
        let mut took = 0;
        if self.left.is_none() {
            let n = (head_len - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            took = n;
            if self.have < head_len {
                return (took, None);
            }
            let at = head_len - 4;
            let len = u32::from_be_bytes(self.head[at..at + 4].try_into().expect("4 bytes"));
            self.left = Some((len as usize).saturating_sub(4));
            self.body.clear();
        }
        let left = self.left.expect("read the head");
        let n = left.min(bytes.len() - took);
        let keep = n.min(KEEP.saturating_sub(self.body.len()));
        self.body.extend_from_slice(&bytes[took..took + keep]);
        took += n;
        if left > n {
            self.left = Some(left - n);
            return (took, None);
        }
        let kind = if self.typed { self.head[0] } else { 0 };
        self.have = 0;
        self.left = None;
        (
            took,
            Some(Message {
                kind,
                body: &self.body,
            }),
        )
    }
}

/// One connection to a PostgreSQL server.
pub struct Postgres {
    up: Splitter,
    down: Splitter,
    /// ReadyForQuery messages the server owes so far (one per Query, one per Sync).
    owed: u64,
    /// ReadyForQuery messages the server sent.
    ready: u64,
    /// A parsed COMMIT waits for its Sync.
    parsed_commit: bool,
    /// The commit whose reply is lost: the ReadyForQuery that ends it.
    losing: Option<Losing>,
    /// The message being read from the server is dropped.
    dropping: bool,
    /// Encrypted: relayed unread.
    opaque: bool,
    /// Decodes statements and tells each committed transaction ([`Reader::heard`]).
    listening: bool,
}

struct Losing {
    ends_at: u64,
    began: Instant,
    bytes: u64,
    messages: u64,
}

impl Default for Postgres {
    fn default() -> Postgres {
        Postgres {
            up: Splitter::default(),
            down: Splitter::typed(),
            owed: 0,
            ready: 0,
            parsed_commit: false,
            losing: None,
            dropping: false,
            opaque: false,
            listening: false,
        }
    }
}

impl Postgres {
    /// A reader that also tells what it hears: each committed transaction.
    pub fn listening() -> Postgres {
        Postgres {
            listening: true,
            ..Postgres::default()
        }
    }
}

impl Postgres {
    /// A commit sent: its reply is lost if a `lose commit-reply` waits.
    fn commit_sent(&mut self, losses: &Losses) {
        if self.losing.is_none() && losses.take(WireFault::LoseCommitReply) {
            self.losing = Some(Losing {
                ends_at: self.owed,
                began: Instant::now(),
                bytes: 0,
                messages: 0,
            });
        }
    }
}

impl Reader for Postgres {
    fn request(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        out.extend_from_slice(bytes);
        if self.opaque {
            return Flow::Go;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let typed = self.up.typed;
            let (n, message) = self.up.step(rest);
            rest = &rest[n..];
            let Some(m) = message else { continue };
            match (typed, m.kind) {
                (false, _) => {
                    let code = m
                        .body
                        .get(..4)
                        .map(|c| u32::from_be_bytes(c.try_into().unwrap()));
                    match code {
                        Some(SSL_REQUEST | GSSENC_REQUEST) => self.down.bare += 1,
                        Some(CANCEL_REQUEST) => {}
                        _ => {
                            // The startup: the server's first ReadyForQuery ends it.
                            self.up.typed = true;
                            self.owed += 1;
                        }
                    }
                }
                (true, b'Q') => {
                    self.owed += 1;
                    if is_commit(query(m.body)) {
                        self.commit_sent(losses);
                    }
                }
                (true, b'P') => {
                    // A statement name, then the query.
                    let statement = m
                        .body
                        .iter()
                        .position(|&b| b == 0)
                        .map_or(&[][..], |at| query(&m.body[at + 1..]));
                    self.parsed_commit |= is_commit(statement);
                }
                (true, b'S') => {
                    self.owed += 1;
                    if std::mem::take(&mut self.parsed_commit) {
                        self.commit_sent(losses);
                    }
                }
                _ => {}
            }
        }
        Flow::Go
    }

    fn reply(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        if self.opaque {
            out.extend_from_slice(bytes);
            return Flow::Go;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.down.at_start() {
                // Every reply from the first that belongs to the commit on is lost.
                self.dropping = self
                    .losing
                    .as_ref()
                    .is_some_and(|l| self.ready + 1 >= l.ends_at);
            }
            let bare = self.down.at_start() && self.down.bare > 0;
            let (n, message) = self.down.step(rest);
            let dropping = self.dropping;
            match (&mut self.losing, dropping) {
                (Some(losing), true) => losing.bytes += n as u64,
                _ => out.extend_from_slice(&rest[..n]),
            }
            rest = &rest[n..];
            let Some(m) = message else { continue };
            if bare {
                if m.kind != b'N' {
                    // SSL or GSS encryption from here on.
                    self.opaque = true;
                    out.extend_from_slice(rest);
                    return Flow::Go;
                }
                continue;
            }
            if dropping {
                if let Some(losing) = &mut self.losing {
                    losing.messages += 1;
                }
            }
            if m.kind == b'Z' {
                self.ready += 1;
                if let Some(losing) = self.losing.take_if(|l| self.ready >= l.ends_at) {
                    losses.acted(Lost {
                        what: WireFault::LoseCommitReply,
                        began: losing.began,
                        bytes: losing.bytes + rest.len() as u64,
                        messages: losing.messages,
                        resets: 1,
                    });
                    return Flow::Reset;
                }
            }
        }
        Flow::Go
    }
}

/// The text of a query message's body: up to its NUL.
fn query(body: &[u8]) -> &[u8] {
    let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
    &body[..end]
}

/// Whether `sql` commits the transaction: `COMMIT`, `END` (with `WORK` or `TRANSACTION`, or a
/// `;`), not `COMMIT PREPARED`.
fn is_commit(sql: &[u8]) -> bool {
    let text = String::from_utf8_lossy(sql);
    let mut words = text
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty());
    let first = words.next().unwrap_or_default();
    let second = words.next().unwrap_or_default();
    (first.eq_ignore_ascii_case("commit") || first.eq_ignore_ascii_case("end"))
        && !second.eq_ignore_ascii_case("prepared")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn untyped(code: u32) -> Vec<u8> {
        let mut m = 8u32.to_be_bytes().to_vec();
        m.extend_from_slice(&code.to_be_bytes());
        m
    }

    /// Feeds `bytes` one byte at a time, as the worst split of a stream.
    fn trickle(reader: &mut Postgres, up: bool, bytes: &[u8], losses: &Losses) -> (Vec<u8>, Flow) {
        let mut out = Vec::new();
        for b in bytes.chunks(1) {
            let flow = if up {
                reader.request(b, &mut out, losses)
            } else {
                reader.reply(b, &mut out, losses)
            };
            if flow == Flow::Reset {
                return (out, flow);
            }
        }
        (out, Flow::Go)
    }

    #[test]
    fn commit_words() {
        for yes in [
            "COMMIT",
            " commit;",
            "END",
            "commit work",
            "END TRANSACTION",
        ] {
            assert!(is_commit(yes.as_bytes()), "{yes}");
        }
        for no in ["COMMIT PREPARED 'x'", "BEGIN", "SELECT 1", "committed", ""] {
            assert!(!is_commit(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn the_reply_to_the_next_commit_is_dropped_and_the_connection_reset() {
        let losses = Losses::default();
        let mut pg = Postgres::default();
        // An SSL request refused, then the startup; the server authenticates.
        let (_, flow) = trickle(&mut pg, true, &untyped(SSL_REQUEST), &losses);
        assert_eq!(flow, Flow::Go);
        let (out, _) = trickle(&mut pg, false, b"N", &losses);
        assert_eq!(out, b"N");
        trickle(&mut pg, true, &untyped(196_608), &losses);
        let hello = [typed(b'R', &[0, 0, 0, 0]), typed(b'Z', b"I")].concat();
        assert_eq!(trickle(&mut pg, false, &hello, &losses).0, hello);
        // A commit before the fault is armed passes.
        trickle(&mut pg, true, &typed(b'Q', b"COMMIT\0"), &losses);
        let done = [typed(b'C', b"COMMIT\0"), typed(b'Z', b"I")].concat();
        assert_eq!(trickle(&mut pg, false, &done, &losses).0, done);
        // Armed: a query first (its reply passes), then the commit (its reply is lost).
        losses.arm(WireFault::LoseCommitReply);
        trickle(
            &mut pg,
            true,
            &typed(b'Q', b"INSERT INTO t VALUES (1)\0"),
            &losses,
        );
        trickle(&mut pg, true, &typed(b'Q', b"COMMIT\0"), &losses);
        let insert = [typed(b'C', b"INSERT 0 1\0"), typed(b'Z', b"T")].concat();
        let both = [insert.clone(), done.clone()].concat();
        let (out, flow) = trickle(&mut pg, false, &both, &losses);
        assert_eq!(
            out, insert,
            "the insert's reply passes, the commit's is lost"
        );
        assert_eq!(flow, Flow::Reset, "reset once the commit is done");
        let lost = losses.drain();
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].bytes, lost[0].messages), (done.len() as u64, 2));
        assert!(!losses.take(WireFault::LoseCommitReply), "taken once");
    }

    #[test]
    fn a_parsed_commit_loses_the_reply_that_follows_its_sync() {
        let losses = Losses::default();
        let mut pg = Postgres::default();
        let mut out = Vec::new();
        pg.request(&untyped(196_608), &mut out, &losses);
        pg.reply(&typed(b'Z', b"I"), &mut out, &losses);
        losses.arm(WireFault::LoseCommitReply);
        let parse = typed(b'P', b"s1\0COMMIT\0\0\0");
        let ask = [
            parse,
            typed(b'B', b"\0s1\0\0\0\0\0\0\0"),
            typed(b'E', b"\0\0\0\0\0"),
            typed(b'S', b""),
        ]
        .concat();
        pg.request(&ask, &mut out, &losses);
        let reply = [
            typed(b'1', b""),
            typed(b'2', b""),
            typed(b'C', b"COMMIT\0"),
            typed(b'Z', b"I"),
        ]
        .concat();
        out.clear();
        assert_eq!(pg.reply(&reply, &mut out, &losses), Flow::Reset);
        assert!(out.is_empty());
        assert_eq!(losses.drain()[0].messages, 4);
    }

    #[test]
    fn an_encrypted_connection_is_relayed_unread() {
        let losses = Losses::default();
        let mut pg = Postgres::default();
        let mut out = Vec::new();
        pg.request(&untyped(SSL_REQUEST), &mut out, &losses);
        pg.reply(b"S\x16\x03\x01", &mut out, &losses);
        losses.arm(WireFault::LoseCommitReply);
        out.clear();
        assert_eq!(pg.reply(b"anything", &mut out, &losses), Flow::Go);
        assert_eq!(out, b"anything");
        assert!(losses.take(WireFault::LoseCommitReply), "never taken");
    }
}
