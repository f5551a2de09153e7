//! One connection relayed both ways, its bytes read by its protocol's reader as they pass.
//!
//! A fault that drops bytes for a while takes them out of one direction. Dropped requests never
//! reach the service: the reader stops reading requests (what it reads of replies, answers to
//! requests sent before, stays true). Dropped replies never reach the process: a reader that can
//! read them without passing them on (PostgreSQL: the server committed, whether or not the
//! process hears it) keeps its place; any other stops reading replies. A connection whose bytes a
//! fault dropped is reset when the fault ends, so a direction no longer read rarely carries
//! anything more; if it does and the proxy listens, the listener hears once per direction that
//! facts pass untold ([`Heard::Unread`]). So it does when a reset cuts off the answer to a
//! commit the service may have made ([`Reader::commit_awaited`]). A process that is gone (its
//! side closed, or a write to it failed) leaves the service's side read to its end.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::heard::{Heard, Ways};
use super::listen::Listener;
use super::protocol::{Flow, Losses, Reader};

/// Why a direction's bytes pass unread after a fault dropped some of them.
const LOST_PLACE: &str = "a fault dropped some of its bytes and the reader lost its place";

/// Why a reset connection's last answers pass unread.
const CUT_OFF: &str = "the connection was reset while a commit's answer was awaited";

/// What a relayed connection needs of its proxy.
pub(super) trait Proxied: Sync {
    /// Whether a fault drops the bytes going `way` now.
    fn dropping(&self, way: Way) -> bool;
    /// Counts `n` bytes going `way`, dropped or passed on.
    fn count(&self, way: Way, n: u64, dropped: bool);
    /// The protocol faults that wait for a message.
    fn losses(&self) -> &Losses;
    /// Where what the reader hears goes, when the proxy listens.
    fn listener(&self) -> Option<&Listener>;
}

/// Closes `stream` with a reset (RST) rather than an orderly end.
pub(super) fn refuse(stream: TcpStream) {
    let _ = stream.set_zero_linger();
}

/// A direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// From the process toward the service.
    Request,
    /// From the service toward the process.
    Reply,
}

impl Way {
    fn index(self) -> usize {
        match self {
            Way::Request => 0,
            Way::Reply => 1,
        }
    }

    fn ways(self) -> Ways {
        match self {
            Way::Request => Ways::Requests,
            Way::Reply => Ways::Replies,
        }
    }
}

/// One connection's reading: its reader, the directions it no longer reads, and whether the
/// listener was told that they pass unread.
struct Reading<'s> {
    shared: &'s dyn Proxied,
    reader: Option<Box<dyn Reader>>,
    /// Per direction: no longer read.
    lost: [bool; 2],
    /// Per direction: the listener was told so.
    said: [bool; 2],
    out: Vec<u8>,
}

/// What to pass on of bytes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The bytes themselves (no reader reads them).
    AsRead,
    /// What the reader put in [`Reading::out`].
    Out,
}

impl<'s> Reading<'s> {
    /// Reads `bytes`, going `way`: what to pass on, and what to do with the connection then.
    fn through(&mut self, way: Way, bytes: &[u8]) -> (Pass, Flow) {
        let losses = self.shared.losses();
        let r = match &mut self.reader {
            Some(r) if !self.lost[way.index()] => r,
            _ => return (Pass::AsRead, Flow::Go),
        };
        self.out.clear();
        let flow = match way {
            Way::Request => r.request(bytes, &mut self.out, losses),
            Way::Reply => r.reply(bytes, &mut self.out, losses),
        };
        (Pass::Out, flow)
    }

    /// The bytes to pass on of `read`, as [`Reading::through`] said.
    fn passing<'a>(&'a self, pass: Pass, read: &'a [u8]) -> &'a [u8] {
        match pass {
            Pass::AsRead => read,
            Pass::Out => &self.out,
        }
    }

    /// A fault dropped `bytes` going `way`: what to do with the connection then.
    fn dropped(&mut self, way: Way, bytes: &[u8]) -> Flow {
        let read = match (&mut self.reader, way) {
            (Some(r), Way::Reply) if !self.lost[1] => r.dropped_reply(bytes, self.shared.losses()),
            _ => None,
        };
        self.lost[way.index()] |= read.is_none();
        read.unwrap_or(Flow::Go)
    }

