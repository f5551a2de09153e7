//! PostgreSQL's frontend/backend protocol (version 3) as the proxy reads it, for `lose
//! commit-reply`: the process's next `COMMIT` (a simple query, or a parsed statement and its
//! Sync) is passed on to the server, and from the first reply byte that belongs to it everything
//! the server sends is dropped; when the server's ReadyForQuery closes the commit (it is
//! committed), the connection is reset. The client is told nothing.
//!
//! A reader made to listen ([`Postgres::listening`]) also decodes the statements of each
//! transaction and tells each one that committed ([`listen`]); one that does not listen frames
//! the messages only ([`frames`]). A connection that turns to TLS is relayed unread.

mod decode;
mod frames;
mod listen;
mod split;

use std::time::Instant;

use self::frames::Splitter;
use self::listen::Listen;
use super::heard::Heard;
use super::protocol::{Flow, Losses, Lost, Reader};
use crate::fault::spec::WireFault;

/// The kinds of the process's messages a listening reader keeps whole: Parse, Bind, Query,
/// Close.
const REQUESTS_KEPT_WHOLE: &[u8] = b"PBQC";
/// The kinds of the server's messages a listening reader keeps whole: RowDescription, DataRow,
/// CommandComplete.
const REPLIES_KEPT_WHOLE: &[u8] = b"TDC";

/// The codes of the untyped requests for an encrypted connection.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
/// The code of the untyped request that cancels another connection's query.
const CANCEL_REQUEST: u32 = 80_877_102;

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
    /// When listening: decodes statements and tells each committed transaction
    /// ([`Reader::heard`]).
    listen: Option<Box<Listen>>,
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
            listen: None,
        }
    }
}

impl Postgres {
    /// A reader that also tells what it hears: each committed transaction.
    pub fn listening() -> Postgres {
        Postgres {
            up: Splitter::default().keeping_whole(REQUESTS_KEPT_WHOLE),
            down: Splitter::typed().keeping_whole(REPLIES_KEPT_WHOLE),
            listen: Some(Box::default()),
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
            if let (true, Some(listen)) = (typed, &mut self.listen) {
                listen.request(m.kind, m.body, m.whole);
            }
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
                    if let Some(listen) = &mut self.listen {
                        listen.unread("the connection turned to TLS");
                    }
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
            if let Some(listen) = &mut self.listen {
                listen.reply(m.kind, m.body, m.whole);
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

    /// A dropped reply is read as any other (a commit it answers did commit), and passed on to
    /// no one.
    fn dropped_reply(&mut self, bytes: &[u8], losses: &Losses) -> Option<Flow> {
        Some(self.reply(bytes, &mut Vec::new(), losses))
    }

    fn commit_awaited(&self) -> bool {
        self.listen.as_ref().is_some_and(|l| l.commit_awaited())
    }

    fn heard(&mut self) -> Vec<Heard> {
        self.listen
            .as_mut()
            .map_or_else(Vec::new, |listen| listen.take_heard())
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
mod tests;

#[cfg(test)]
mod listen_tests;
