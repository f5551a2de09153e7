//! The framing of one direction of a PostgreSQL connection: messages are a type byte and a length
//! that counts itself; the client's first message (the startup, or an SSL or GSS encryption
//! request) has no type byte, and the server answers an encryption request with one bare byte.
//!
//! Of each message a part of its body is kept: the first [`KEEP`] bytes, or, for the kinds a
//! listening reader decodes, the whole body when it is at most [`WHOLE_AT_MOST`] long.

/// How much of a message's body is kept to read it (a query's first words).
pub(super) const KEEP: usize = 256;

/// The longest body kept whole, for the kinds kept whole; a longer one keeps [`KEEP`] bytes.
pub(super) const WHOLE_AT_MOST: usize = 1024 * 1024;

/// One message, read to its end.
pub(super) struct Message<'a> {
    /// Its type byte (0 for an untyped message, the byte itself for a bare one).
    pub(super) kind: u8,
    /// Its body as kept: the whole of it when [`Message::whole`], else its first bytes.
    pub(super) body: &'a [u8],
    /// Whether `body` is the whole body.
    pub(super) whole: bool,
}

/// Splits one direction of a connection into messages as bytes come.
#[derive(Default)]
pub(super) struct Splitter {
    /// Whether the next message has a type byte.
    pub(super) typed: bool,
    /// Bare one-byte messages expected next (answers to encryption requests).
    pub(super) bare: u32,
    /// The kinds whose body is kept whole (none unless the reader listens).
    whole_kinds: &'static [u8],
    head: [u8; 5],
    have: usize,
    /// Body bytes of the current message still to come, once its head is read.
    left: Option<usize>,
    /// How many bytes of the current message's body are kept.
    keep: usize,
    /// Whether the current message's body is kept whole.
    whole: bool,
    body: Vec<u8>,
}

impl Splitter {
    /// A splitter for typed messages (the server's direction).
    pub(super) fn typed() -> Splitter {
        Splitter {
            typed: true,
            ..Splitter::default()
        }
    }

    /// Keeps the body of each message of `kinds` whole (up to [`WHOLE_AT_MOST`]).
    pub(super) fn keeping_whole(self, kinds: &'static [u8]) -> Splitter {
        Splitter {
            whole_kinds: kinds,
            ..self
        }
    }

    /// Whether the next byte begins a message.
    pub(super) fn at_start(&self) -> bool {
        self.have == 0 && self.left.is_none()
    }

    /// Reads the next piece of `bytes`: how many it took, and the message it ended, if one.
    pub(super) fn step(&mut self, bytes: &[u8]) -> (usize, Option<Message<'_>>) {
        if self.at_start() && self.bare > 0 {
            self.bare -= 1;
            self.body.clear();
            return (
                1,
                Some(Message {
                    kind: bytes[0],
                    body: &[],
                    whole: true,
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
            let body_len = (len as usize).saturating_sub(4);
            self.left = Some(body_len);
            self.keep = self.keeps(body_len);
            self.whole = self.keep >= body_len;
            self.body.clear();
        }
        let left = self.left.expect("read the head");
        let n = left.min(bytes.len() - took);
        let keep = n.min(self.keep.saturating_sub(self.body.len()));
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
                whole: self.whole,
            }),
        )
    }

    /// How many bytes of the body of the message whose head was just read are kept.
    fn keeps(&self, body_len: usize) -> usize {
        let whole_kind = self.typed && self.whole_kinds.contains(&self.head[0]);
        if whole_kind && body_len <= WHOLE_AT_MOST {
            body_len
        } else {
            KEEP
        }
    }
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

    /// The body and wholeness of the one message `bytes` holds, fed one byte at a time.
    fn read_one(splitter: &mut Splitter, bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut ended = None;
        for b in bytes.chunks(1) {
            let (n, m) = splitter.step(b);
            assert_eq!(n, 1);
            if let Some(m) = m {
                ended = Some((m.body.to_vec(), m.whole));
            }
        }
        ended.expect("one message")
    }

    #[test]
    fn a_kind_kept_whole_keeps_its_body_up_to_the_bound_and_others_keep_their_first_bytes() {
        let long = vec![b'x'; 1000];
        let mut splitter = Splitter::typed().keeping_whole(b"Q");
        assert_eq!(
            read_one(&mut splitter, &typed(b'Q', &long)),
            (long.clone(), true)
        );
        let (kept, whole) = read_one(&mut splitter, &typed(b'N', &long));
        assert_eq!((kept.len(), whole), (KEEP, false));
        let (kept, whole) = read_one(&mut splitter, &typed(b'N', b"short"));
        assert_eq!((kept, whole), (b"short".to_vec(), true));
        let huge = vec![b'y'; WHOLE_AT_MOST + 1];
        let mut at_once = Splitter::typed().keeping_whole(b"Q");
        let message = typed(b'Q', &huge);
        let (n, m) = at_once.step(&message);
        let m = m.expect("one message");
        assert_eq!((n, m.body.len(), m.whole), (message.len(), KEEP, false));
    }

    #[test]
    fn without_kinds_kept_whole_every_body_keeps_its_first_bytes() {
        let mut splitter = Splitter::typed();
        let (kept, whole) = read_one(&mut splitter, &typed(b'Q', &[b'x'; 300]));
        assert_eq!((kept.len(), whole), (KEEP, false));
    }
}
