//! The receiver's bounds over real loopback connections: concurrent large bodies past the bound
//! on bytes in flight are answered 503 with `Retry-After` while the receiver's memory stays
//! within the bound, and a body that stalls is cut off after the body timeout, giving back the
//! bytes it held.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use outbox_recorder::system::receiver::{
    Answer, Intake, OtlpReceiver, BODY_TIMEOUT, HEAD_TIMEOUT, MAX_CONNECTIONS, MAX_IN_FLIGHT,
    RETRY_AFTER_SECONDS,
};
use tokio::sync::mpsc;

const MIB: usize = 1024 * 1024;
/// The body of each large request: well under the 64 MiB cap, five of them over the bound.
const LARGE: usize = 60 * MIB;
static ZEROS: [u8; MIB] = [0; MIB];

/// A receiver whose run answers every request at once.
fn receiver() -> OtlpReceiver {
    let (tx, mut rx) = mpsc::channel::<Intake>(64);
    let receiver = OtlpReceiver::start(tx).unwrap();
    tokio::spawn(async move {
        while let Some(intake) = rx.recv().await {
            intake.answer(Answer::accepted());
        }
    });
    receiver
}

/// The head of the next reply on `stream`: status and lower-cased header lines.
fn read_head(stream: &mut TcpStream) -> Option<(u16, Vec<String>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let mut lines = text.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    Some((status, lines.map(str::to_string).collect()))
}

fn connect(address: &str, content_length: usize, expect: bool) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(BODY_TIMEOUT * 3)).unwrap();
    let expect = if expect {
        "Expect: 100-continue\r\n"
    } else {
        ""
    };
    write!(
        stream,
        "POST /v1/traces HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-protobuf\r\n\
         Content-Length: {content_length}\r\nConnection: close\r\n{expect}\r\n"
    )
    .unwrap();
    stream
}

/// An `ExportTraceServiceRequest` of `total` bytes: one unknown length-delimited field (99) of
/// zeros, which protobuf skips: a valid, empty export.
fn write_large_body(stream: &mut TcpStream, total: usize) -> std::io::Result<()> {
    let mut prefix = vec![0x9a, 0x06];
    let mut payload = total - 2 - 4;
    for _ in 0..4 {
        prefix.push((payload & 0x7f) as u8 | 0x80);
        payload >>= 7;
    }
    *prefix.last_mut().unwrap() &= 0x7f;
    assert_eq!(payload, 0, "the length fits four varint bytes");
    stream.write_all(&prefix)?;
    let mut left = total - prefix.len();
    while left > 0 {
        let n = left.min(ZEROS.len());
        stream.write_all(&ZEROS[..n])?;
        left -= n;
    }
    Ok(())
}

/// One large export as curl sends it (`Expect: 100-continue`): the status and `Retry-After`.
fn large_export(address: &str) -> (u16, Option<String>) {
    let mut stream = connect(address, LARGE, true);
    let (mut status, mut headers) = read_head(&mut stream).expect("a reply");
    if status == 100 {
        write_large_body(&mut stream, LARGE).expect("the body is taken");
        (status, headers) = read_head(&mut stream).expect("a final reply");
    }
    let retry_after = headers
        .iter()
        .find_map(|h| h.strip_prefix("retry-after:").map(|v| v.trim().to_string()));
    (status, retry_after)
}

