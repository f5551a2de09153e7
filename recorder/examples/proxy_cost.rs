//! The wire proxy's cost: Redis round trips one at a time and 64 in flight, direct and through
//! the recorder's proxy. `cargo run --release -p outbox-recorder --example proxy_cost` (needs
//! redis-server on the PATH).

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use outbox_recorder::fault::protocols::Wire;
use outbox_recorder::wire::Proxy;
use redis::AsyncCommands as _;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port = outbox_recorder::process::port::free_port()?;
    let mut server = std::process::Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--bind",
            "127.0.0.1",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let proxy = Proxy::start(([127, 0, 0, 1], port).into(), Wire::Redis).await?;
    for (name, p) in [
        ("direct", port),
        ("proxied", proxy.port()),
        ("direct", port),
        ("proxied", proxy.port()),
    ] {
        let client = redis::Client::open(format!("redis://127.0.0.1:{p}/0"))?;
        let mut one = client.get_multiplexed_async_connection().await?;
        let n = 20_000;
        let started = Instant::now();
        for i in 0..n {
            let _: () = one.set(format!("k{i}"), i).await?;
        }
        let serial = started.elapsed();
        let started = Instant::now();
        let total = 200_000;
        let mut sets = futures::stream::iter(0..total)
            .map(|i| {
                let mut c = one.clone();
                async move { c.set::<_, _, ()>(format!("p{i}"), i).await }
            })
            .buffer_unordered(64);
        while let Some(r) = sets.next().await {
            r?;
        }
        let piped = started.elapsed();
        println!(
            "{name:8} one at a time: {:>7.0} SET/s ({:.1} us each); 64 in flight: {:>8.0} SET/s",
            n as f64 / serial.as_secs_f64(),
            serial.as_micros() as f64 / n as f64,
            total as f64 / piped.as_secs_f64()
        );
    }
    server.kill()?;
    Ok(())
}
