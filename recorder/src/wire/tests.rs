//! The proxy's own tests: faults on real loopback connections.
use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An echo server on a free port.
async fn echo() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

async fn ask(c: &mut TcpStream, text: &[u8]) -> Option<Vec<u8>> {
    c.write_all(text).await.ok()?;
    let mut buf = vec![0u8; text.len()];
    tokio::time::timeout(Duration::from_millis(300), c.read_exact(&mut buf))
        .await
        .ok()?
        .ok()?;
    Some(buf)
}

#[tokio::test]
async fn bytes_pass_until_a_fault_drops_them_and_the_end_of_the_fault_resets() {
    let proxy = Proxy::start(echo().await, Wire::Tcp).await.unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut c, b"ping").await.as_deref(), Some(&b"ping"[..]));
    proxy
        .apply(WireFault::DropReplies {
            hold: Duration::from_millis(500),
        })
        .unwrap();
    assert_eq!(ask(&mut c, b"lost").await, None, "the reply is dropped");
    assert!(proxy.dropped().reply_bytes >= 4);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut buf = [0u8; 8];
    let after = tokio::time::timeout(Duration::from_secs(1), c.read(&mut buf)).await;
    assert!(
        matches!(after, Ok(Err(_)) | Ok(Ok(0))),
        "reset when the hold is over: {after:?}"
    );
    let mut fresh = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(
        ask(&mut fresh, b"back").await.as_deref(),
        Some(&b"back"[..])
    );
    proxy.apply(WireFault::Cut).unwrap();
    let cut = tokio::time::timeout(Duration::from_secs(1), fresh.read(&mut buf)).await;
    assert!(matches!(cut, Ok(Err(_)) | Ok(Ok(0))), "{cut:?}");
    assert!(proxy.apply(WireFault::LosePuback).is_err());
    let over = proxy.take_over();
    let kinds: Vec<_> = over.iter().map(|o| o.fault.kind()).collect();
    use outbox_trace::FaultKind as K;
    assert_eq!(kinds, [K::DropReplies, K::Cut], "{over:?}");
    assert!(over[0].dropped.reply_bytes >= 4 && over[0].dropped.resets == 1);
    assert_eq!(over[1].dropped.resets, 1, "the fresh connection");
}

#[tokio::test]
async fn a_fault_over_an_idle_connection_drops_nothing_cuts_nothing_and_did_not_act() {
    let proxy = Proxy::start(echo().await, Wire::Tcp).await.unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut c, b"hello").await.as_deref(), Some(&b"hello"[..]));
    assert_eq!(proxy.passed(), (5, 5));
    let hold = Duration::from_millis(200);
    for fault in [
        WireFault::DropReplies { hold },
        WireFault::DropRequests { hold },
        WireFault::Partition { hold },
    ] {
        proxy.apply(fault).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let over = proxy.finish();
    assert_eq!(over.len(), 3, "{over:?}");
    assert!(over.iter().all(|o| !o.acted()), "{over:?}");
    assert_eq!(
        ask(&mut c, b"still").await.as_deref(),
        Some(&b"still"[..]),
        "the idle connection was left as it was"
    );
    // One that drops a byte acted; so does a cut of an open connection.
    proxy.apply(WireFault::DropRequests { hold }).unwrap();
    assert_eq!(ask(&mut c, b"gone").await, None);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fresh = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert!(ask(&mut fresh, b"x").await.is_some());
    proxy.apply(WireFault::Cut).unwrap();
    let acted: Vec<bool> = proxy.finish().iter().map(Over::acted).collect();
    assert_eq!(acted, [true, true]);
    assert_eq!(
        proxy.passed(),
        (11, 11),
        "dropped bytes are not counted as passed"
    );
}

#[tokio::test]
async fn a_partition_refuses_new_connections_and_drops_requests() {
    let proxy = Proxy::start(echo().await, Wire::Tcp).await.unwrap();
    let mut open = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert!(ask(&mut open, b"a").await.is_some());
    proxy
        .apply(WireFault::Partition {
            hold: Duration::from_millis(600),
        })
        .unwrap();
    assert_eq!(ask(&mut open, b"b").await, None);
    let mut refused = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(
        ask(&mut refused, b"c").await,
        None,
        "refused while partitioned"
    );
    tokio::time::sleep(Duration::from_millis(700)).await;
    let mut after = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut after, b"d").await.as_deref(), Some(&b"d"[..]));
    assert!(proxy.dropped().resets >= 2);
}

#[tokio::test]
async fn a_nats_server_line_longer_than_the_proxy_reads_reaches_the_client_whole() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    let mut info = b"INFO {\"server_id\":\"".to_vec();
    info.resize(102_400, b'a');
    info.extend_from_slice(b"\"}\r\nPING\r\n");
    let sent = info.clone();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        s.write_all(&sent).await.unwrap();
        let mut buf = [0u8; 64];
        let _ = s.read(&mut buf).await;
    });
    let proxy = Proxy::start(server, Wire::Nats).await.unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    let mut got = vec![0u8; info.len()];
    let read = tokio::time::timeout(Duration::from_secs(5), c.read_exact(&mut got)).await;
    assert!(matches!(read, Ok(Ok(_))), "{read:?}");
    assert_eq!(got, info);
}

#[tokio::test]
async fn a_connection_past_the_cap_is_refused_and_one_is_taken_again_when_another_closes() {
    let proxy = Proxy::start(echo().await, Wire::Tcp).await.unwrap();
    let mut open = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        let mut c = TcpStream::connect(("127.0.0.1", proxy.port()))
            .await
            .unwrap();
        assert!(ask(&mut c, b"x").await.is_some());
        open.push(c);
    }
    let mut past = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut past, b"y").await, None, "refused past the cap");
    drop(open.pop());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut again = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    assert_eq!(ask(&mut again, b"z").await.as_deref(), Some(&b"z"[..]));
    assert_eq!(proxy.dropped().resets, 0, "no fault's reset");
}

mod listening;
