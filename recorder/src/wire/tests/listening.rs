//! A listening proxy in front of a real `nats-server -js`: a JetStream client's publish, its
//! PubAck, the delivery of a pull consumer and its ACK are told to the listener in order, and
//! the connection waits for its word.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::super::heard::{Delivery, Heard, Message};
use super::super::{Listener, Proxy, Told};
use crate::fault::protocols::Wire;

/// A `nats-server -js` on a free port with its store under `dir`; killed when dropped.
fn nats_server(dir: &std::path::Path) -> (Child, u16) {
    let port = crate::process::port::free_port().unwrap();
    let child = Command::new("nats-server")
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("nats-server is installed");
    (child, port)
}

/// A JetStream context through `port`, with the stream `ORDERS` (`orders.>`) created once the
/// server takes JetStream requests.
async fn orders_at(port: u16) -> (jetstream::Context, stream::Stream) {
    for _ in 0..100 {
        if let Ok(client) = async_nats::connect(format!("127.0.0.1:{port}")).await {
            let js = jetstream::new(client);
            let orders = js
                .create_stream(stream::Config {
                    name: "ORDERS".to_string(),
                    subjects: vec!["orders.>".to_string()],
                    ..Default::default()
                })
                .await;
            if let Ok(orders) = orders {
                return (js, orders);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nats-server did not take JetStream requests on {port}");
}

/// A listener that keeps what it is told and lets each connection go on.
fn keeping() -> (Listener, Arc<Mutex<Vec<Heard>>>) {
    let (to, mut told) = mpsc::channel::<Told>(16);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keep = kept.clone();
    tokio::spawn(async move {
        while let Some(told) = told.recv().await {
            assert_eq!(
                (told.actor.as_str(), told.service.as_str()),
                ("relay", "nats")
            );
            keep.lock().unwrap().extend(told.heard);
            let _ = told.go.send(());
        }
    });
    let listener = Listener {
        to,
        actor: "relay".to_string(),
        service: "nats".to_string(),
        missed: Default::default(),
        wants: std::sync::Arc::new(|_: &Heard| true),
    };
    (listener, kept)
}

#[tokio::test]
async fn a_jetstream_publish_its_pub_ack_a_delivery_and_its_ack_are_told_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port) = nats_server(dir.path());
    let (listener, kept) = keeping();
    let upstream = ([127, 0, 0, 1], port).into();
    let proxy = Proxy::start_listening(upstream, Wire::Nats, Some(listener))
        .await
        .unwrap();
    let (js, orders) = orders_at(proxy.port()).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", "order-1");
    let ack = js
        .publish_with_headers("orders.created", headers, "hello".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let worker = orders
        .create_consumer(consumer::pull::Config {
            durable_name: Some("worker".to_string()),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = worker.fetch().max_messages(1).messages().await.unwrap();
    let delivered = batch.next().await.unwrap().unwrap();
    delivered.ack().await.unwrap();
    js.client().flush().await.unwrap();

    let sent = Message {
        subject: "orders.created".to_string(),
        headers: vec![("Nats-Msg-Id".to_string(), "order-1".to_string())],
        payload: b"hello".to_vec(),
    };
    let delivery = Delivery {
        message: sent.clone(),
        stream: "ORDERS".to_string(),
        consumer: "worker".to_string(),
        delivered: 1,
        stream_seq: ack.sequence,
    };
    let expected = [
        Heard::Published(sent.clone()),
        Heard::PubAcked {
            publish: sent,
            seq: ack.sequence,
        },
        Heard::Delivered(delivery.clone()),
        Heard::Acked(delivery),
    ];
    for _ in 0..50 {
        if kept.lock().unwrap().len() >= expected.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ack.sequence, 1);
    assert_eq!(*kept.lock().unwrap(), expected);
    drop(proxy);
    let _ = server.kill().await;
}
