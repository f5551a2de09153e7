//! The raw limits a pipeline run is measured against, on the very services it uses: etcd guarded
//! transactions per second and JetStream ACKed publishes per second, each with many in flight.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::{self, stream};
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use futures::StreamExt as _;

/// Guarded transactions (`version(key) == 0` then `put key`, one new key each) per second.
pub async fn etcd_txn_rate(url: &str, count: usize, inflight: usize) -> anyhow::Result<f64> {
    let client = etcd_client::Client::connect([url], None)
        .await
        .with_context(|| format!("connecting to etcd at {url}"))?;
    let kv = client.kv_client();
    let run = format!("/outbox-bench/{}/", std::process::id());
    let started = Instant::now();
    let mut done = futures::stream::iter(0..count)
        .map(|i| {
            let mut kv = kv.clone();
            let key = format!("{run}{i}");
            async move {
                let txn = Txn::new()
                    .when([Compare::version(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key, "x", None)]);
                kv.txn(txn).await
            }
        })
        .buffer_unordered(inflight);
    while let Some(result) = done.next().await {
        anyhow::ensure!(
            result?.succeeded(),
            "a guarded transaction on a new key failed"
        );
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

/// ACKed publishes of 200-byte messages to a file-store stream with `replicas` copies, per second.
pub async fn jetstream_publish_rate(
    url: &str,
    count: usize,
    inflight: usize,
    replicas: usize,
) -> anyhow::Result<f64> {
    let client = async_nats::connect(url)
        .await
        .with_context(|| format!("connecting to NATS at {url}"))?;
    let js = jetstream::new(client);
    let name = format!("OUTBOX_BENCH_{}", std::process::id());
    let subject = format!("outbox-bench.{}", std::process::id());
    js.create_stream(stream::Config {
        name: name.clone(),
        subjects: vec![subject.clone()],
        storage: stream::StorageType::File,
        num_replicas: replicas,
        ..Default::default()
    })
    .await
    .context("creating the benchmark stream")?;
    let payload = bytes::Bytes::from(vec![b'x'; 200]);
    let started = Instant::now();
    let mut done = futures::stream::iter(0..count)
        .map(|_| {
            let (js, subject, payload) = (js.clone(), subject.clone(), payload.clone());
            async move {
                let ack = js.publish(subject, payload).await?;
                tokio::time::timeout(
                    Duration::from_secs(10),
                    std::future::IntoFuture::into_future(ack),
                )
                .await
                .map_err(|_| anyhow::anyhow!("no publish ACK within 10 s"))?
                .map_err(anyhow::Error::from)
            }
        })
        .buffer_unordered(inflight);
    while let Some(result) = done.next().await {
        result?;
    }
    let rate = count as f64 / started.elapsed().as_secs_f64();
    let _ = js.delete_stream(&name).await;
    Ok(rate)
}
