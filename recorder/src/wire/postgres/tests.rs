//! The reader's framing and its `lose commit-reply`.
use super::*;

pub(super) fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

pub(super) fn untyped(code: u32) -> Vec<u8> {
    let mut m = 8u32.to_be_bytes().to_vec();
    m.extend_from_slice(&code.to_be_bytes());
    m
}

/// Feeds `bytes` one byte at a time, as the worst split of a stream.
pub(super) fn trickle(
    reader: &mut Postgres,
    up: bool,
    bytes: &[u8],
    losses: &Losses,
) -> (Vec<u8>, Flow) {
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
