//! A listening NATS reader, fed conversations one byte at a time and one piece at a time: what
//! it tells, and when.

use crate::fault::spec::WireFault;
use crate::wire::heard::{Delivery, Heard, Message, Ways};
use crate::wire::nats::listen::{LARGEST_HEARD, REMEMBERED};
use crate::wire::nats::Nats;
use crate::wire::protocol::{Losses, Reader};

/// Who sends a piece of a conversation.
#[derive(Clone, Copy)]
enum Side {
    Process,
    Server,
}
use Side::{Process, Server};

/// What a reader heard and passed on after each piece of a conversation.
#[derive(Debug, PartialEq, Eq)]
struct Told {
    heard: Vec<Vec<Heard>>,
    passed: Vec<Vec<u8>>,
    lost: usize,
}

/// Feeds `conversation` to `nats` in chunks of `chunk` bytes (each piece on its own), with
/// `lose puback` armed first if `lose`.
fn feed(mut nats: Nats, conversation: &[(Side, Vec<u8>)], chunk: usize, lose: bool) -> Told {
    let losses = Losses::default();
    if lose {
        losses.arm(WireFault::LosePuback);
    }
    let mut told = Told {
        heard: Vec::new(),
        passed: Vec::new(),
        lost: 0,
    };
    for (side, bytes) in conversation {
        let mut out = Vec::new();
        let mut heard = Vec::new();
        for piece in bytes.chunks(chunk) {
            match side {
                Process => nats.request(piece, &mut out, &losses),
                Server => nats.reply(piece, &mut out, &losses),
            };
            heard.extend(nats.heard());
        }
        told.heard.push(heard);
        told.passed.push(out);
    }
    told.lost = losses.drain().len();
    told
}

/// What a listening reader heard after each piece of `conversation`, fed one byte at a time;
/// fed each piece whole it hears the same.
fn hear(conversation: &[(Side, Vec<u8>)]) -> Vec<Vec<Heard>> {
    let bytewise = feed(Nats::listening(), conversation, 1, false);
    let whole = feed(Nats::listening(), conversation, usize::MAX, false);
    assert_eq!(bytewise, whole, "one byte at a time or whole, the same");
    bytewise.heard
}

/// `PUB subject [reply] size` with its payload.
fn publish(subject: &str, reply: Option<&str>, payload: &str) -> Vec<u8> {
    let reply = reply.map(|r| format!(" {r}")).unwrap_or_default();
    format!("PUB {subject}{reply} {}\r\n{payload}\r\n", payload.len()).into_bytes()
}

/// `HPUB subject reply hsize tsize` with its headers and payload.
fn publish_with(subject: &str, reply: &str, headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let block = header_block(headers);
    let total = block.len() + payload.len();
    format!(
        "HPUB {subject} {reply} {} {total}\r\n{block}{payload}\r\n",
        block.len()
    )
    .into_bytes()
}

/// `MSG subject sid [reply] size` with its payload.
fn message(subject: &str, reply: Option<&str>, payload: &str) -> Vec<u8> {
    let reply = reply.map(|r| format!(" {r}")).unwrap_or_default();
    format!("MSG {subject} 1{reply} {}\r\n{payload}\r\n", payload.len()).into_bytes()
}

/// `HMSG subject sid reply hsize tsize` with its headers and payload.
fn message_with(subject: &str, reply: &str, headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let block = header_block(headers);
    let total = block.len() + payload.len();
    format!(
        "HMSG {subject} 1 {reply} {} {total}\r\n{block}{payload}\r\n",
        block.len()
    )
    .into_bytes()
}

fn header_block(headers: &[(&str, &str)]) -> String {
    let lines: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    format!("NATS/1.0\r\n{lines}\r\n")
}

fn msg(subject: &str, headers: &[(&str, &str)], payload: &str) -> Message {
    Message {
        subject: subject.to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        payload: payload.as_bytes().to_vec(),
    }
}

