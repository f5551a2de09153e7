//! The NATS reader's `lose puback`: which answer it drops, and what it leaves alone.
use super::*;

fn feed(nats: &mut Nats, up: bool, text: &[u8], losses: &Losses) -> Vec<u8> {
    let mut out = Vec::new();
    for b in text.chunks(3) {
        if up {
            nats.request(b, &mut out, losses);
        } else {
            nats.reply(b, &mut out, losses);
        }
    }
    out
}

#[test]
fn the_ack_of_the_next_jetstream_publish_is_dropped_whole() {
    let losses = Losses::default();
    let mut nats = Nats::default();
    let info = b"INFO {\"server_id\":\"x\",\"jetstream\":true}\r\nPING\r\n";
    assert_eq!(feed(&mut nats, false, info, &losses), info);
    losses.arm(WireFault::LosePuback);
    // A fetch request and an ACK are not publishes to a stream.
    let fetch = b"PUB $JS.API.CONSUMER.MSG.NEXT.S.C _INBOX.a.1 9\r\n{\"batch\"}\r\n";
    feed(&mut nats, true, fetch, &losses);
    feed(
        &mut nats,
        true,
        b"PUB $JS.ACK.S.C.1.2.3.4.0 0\r\n\r\n",
        &losses,
    );
    let headers = "NATS/1.0\r\nMsg-Id: 1\r\n\r\n";
    let publish = format!(
        "HPUB orders.created _INBOX.a.2 {} {}\r\n{headers}hello\r\n",
        headers.len(),
        headers.len() + 5
    );
    let publish = publish.as_bytes();
    assert_eq!(
        feed(&mut nats, true, publish, &losses),
        publish,
        "the publish passes"
    );
    let other = b"MSG _INBOX.a.1 1 5\r\nfetch\r\n";
    let body = r#"{"stream":"S","seq":7}"#;
    let ack = format!("MSG _INBOX.a.2 1 {}\r\n{body}\r\n", body.len());
    let ack = ack.as_bytes();
    let after = b"PING\r\n";
    let all = [&other[..], ack, after].concat();
    let out = feed(&mut nats, false, &all, &losses);
    assert_eq!(out, [&other[..], after].concat(), "only the ack is dropped");
    let lost = losses.drain();
    assert_eq!(lost.len(), 1);
    assert_eq!((lost[0].bytes, lost[0].messages), (ack.len() as u64, 1));
}

#[test]
fn a_control_line_longer_than_the_longest_passes_whole_and_only_its_direction_turns_opaque() {
    let losses = Losses::default();
    let mut nats = Nats::default();
    let mut info = b"INFO {\"x\":\"".to_vec();
    info.resize(100 * 1024, b'a');
    info.extend_from_slice(b"\"}\r\nPING\r\n");
    let mut out = Vec::new();
    for chunk in info.chunks(16 * 1024) {
        nats.reply(chunk, &mut out, &losses);
    }
    assert_eq!(out.len(), info.len(), "every byte of the long line passes");
    assert_eq!(out, info);
    // A long partial line from the process leaves the server's direction read.
    let mut nats = Nats::default();
    let long = vec![b'x'; LONGEST_LINE + 10];
    assert_eq!(feed(&mut nats, true, &long, &losses), long);
    losses.arm(WireFault::LosePuback);
    let ok = b"MSG _INBOX.q 1 2\r\nok\r\n";
    let mut nats2 = Nats::default();
    feed(
        &mut nats2,
        true,
        b"PUB orders _INBOX.q 2\r\nhi\r\n",
        &losses,
    );
    let mut long_up = vec![b'y'; LONGEST_LINE + 10];
    long_up.insert(0, b'P');
    feed(&mut nats2, true, &long_up, &losses);
    assert!(
        feed(&mut nats2, false, ok, &losses).is_empty(),
        "the ack is still found and dropped"
    );
}

#[test]
fn a_publish_before_the_fault_is_armed_keeps_its_ack() {
    let losses = Losses::default();
    let mut nats = Nats::default();
    feed(
        &mut nats,
        true,
        b"PUB orders _INBOX.z.9 2\r\nhi\r\n",
        &losses,
    );
    losses.arm(WireFault::LosePuback);
    let ack = b"MSG _INBOX.z.9 3 2\r\nok\r\n";
    assert_eq!(feed(&mut nats, false, ack, &losses), ack);
    assert!(losses.drain().is_empty());
}
