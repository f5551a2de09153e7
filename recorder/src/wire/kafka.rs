//! Kafka's protocol as the proxy reads it, for `lose produce-ack` and `lose commit-reply`: the
//! process's next Produce (one that asks for an acknowledgement) or OffsetCommit is passed on to
//! the broker, which appends the records or stores the offsets; its response is dropped whole and
//! the connection reset, so the client sees a connection lost in flight and retries.
//!
//! A Kafka client learns the brokers' addresses from the broker itself (Metadata, FindCoordinator,
//! DescribeCluster responses) and opens its later connections there: the reader writes the proxy's
//! own address over every broker address those responses carry, so every connection stays behind
//! the proxy. One proxy reaches one broker: every broker of a cluster is written as that one.
//!
//! Both directions are frames: a 4-byte big-endian size, then a request (its header: API key,
//! version, correlation id) or a response (the correlation id first). Requests pass on as they
//! come; a response is held whole only when it is rewritten or dropped. A size that cannot be a
//! frame (TLS, another protocol) leaves the connection relayed unread from then on.

use std::collections::HashMap;
use std::time::Instant;

use kafka_protocol::messages::{
    ApiKey, DescribeClusterResponse, FindCoordinatorResponse, MetadataResponse, RequestHeader,
    ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::protocol::{Flow, Losses, Lost, Reader};
use crate::fault::spec::WireFault;

/// The address the proxy listens on, as the rewritten responses give it.
const HOST: &str = "127.0.0.1";
/// The largest frame read as one (Kafka's own default limit is 100 MiB).
const LARGEST_FRAME: usize = 256 * 1024 * 1024;
/// How much of a request is kept to read its header (and a Produce's `acks`).
const KEEP: usize = 1024;
/// The most requests waiting for their response that one connection follows.
const MOST_WAITING: usize = 4096;

/// A request whose response the reader acts on.
#[derive(Debug, Clone, Copy)]
struct Asked {
    key: ApiKey,
    version: i16,
    /// The fault that loses its response, and when the request crossed.
    lose: Option<(WireFault, Instant)>,
}

/// What happens to the response being read.
#[derive(Debug)]
enum Part {
    /// Reading its size and correlation id (held until the fate is known).
    Head(Vec<u8>),
    /// Passed on as it comes: this many bytes left.
    Pass(usize),
    /// Held whole to be rewritten: its body so far, and the bytes left.
    Hold(Asked, Vec<u8>, usize),
    /// Dropped: the request's fault, the bytes dropped so far, and the bytes left.
    Drop(Asked, u64, usize),
}

/// One connection to a Kafka broker.
pub struct Kafka {
    /// The proxy's port: every broker address a response gives is written as this one.
    port: u16,
    /// The request being read: the first [`KEEP`] bytes of its frame, and the bytes left.
    up: (Vec<u8>, usize),
    down: Part,
    /// Requests waiting for a response the reader acts on, by correlation id.
    waiting: HashMap<i32, Asked>,
    /// Requests no longer read (a size that is no frame).
    up_opaque: bool,
    /// Responses no longer read (a size that is no frame).
    down_opaque: bool,
}

impl Kafka {
    /// A reader for a connection through the proxy listening on `port`.
    pub fn new(port: u16) -> Kafka {
        Kafka {
            port,
            up: (Vec::new(), 0),
            down: Part::Head(Vec::new()),
            waiting: HashMap::new(),
            up_opaque: false,
            down_opaque: false,
        }
    }

    /// A whole request's kept bytes: notes it when its response is acted on.
    fn requested(&mut self, kept: &[u8], losses: &Losses) {
        // A client that never reads its responses is not followed past the bound: its later
        // responses pass unread, and no fault waits on them.
        let Some((asked, correlation)) = read_request(kept) else {
            return;
        };
        if self.waiting.len() >= MOST_WAITING {
            return;
        }
        let lose = match asked.key {
            ApiKey::Produce => Some(WireFault::LoseProduceAck),
            ApiKey::OffsetCommit => Some(WireFault::LoseCommitReply),
            _ => None,
        };
        let asked = Asked {
            lose: lose
                .filter(|&fault| losses.take(fault))
                .map(|fault| (fault, Instant::now())),
            ..asked
        };
        self.waiting.insert(correlation, asked);
    }

    /// The fate of a response, once its size and correlation id are in `head`.
    fn fate(&mut self, head: Vec<u8>, out: &mut Vec<u8>) -> Part {
        let size = frame_size(&head[..4]).unwrap_or_default();
        let correlation = i32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        let left = size - 4;
        match self.waiting.remove(&correlation) {
            Some(asked) if asked.lose.is_some() => Part::Drop(asked, head.len() as u64, left),
            Some(asked) if rewritten(asked.key) => Part::Hold(asked, head[4..].to_vec(), left),
            _ => {
                out.extend_from_slice(&head);
                Part::Pass(left)
            }
        }
    }

    /// A response held whole: rewritten if it reads, else passed on as it came.
    fn held(&self, asked: Asked, body: &[u8], out: &mut Vec<u8>) {
        let body = rewrite(asked, body, self.port).unwrap_or_else(|| body.to_vec());
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
    }
}

impl Reader for Kafka {
    fn request(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        out.extend_from_slice(bytes);
        let mut rest = bytes;
        while !rest.is_empty() && !self.up_opaque {
            let (kept, left) = &mut self.up;
            if kept.len() < 4 && *left == 0 {
                let n = (4 - kept.len()).min(rest.len());
                kept.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if kept.len() == 4 {
                    match frame_size(kept) {
                        Some(size) => *left = size,
                        None => self.up_opaque = true,
                    }
                }
                continue;
            }
            let n = (*left).min(rest.len());
            let keep = n.min(KEEP.saturating_sub(kept.len()));
            kept.extend_from_slice(&rest[..keep]);
            *left -= n;
            rest = &rest[n..];
            if *left == 0 {
                let kept = std::mem::take(kept);
                self.requested(&kept[4..], losses);
            }
        }
        Flow::Go
    }

    fn reply(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> Flow {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.down_opaque {
                if let Part::Head(head) = &mut self.down {
                    out.append(head);
                }
                out.extend_from_slice(rest);
                break;
            }
            let (n, flow) = self.reply_step(rest, out, losses);
            rest = &rest[n..];
            if flow == Flow::Reset {
                return Flow::Reset;
            }
        }
        Flow::Go
    }
}

impl Kafka {
    /// Reads the next piece of a response: how many bytes it took, and what the connection does.
    fn reply_step(&mut self, bytes: &[u8], out: &mut Vec<u8>, losses: &Losses) -> (usize, Flow) {
        let part = std::mem::replace(&mut self.down, Part::Head(Vec::new()));
        let (n, next) = match part {
            Part::Head(mut head) => {
                let n = (8 - head.len()).min(bytes.len());
                head.extend_from_slice(&bytes[..n]);
                if head.len() == 4 && frame_size(&head).is_none_or(|size| size < 4) {
                    self.down_opaque = true;
                    self.down = Part::Head(head);
                    return (n, Flow::Go);
                }
                let next = if head.len() == 8 {
                    self.fate(head, out)
                } else {
                    Part::Head(head)
                };
                (n, next)
            }
            Part::Pass(left) => {
                let n = left.min(bytes.len());
                out.extend_from_slice(&bytes[..n]);
                (n, Part::Pass(left - n))
            }
            Part::Hold(asked, mut body, left) => {
                let n = left.min(bytes.len());
                body.extend_from_slice(&bytes[..n]);
                (n, Part::Hold(asked, body, left - n))
            }
            Part::Drop(asked, dropped, left) => {
                let n = left.min(bytes.len());
                (n, Part::Drop(asked, dropped + n as u64, left - n))
            }
        };
        self.down = match next {
            Part::Pass(0) => Part::Head(Vec::new()),
            Part::Hold(asked, body, 0) => {
                self.held(asked, &body, out);
                Part::Head(Vec::new())
            }
            Part::Drop(asked, dropped, 0) => {
                let (what, began) = asked.lose.expect("a dropped response has its fault");
                losses.acted(Lost {
                    what,
                    began,
                    bytes: dropped + (bytes.len() - n) as u64,
                    messages: 1,
                    resets: 1,
                });
                return (bytes.len(), Flow::Reset);
            }
            next => next,
        };
        (n, Flow::Go)
    }
}

/// The size a frame's first four bytes give, if it can be one.
fn frame_size(head: &[u8]) -> Option<usize> {
    let size = i32::from_be_bytes(head.try_into().ok()?);
    usize::try_from(size).ok().filter(|&s| s <= LARGEST_FRAME)
}

/// Whether the response to a request of `key` carries broker addresses.
fn rewritten(key: ApiKey) -> bool {
    matches!(
        key,
        ApiKey::Metadata | ApiKey::FindCoordinator | ApiKey::DescribeCluster
    )
}

/// A request's API key and version and its correlation id, for the requests whose response the
/// reader acts on: a Produce that asks for an acknowledgement, an OffsetCommit, the responses
/// that carry broker addresses. `body` is the frame's first bytes after its size.
fn read_request(body: &[u8]) -> Option<(Asked, i32)> {
    let key = i16::from_be_bytes(body.get(..2)?.try_into().ok()?);
    let version = i16::from_be_bytes(body.get(2..4)?.try_into().ok()?);
    let key = ApiKey::try_from(key).ok()?;
    let acted_on = matches!(key, ApiKey::Produce | ApiKey::OffsetCommit) || rewritten(key);
    if !acted_on {
        return None;
    }
    let mut rest = body;
    let header = RequestHeader::decode(&mut rest, key.request_header_version(version)).ok()?;
    if key == ApiKey::Produce && produce_acks(version, rest)? == 0 {
        return None;
    }
    let asked = Asked {
        key,
        version,
        lose: None,
    };
    Some((asked, header.correlation_id))
}

/// The `acks` of a Produce request of `version`, from its body's first bytes.
fn produce_acks(version: i16, mut body: &[u8]) -> Option<i16> {
    if version >= 3 {
        let skip = if version >= 9 {
            let (length, read) = unsigned_varint(body)?;
            read + (length as usize).saturating_sub(1)
        } else {
            let length = i16::from_be_bytes(body.get(..2)?.try_into().ok()?);
            2 + usize::try_from(length).unwrap_or(0)
        };
        body = body.get(skip..)?;
    }
    Some(i16::from_be_bytes(body.get(..2)?.try_into().ok()?))
}

/// An unsigned varint at the start of `bytes`: its value and how many bytes it took.
fn unsigned_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (i, b) in bytes.iter().take(5).enumerate() {
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// `body` (a response, correlation id first) with every broker address it carries written as
/// the proxy's; `None` where it does not read as the response `asked` waits for.
fn rewrite(asked: Asked, body: &[u8], port: u16) -> Option<Vec<u8>> {
    let header_version = asked.key.response_header_version(asked.version);
    let (version, port) = (asked.version, i32::from(port));
    let mut rest = body;
    let header = ResponseHeader::decode(&mut rest, header_version).ok()?;
    let mut out = Vec::with_capacity(body.len() + 16);
    header.encode(&mut out, header_version).ok()?;
    match asked.key {
        ApiKey::Metadata => {
            let mut response = MetadataResponse::decode(&mut rest, version).ok()?;
            for broker in &mut response.brokers {
                (broker.host, broker.port) = (HOST.into(), port);
            }
            response.encode(&mut out, version).ok()?;
        }
        ApiKey::FindCoordinator => {
            let mut response = FindCoordinatorResponse::decode(&mut rest, version).ok()?;
            if version < 4 && response.error_code == 0 {
                (response.host, response.port) = (HOST.into(), port);
            }
            for coordinator in &mut response.coordinators {
                if coordinator.error_code == 0 {
                    (coordinator.host, coordinator.port) = (HOST.into(), port);
                }
            }
            response.encode(&mut out, version).ok()?;
        }
        ApiKey::DescribeCluster => {
            let mut response = DescribeClusterResponse::decode(&mut rest, version).ok()?;
            for broker in &mut response.brokers {
                (broker.host, broker.port) = (HOST.into(), port);
            }
            response.encode(&mut out, version).ok()?;
        }
        _ => return None,
    }
    rest.is_empty().then_some(out)
}

#[cfg(test)]
mod tests;