const PUB_ACK: &str = r#"{"stream":"ORDERS","seq":5}"#;
const V1_ACK: &str = "$JS.ACK.ORDERS.worker.2.7.3.1700000000000000000.0";
const V2_ACK: &str = "$JS.ACK._.a1b2c3.ORDERS.worker.2.7.3.1700000000000000000.0.r4nd0m";

#[test]
fn a_jetstream_publish_is_told_as_it_crosses_and_its_pub_ack_with_the_publish() {
    let heard = hear(&[
        (Server, b"INFO {\"jetstream\":true}\r\n".to_vec()),
        (Process, b"CONNECT {}\r\nPING\r\n".to_vec()),
        (
            Process,
            publish("orders.created", Some("_INBOX.a.1"), "hello"),
        ),
        (Server, message("_INBOX.a.1", None, PUB_ACK)),
        (Server, message("_INBOX.a.1", None, PUB_ACK)),
    ]);
    let sent = msg("orders.created", &[], "hello");
    assert_eq!(
        heard[..2],
        [vec![], vec![]],
        "INFO and CONNECT tell nothing"
    );
    assert_eq!(heard[2], [Heard::Published(sent.clone())]);
    let acked = Heard::PubAcked {
        publish: sent,
        seq: 5,
    };
    assert_eq!(heard[3], [acked]);
    assert_eq!(
        heard[4],
        [],
        "an answer is told once: the publish is forgotten"
    );
}

#[test]
fn an_hpub_keeps_its_headers_and_a_duplicate_pub_ack_is_told() {
    let headers = [("Nats-Msg-Id", "order-1"), ("Trace", "a b")];
    let duplicate = r#"{"stream":"ORDERS", "seq":9, "duplicate":true}"#;
    let heard = hear(&[
        (
            Process,
            publish_with("orders.created", "_INBOX.b.2", &headers, "{\"id\":1}"),
        ),
        (Server, message("_INBOX.b.2", None, duplicate)),
    ]);
    let sent = msg("orders.created", &headers, "{\"id\":1}");
    assert_eq!(heard[0], [Heard::Published(sent.clone())]);
    assert_eq!(
        heard[1],
        [Heard::PubAcked {
            publish: sent,
            seq: 9
        }]
    );
}

#[test]
fn an_error_answer_tells_nothing_and_forgets_the_publish() {
    let error = r#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"ORDERS","seq":0}"#;
    let heard = hear(&[
        (Process, publish("orders.created", Some("_INBOX.c.3"), "x")),
        (Server, message("_INBOX.c.3", None, error)),
        (Server, message("_INBOX.c.3", None, PUB_ACK)),
        (Process, publish("orders.created", Some("_INBOX.c.4"), "y")),
        (
            Server,
            b"HMSG _INBOX.c.4 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n".to_vec(),
        ),
    ]);
    assert!(matches!(heard[0][..], [Heard::Published(_)]));
    assert_eq!(heard[1..3], [vec![], vec![]]);
    assert!(matches!(heard[3][..], [Heard::Published(_)]));
    assert_eq!(
        heard[4],
        [],
        "a status-only answer (no responders) is no PubAck"
    );
}

#[test]
fn publishes_without_a_reply_or_to_internal_subjects_tell_nothing() {
    let heard = hear(&[
        (Process, publish("orders.created", None, "core")),
        (
            Process,
            publish("$JS.API.STREAM.INFO.ORDERS", Some("_INBOX.d.1"), ""),
        ),
        (Process, publish("_INBOX.x", Some("_INBOX.d.2"), "hi")),
        (
            Process,
            publish("$SYS.REQ.SERVER.PING", Some("_INBOX.d.3"), ""),
        ),
        (Server, message("orders.created", None, "core")),
        (Server, message("_INBOX.d.1", None, PUB_ACK)),
    ]);
    assert!(heard.iter().all(|h| h.is_empty()), "{heard:?}");
}