    /// The connection is reset: if the service may have committed something whose answer will
    /// now never be read, the listener hears that replies pass unread.
    async fn cut_off(&mut self) {
        let awaited = self.reader.as_ref().is_some_and(|r| r.commit_awaited());
        if !awaited || std::mem::replace(&mut self.said[1], true) {
            return;
        }
        if let (Some(listener), Some(r)) = (self.shared.listener(), &mut self.reader) {
            let mut heard = r.heard();
            heard.push(Heard::Unread {
                way: Ways::Replies,
                why: CUT_OFF,
            });
            listener.tell(heard).await;
        }
    }

    /// Bytes from the process: dropped if a fault drops requests, else read, passed on to the
    /// service and told; what to do with the connection then (`None`: the service is gone).
    async fn from_process(&mut self, bytes: &[u8], server: &mut TcpStream) -> Option<Flow> {
        let dropping = self.shared.dropping(Way::Request);
        self.shared
            .count(Way::Request, bytes.len() as u64, dropping);
        if dropping {
            return Some(self.dropped(Way::Request, bytes));
        }
        let (pass, flow) = self.through(Way::Request, bytes);
        server.write_all(self.passing(pass, bytes)).await.ok()?;
        self.tell(Some(Way::Request)).await;
        Some(flow)
    }

    /// Bytes from the service: read and told (a reply is held until the listener's word), then
    /// dropped if a fault drops replies, else passed on to the process; what to do with the
    /// connection then, and whether the process is gone (a write to it failed).
    async fn from_service(&mut self, bytes: &[u8], client: &mut TcpStream) -> (Flow, bool) {
        let dropping = self.shared.dropping(Way::Reply);
        self.shared.count(Way::Reply, bytes.len() as u64, dropping);
        if dropping {
            let flow = self.dropped(Way::Reply, bytes);
            // What a dropped reply told (a commit the process never hears of).
            self.tell(None).await;
            return (flow, false);
        }
        let (pass, flow) = self.through(Way::Reply, bytes);
        self.tell(Some(Way::Reply)).await;
        let out = self.passing(pass, bytes);
        let gone = !out.is_empty() && client.write_all(out).await.is_err();
        (flow, gone)
    }

    /// Tells the listener what the reader heard, and (once) that `passed`, the way bytes just
    /// went, passes unread if it does; and waits for its word.
    async fn tell(&mut self, passed: Option<Way>) {
        let Some(listener) = self.shared.listener() else {
            return;
        };
        let Some(r) = &mut self.reader else { return };
        let mut heard = r.heard();
        let unread = passed.filter(|w| self.lost[w.index()]);
        if let Some(way) = unread.filter(|w| !std::mem::replace(&mut self.said[w.index()], true)) {
            let way = way.ways();
            heard.push(Heard::Unread {
                way,
                why: LOST_PLACE,
            });
        }
        listener.tell(heard).await;
    }
}

/// Relays one connection both ways until both ends are done or a reset comes; `reader`
/// follows the protocol as the bytes pass.
pub(super) async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    shared: &dyn Proxied,
    mut reset: watch::Receiver<u64>,
    reader: Option<Box<dyn Reader>>,
) {
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 16 * 1024];
    let mut reading = Reading {
        shared,
        reader,
        lost: [false; 2],
        said: [false; 2],
        out: Vec::with_capacity(16 * 1024),
    };
    let (mut client_open, mut server_open) = (true, true);
    while client_open || server_open {
        let flow = tokio::select! {
            read = client.read(&mut up), if client_open => match read {
                Ok(n) if n > 0 => match reading.from_process(&up[..n], &mut server).await {
                    Some(flow) => flow,
                    None => break,
                },
                _ => {
                    client_open = false;
                    let _ = server.shutdown().await;
                    Flow::Go
                }
            },
            read = server.read(&mut down), if server_open => match read {
                Ok(n) if n > 0 => {
                    let (flow, gone) = reading.from_service(&down[..n], &mut client).await;
                    if gone && client_open {
                        // The process is gone: what the service still answers is read.
                        client_open = false;
                        let _ = server.shutdown().await;
                    }
                    flow
                }
                _ => {
                    server_open = false;
                    let _ = client.shutdown().await;
                    Flow::Go
                }
            },
            _ = reset.changed() => Flow::Reset,
        };
        if flow == Flow::Reset {
            reading.cut_off().await;
            refuse(server);
            refuse(client);
            return;
        }
    }
}
