//! The NATS client protocol's framing: control lines ending in CRLF; `PUB`, `HPUB`, `MSG` and
//! `HMSG` are followed by a payload whose size is their last argument, and its own CRLF. And the
//! arguments of those lines that the readers act on.

/// How long a control line may grow before the connection is relayed unread (`INFO` and
/// `CONNECT` carry a JSON object; a few kilobytes at most).
pub(super) const LONGEST_LINE: usize = 64 * 1024;

/// Splits one direction into control lines and payloads.
#[derive(Default)]
pub(super) struct Lines {
    /// The control line read last (or the part of it read so far).
    pub(super) line: Vec<u8>,
    /// Bytes of the current payload (and its CRLF) still to come.
    pub(super) payload: usize,
}

/// One piece of a direction's bytes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Piece {
    /// Part of a control line not ended yet: nothing to pass on.
    Partial,
    /// A control line ended: it is in `Lines::line`; its payload follows.
    Line,
    /// Payload bytes.
    Payload { last: bool },
}

impl Lines {
    /// Reads the next piece of `bytes`: how many it took, and what they were.
    pub(super) fn step(&mut self, bytes: &[u8]) -> (usize, Piece) {
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
pub(super) fn words(line: &[u8]) -> Vec<&[u8]> {
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
        // A size past any payload is read as one (the direction is then relayed unread).
        (true, Some(size)) => size.saturating_add(2),
        _ => 0,
    }
}

/// The reply subject of a publish to a JetStream subject, if `line` is one.
pub(super) fn jetstream_reply(line: &[u8]) -> Option<Vec<u8>> {
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
pub(super) fn addressed_to(line: &[u8]) -> Option<&[u8]> {
    let words = words(line);
    let op = words.first()?;
    let is_msg = op.eq_ignore_ascii_case(b"MSG") || op.eq_ignore_ascii_case(b"HMSG");
    (is_msg && words.len() >= 4).then(|| {
        let start = words[1].as_ptr() as usize - line.as_ptr() as usize;
        &line[start..start + words[1].len()]
    })
}

/// The arguments of a control line that carries a message (`PUB`, `HPUB`, `MSG`, `HMSG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Carrying<'a> {
    /// The subject it is published to, or delivered on.
    pub(super) subject: &'a [u8],
    /// The subject an answer goes to, if any.
    pub(super) reply: Option<&'a [u8]>,
    /// The size of its header block (0 for `PUB` and `MSG`).
    pub(super) header_size: usize,
    /// The size of its payload, headers included (without the CRLF that ends it).
    pub(super) size: usize,
}

/// The arguments of `line`, if it carries a message: `PUB subject [reply] size`,
/// `HPUB subject [reply] hsize tsize`, `MSG subject sid [reply] size`,
/// `HMSG subject sid [reply] hsize tsize`.
pub(super) fn carrying(line: &[u8]) -> Option<Carrying<'_>> {
    let words = words(line);
    let op = words.first()?;
    let is = |name: &str| op.eq_ignore_ascii_case(name.as_bytes());
    // Words before the optional reply subject, and sizes after it.
    let (before, sizes) = if is("PUB") {
        (2, 1)
    } else if is("HPUB") {
        (2, 2)
    } else if is("MSG") {
        (3, 1)
    } else if is("HMSG") {
        (3, 2)
    } else {
        return None;
    };
    let reply = match words.len().checked_sub(before + sizes)? {
        0 => None,
        1 => Some(words[before]),
        _ => return None,
    };
    let number = |w: &[u8]| std::str::from_utf8(w).ok()?.parse::<usize>().ok();
    let size = number(words[words.len() - 1])?;
    let header_size = match sizes {
        2 => number(words[words.len() - 2])?,
        _ => 0,
    };
    (header_size <= size).then_some(Carrying {
        subject: words[1],
        reply,
        header_size,
        size,
    })
}