fn delivery(subject_headers: &[(&str, &str)]) -> Delivery {
    Delivery {
        message: msg("orders.created", subject_headers, "hello"),
        stream: "ORDERS".to_string(),
        consumer: "worker".to_string(),
        delivered: 2,
        stream_seq: 7,
    }
}

#[test]
fn a_delivery_is_read_from_a_v1_or_a_v2_ack_subject_and_its_ack_is_told_with_it() {
    for ack in [V1_ACK, V2_ACK] {
        let heard = hear(&[
            (Server, message("orders.created", Some(ack), "hello")),
            (Process, publish(ack, None, "+ACK")),
            (Process, publish(ack, None, "+ACK")),
        ]);
        let delivered = delivery(&[]);
        assert_eq!(heard[0], [Heard::Delivered(delivered.clone())], "{ack}");
        assert_eq!(heard[1], [Heard::Acked(delivered)], "{ack}");
        assert_eq!(heard[2], [], "{ack}: an ACK is told once");
    }
}

#[test]
fn an_hmsg_delivery_keeps_its_headers_and_an_empty_or_optioned_ack_acks() {
    let headers = [("Nats-Msg-Id", "order-1")];
    let other = V1_ACK.replace(".7.", ".8.");
    let heard = hear(&[
        (
            Server,
            message_with("orders.created", V2_ACK, &headers, "hello"),
        ),
        (Server, message("orders.created", Some(&other), "hello")),
        (Process, publish(V2_ACK, None, "")),
        (Process, publish(&other, Some("_INBOX.e.1"), "+ACK {}")),
    ]);
    assert_eq!(heard[0], [Heard::Delivered(delivery(&headers))]);
    assert_eq!(heard[2], [Heard::Acked(delivery(&headers))]);
    let Heard::Acked(second) = &heard[3][0] else {
        panic!("{heard:?}");
    };
    assert_eq!(second.stream_seq, 8);
}

#[test]
fn work_in_progress_keeps_the_delivery_and_a_nak_or_term_forgets_it() {
    let heard = hear(&[
        (Server, message("orders.created", Some(V1_ACK), "hello")),
        (Process, publish(V1_ACK, None, "+WPI")),
        (Process, publish(V1_ACK, None, "+ACK")),
        (Server, message("orders.created", Some(V2_ACK), "hello")),
        (
            Process,
            publish(V2_ACK, None, "-NAK {\"delay\":1000000000}"),
        ),
        (Process, publish(V2_ACK, None, "+ACK")),
        (Server, message("orders.created", Some(V2_ACK), "hello")),
        (Process, publish(V2_ACK, None, "+TERM")),
        (Process, publish(V2_ACK, None, "+ACK")),
    ]);
    assert_eq!(heard[1], [], "+WPI tells nothing");
    assert_eq!(heard[2], [Heard::Acked(delivery(&[]))], "and keeps it");
    assert_eq!(heard[4..6], [vec![], vec![]], "-NAK forgets it");
    assert_eq!(heard[7..9], [vec![], vec![]], "+TERM forgets it");
}

#[test]
fn a_pub_ack_that_lose_puback_drops_is_not_told_for_the_process_never_hears_it() {
    let ack = message("_INBOX.f.1", None, PUB_ACK);
    let conversation = [
        (Process, publish("orders.created", Some("_INBOX.f.1"), "hi")),
        (Server, [&ack[..], b"PING\r\n"].concat()),
    ];
    for chunk in [1, 3, usize::MAX] {
        let told = feed(Nats::listening(), &conversation, chunk, true);
        let sent = msg("orders.created", &[], "hi");
        assert_eq!(told.heard[0], [Heard::Published(sent.clone())]);
        assert_eq!(told.heard[1], [], "chunks of {chunk}");
        assert_eq!(told.passed[1], b"PING\r\n", "the ack is dropped as before");
        // Without the fault the same answer is told.
        let kept = feed(Nats::listening(), &conversation, chunk, false);
        let acked = Heard::PubAcked {
            publish: sent,
            seq: 5,
        };
        assert_eq!(kept.heard[1], [acked], "chunks of {chunk}");
        assert_eq!(told.lost, 1);
        let unheard = feed(Nats::default(), &conversation, chunk, true);
        assert_eq!(unheard.passed, told.passed, "listening changes no byte");
        assert!(unheard.heard.iter().all(|h| h.is_empty()));
    }
}

