//! What a process said to its service, and what it heard back, as a protocol reader tells it
//! when the proxy listens (a `[steps]` mapping reads the service's traffic): a committed
//! PostgreSQL transaction with its statements, a NATS publish and its JetStream ACK, a delivery
//! and its ACK. These are facts of the wire, in the protocol's own terms; which of them are steps
//! of the outbox, and with which ids, is the mapping's to say
//! ([`crate::system::steps`]).
//!
//! Values stay as the wire carried them: text where the protocol sends text (PostgreSQL's text
//! format, NATS headers), bytes otherwise.
//!
//! A reader that can no longer tell what a connection carries says so ([`Heard::Unread`]): the
//! facts it would have told are missing, and whoever counts facts must know it.

/// One fact a reader heard on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// A PostgreSQL transaction committed: its `COMMIT` was answered (or a statement outside any
    /// transaction completed), whether or not the answer then reached the process. Its statements
    /// in order, each one that completed.
    Committed(Vec<Statement>),
    /// A NATS publish (`PUB` or `HPUB`) that asks for an answer (a reply subject) to a subject
    /// outside `$JS.`, `$SYS.` and `_INBOX.`: a JetStream publish.
    Published(Message),
    /// JetStream's answer to a publish heard before (`{"stream": ..., "seq": N}`): the copy is
    /// stored at stream sequence `seq`.
    PubAcked {
        /// The publish it answers.
        publish: Message,
        /// The copy's stream sequence.
        seq: u64,
    },
    /// A copy delivered to the process by a JetStream consumer (a `MSG` or `HMSG` whose reply
    /// subject is a `$JS.ACK.` subject).
    Delivered(Delivery),
    /// The process acknowledged a delivery heard before (`+ACK`, `+NXT` or an empty body, published to
    /// its `$JS.ACK.` subject).
    Acked(Delivery),
    /// From now on facts this connection carries `way` may pass untold: a fault dropped some of
    /// its bytes and the reader lost its place, a reset cut off a commit's answer, the connection
    /// turned to TLS, it holds more than the reader follows, or a message or an answer could not
    /// be read. The proxy and the reader each say it at most once per way and connection (a
    /// connection may say it twice, for two reasons).
    Unread {
        /// The traffic that passes unread.
        way: Ways,
        /// Why, in a few words.
        why: &'static str,
    },
}

/// A direction of a connection's traffic, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ways {
    /// From the process toward the service: a statement, a publish, an ACK.
    Requests,
    /// From the service toward the process: a commit's answer, a publish's ACK, a delivery.
    Replies,
    /// Both.
    Both,
}

impl Ways {
    /// Whether traffic `self` and `other` have a direction in common.
    pub fn meets(self, other: Ways) -> bool {
        self == Ways::Both || other == Ways::Both || self == other
    }
}

/// One statement of a transaction, as it completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statement {
    /// Its text, as the process sent it (a simple query's, or the parsed statement's).
    pub sql: String,
    /// Its bound parameters in order (`$1` first), each as text; `None` for a NULL, or for a
    /// value sent in binary format (not read).
    pub params: Vec<Option<String>>,
    /// The names of the columns its rows carry (a `SELECT`'s, or a `RETURNING` clause's).
    pub columns: Vec<String>,
    /// Its first row, as text (`None` for a NULL or a binary value); empty when it returned none.
    pub first_row: Vec<Option<String>>,
    /// Its command tag (`INSERT 0 1`, `UPDATE 3`, `SELECT 1`, `COMMIT`).
    pub tag: String,
}

impl Statement {
    /// The rows it changed or returned: the command tag's last number (0 without one).
    pub fn rows(&self) -> u64 {
        self.tag
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

/// A NATS message as it crossed: its subject, headers and payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// The subject it was published to.
    pub subject: String,
    /// Its headers (`HPUB`, `HMSG`), in order.
    pub headers: Vec<(String, String)>,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// A copy delivered by a JetStream consumer, read from its `$JS.ACK.` reply subject.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// The message delivered.
    pub message: Message,
    /// The stream it came from.
    pub stream: String,
    /// The consumer that delivered it.
    pub consumer: String,
    /// How many times the consumer delivered this copy, this time included (1-based).
    pub delivered: u32,
    /// The copy's stream sequence.
    pub stream_seq: u64,
}