/// A line of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_large_bodies_past_the_bound_get_503_and_memory_stays_bounded() {
    let receiver = receiver();
    let address = receiver.http_endpoint()["http://".len()..].to_string();
    // The peak resident size from here on (writing 5 resets it), the receiver being in-process
    // and the clients streaming from one shared buffer.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmRSS:") * 1024;

    let clients = 24;
    let barrier = Arc::new(Barrier::new(clients));
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (address, barrier) = (address.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                large_export(&address)
            })
        })
        .collect();
    let replies: Vec<_> = tokio::task::spawn_blocking(move || {
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    })
    .await
    .unwrap();

    let peak = status_kib("VmHWM:") * 1024;
    let taken = replies.iter().filter(|(s, _)| *s == 200).count();
    let busy: Vec<_> = replies.iter().filter(|(s, _)| *s == 503).collect();
    assert_eq!(taken + busy.len(), clients, "only 200 and 503: {replies:?}");
    assert!(taken >= 1, "some were taken: {replies:?}");
    assert!(
        busy.len() >= clients - 2 * (MAX_IN_FLIGHT / LARGE),
        "past the bound, 503: {replies:?}"
    );
    let retry = RETRY_AFTER_SECONDS.to_string();
    assert!(
        busy.iter()
            .all(|(_, r)| r.as_deref() == Some(retry.as_str())),
        "each 503 says when to retry: {busy:?}"
    );
    // 24 bodies of 60 MiB held at once would be 1.4 GiB; the bound holds it to 256 MiB.
    let grown = peak.saturating_sub(before);
    assert!(
        grown < MAX_IN_FLIGHT + 96 * MIB,
        "the receiver grew by {} MiB",
        grown / MIB
    );

    // The bytes were given back: one more large export is taken.
    let again = tokio::task::spawn_blocking(move || large_export(&address))
        .await
        .unwrap();
    assert_eq!(again.0, 200);
    let stats = receiver.stats();
    assert_eq!(stats.refused as usize, busy.len());
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_is_cut_off_after_the_timeout_and_gives_back_its_bytes() {
    let receiver = receiver();
    let address = receiver.http_endpoint()["http://".len()..].to_string();
    let started = Instant::now();

    // Three large bodies that stop after their first bytes hold most of the bound (declared
    // lengths are taken whole), and fifty small ones stall beside them: 230 MiB in all.
    let mut stalled = Vec::new();
    for i in 0..53 {
        let length = if i < 3 { LARGE } else { MIB };
        let mut stream = connect(&address, length, false);
        stream.write_all(&[0x9a, 0x06, 0x80]).unwrap();
        stalled.push(stream);
    }
    // Every stalled request is taken in (and its declared length held) before the probe, however
    // slowly a loaded machine schedules the receiver.
    let deadline = Instant::now() + Duration::from_secs(20);
    while receiver.stats().requests < 53 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Meanwhile a fifth large body does not fit.
    let probe = address.clone();
    let busy = tokio::task::spawn_blocking(move || large_export(&probe))
        .await
        .unwrap();
    assert_eq!(busy.0, 503, "the stalled bodies hold the bound");

    // Each stalled request is answered 408 and closed, after the timeout and not long after.
    let cut = tokio::task::spawn_blocking(move || {
        stalled
            .into_iter()
            .map(|mut stream| {
                let head = read_head(&mut stream).map(|(status, _)| status);
                let mut rest = Vec::new();
                let closed = stream.read_to_end(&mut rest).is_ok();
                (head, closed)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let elapsed = started.elapsed();
    assert!(
        cut.iter().all(|c| *c == (Some(408), true)),
        "every stalled request is answered 408 and closed: {cut:?}"
    );
    assert!(
        elapsed >= BODY_TIMEOUT - Duration::from_secs(1),
        "cut off before the timeout: {elapsed:?}"
    );
    assert!(
        elapsed < BODY_TIMEOUT + Duration::from_secs(8),
        "cut off long after the timeout: {elapsed:?}"
    );

    // Their bytes are given back: a large export is taken again.
    let again = tokio::task::spawn_blocking(move || large_export(&address))
        .await
        .unwrap();
    assert_eq!(again.0, 200);
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_wait_and_a_head_not_finished_in_time_is_closed() {
    let receiver = receiver();
    let address = receiver
        .http_endpoint()
        .trim_start_matches("http://")
        .to_string();
    let began = Instant::now();
    let stalled: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| {
            let mut s = TcpStream::connect(&address).unwrap();
            s.write_all(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect();
    let whole = tokio::task::spawn_blocking(move || {
        let mut s = connect(&address, 0, false);
        let answered = read_head(&mut s).map(|(status, _)| status);
        (answered, began.elapsed())
    });
    let (answered, after) = whole.await.unwrap();
    assert_eq!(answered, Some(200), "an empty export is taken");
    assert!(
        after >= HEAD_TIMEOUT - Duration::from_millis(500),
        "accepted only when the stalled ones were closed: {after:?}"
    );
    for mut s in stalled {
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut byte = [0u8; 1];
        let read = s.read(&mut byte);
        assert!(matches!(read, Ok(0) | Err(_)), "closed: {read:?}");
        if let Err(e) = &read {
            use std::io::ErrorKind::{TimedOut, WouldBlock};
            assert!(
                !matches!(e.kind(), WouldBlock | TimedOut),
                "still open: {e}"
            );
        }
    }
}