#[test]
fn a_message_larger_than_the_largest_heard_is_framed_not_told_and_said_unread_once() {
    let big = "x".repeat(LARGEST_HEARD + 1);
    let conversation = [
        (Process, publish("orders.created", Some("_INBOX.g.1"), &big)),
        (Server, message("orders.created", Some(V1_ACK), &big)),
        (Process, publish(V1_ACK, None, "+ACK")),
        (
            Process,
            publish("orders.created", Some("_INBOX.g.2"), "small"),
        ),
    ];
    let told = feed(Nats::listening(), &conversation, 16 * 1024, false);
    let unread = Heard::Unread {
        way: Ways::Both,
        why: "a message was too big to keep",
    };
    assert_eq!(told.heard[..3], [vec![unread], vec![], vec![]]);
    assert_eq!(
        told.heard[3],
        [Heard::Published(msg("orders.created", &[], "small"))],
        "the framing kept its place"
    );
    let passed: Vec<Vec<u8>> = conversation.iter().map(|(_, b)| b.clone()).collect();
    assert_eq!(told.passed, passed);
}

#[test]
fn an_answer_to_a_publish_it_forgot_says_once_that_answers_pass_untold() {
    let publishes: Vec<u8> = (0..REMEMBERED + 2)
        .flat_map(|n| publish("orders.created", Some(&format!("_INBOX.h.{n}")), "p"))
        .collect();
    let last_ack = message(&format!("_INBOX.h.{}", REMEMBERED + 1), None, PUB_ACK);
    let first_ack = message("_INBOX.h.0", None, PUB_ACK);
    let second_ack = message("_INBOX.h.1", None, PUB_ACK);
    let conversation = [
        (Process, publishes),
        (Server, last_ack),
        (Server, first_ack),
        (Server, second_ack),
    ];
    let told = feed(Nats::listening(), &conversation, 64 * 1024, false);
    assert_eq!(
        told.heard[0].len(),
        REMEMBERED + 2,
        "every publish told, nothing said"
    );
    assert!(matches!(told.heard[1][..], [Heard::PubAcked { .. }]));
    let said = Heard::Unread {
        way: Ways::Replies,
        why: "an answer came to a publish it had forgotten",
    };
    assert_eq!(
        told.heard[2],
        [said],
        "the oldest publish's answer is not told"
    );
    assert_eq!(told.heard[3], [], "said once");
}

#[test]
fn an_ack_after_a_delivery_was_forgotten_says_requests_pass_untold_and_nothing_before() {
    let deliveries: Vec<u8> = (0..=REMEMBERED)
        .flat_map(|n| {
            message(
                "orders.created",
                Some(&format!("$JS.ACK.S.C.1.{n}.{n}.1.0")),
                "d",
            )
        })
        .collect();
    let conversation = [
        (Server, deliveries),
        (Process, publish("$JS.ACK.S.C.1.0.0.1.0", None, "+ACK")),
    ];
    let told = feed(Nats::listening(), &conversation, 64 * 1024, false);
    assert!(told.heard[0]
        .iter()
        .all(|h| matches!(h, Heard::Delivered(_))));
    let said = Heard::Unread {
        way: Ways::Requests,
        why: "an ACK came for a delivery it had forgotten",
    };
    assert_eq!(told.heard[1], [said]);
}
