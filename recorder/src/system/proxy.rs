//! A loopback TCP proxy between one process and one service, which the recorder runs for every
//! role instance and every service of a system: the process reaches the service only through it
//! (its `${services.NAME.port}` is the proxy's), so a fault can lose bytes on the wire at the exact
//! moment a step is reported: the request arrived and its answer was lost, or the request never
//! arrived, or the connection was cut. Bytes are relayed as they come, one task per connection.
//!
//! What it cannot see: TLS (the bytes are relayed, but nothing inside them can be told apart) and
//! Unix sockets (a process that reaches its service by a socket file passes no proxy).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::fault::spec::WireFault;

/// How long the proxy waits for the service to take a connection.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// A wire fault this proxy cannot carry out.
#[derive(Debug, thiserror::Error)]
#[error("{0}: the proxy does not read this service's protocol")]
pub struct NotOnThisWire(pub &'static str);

/// What the proxy dropped and reset so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes from the service to the process discarded.
    pub reply_bytes: u64,
    /// Bytes from the process to the service discarded.
    pub request_bytes: u64,
    /// Connections reset or refused.
    pub resets: u64,
}

/// Until when each direction is dropped, and new connections refused.
#[derive(Debug, Default)]
struct Faults {
    replies: Option<Instant>,
    requests: Option<Instant>,
    refuse: Option<Instant>,
}

struct Shared {
    upstream: SocketAddr,
    faults: Mutex<Faults>,
    reply_bytes: AtomicU64,
    request_bytes: AtomicU64,
    resets: AtomicU64,
    /// Bumped to reset every connection open at that moment.
    reset: watch::Sender<u64>,
}

impl Shared {
    fn until(&self, pick: fn(&Faults) -> Option<Instant>) -> bool {
        let faults = self.faults.lock().expect("proxy faults");
        pick(&faults).is_some_and(|until| Instant::now() < until)
    }

    fn reset_all(&self) {
        self.reset.send_modify(|g| *g += 1);
    }
}

/// One proxy: listening on a loopback port, relaying to its service.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port for connections to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            upstream,
            faults: Mutex::new(Faults::default()),
            reply_bytes: AtomicU64::new(0),
            request_bytes: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            reset: watch::channel(0).0,
        });
        let accept = tokio::spawn(accept(listener, shared.clone()));
        Ok(Proxy {
            port,
            shared,
            accept,
        })
    }

    /// The port the process reaches its service on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Switches `fault` on now; a fault that lasts resets the connections when it is over.
    pub fn apply(&self, fault: WireFault) -> Result<(), NotOnThisWire> {
        let now = Instant::now();
        let hold = match fault {
            WireFault::Cut => {
                self.shared.reset_all();
                return Ok(());
            }
            WireFault::LoseCommitReply => return Err(NotOnThisWire("lose commit-reply")),
            WireFault::LosePuback => return Err(NotOnThisWire("lose puback")),
            WireFault::DropReplies { hold }
            | WireFault::DropRequests { hold }
            | WireFault::Partition { hold } => hold,
        };
        {
            let mut faults = self.shared.faults.lock().expect("proxy faults");
            let until = Some(now + hold);
            match fault {
                WireFault::DropReplies { .. } => faults.replies = until,
                WireFault::DropRequests { .. } => faults.requests = until,
                _ => {
                    // A partition: both ways black-holed, new connections refused.
                    faults.replies = until;
                    faults.requests = until;
                    faults.refuse = until;
                }
            }
        }
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            shared.reset_all();
        });
        Ok(())
    }

    /// What it dropped and reset so far.
    pub fn dropped(&self) -> Dropped {
        Dropped {
            reply_bytes: self.shared.reply_bytes.load(Ordering::Relaxed),
            request_bytes: self.shared.request_bytes.load(Ordering::Relaxed),
            resets: self.shared.resets.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Proxy {
    /// Stops listening and closes every connection.
    fn drop(&mut self) {
        self.accept.abort();
        self.shared.reset_all();
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        if shared.until(|f| f.refuse) {
            refuse(client, &shared);
            continue;
        }
        let shared = shared.clone();
        tokio::spawn(async move {
            let reset = shared.reset.subscribe();
            let upstream =
                tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(shared.upstream)).await;
            match upstream {
                Ok(Ok(server)) => {
                    let _ = server.set_nodelay(true);
                    relay(client, server, &shared, reset).await;
                }
                _ => refuse(client, &shared),
            }
        });
    }
}

/// Closes `stream` with a reset (RST) rather than an orderly end.
fn refuse(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_zero_linger();
    shared.resets.fetch_add(1, Ordering::Relaxed);
}

/// Relays one connection both ways until both ends are done or a reset comes.
async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    shared: &Shared,
    mut reset: watch::Receiver<u64>,
) {
    let mut up = vec![0u8; 16 * 1024];
    let mut down = vec![0u8; 16 * 1024];
    let (mut client_open, mut server_open) = (true, true);
    while client_open || server_open {
        tokio::select! {
            read = client.read(&mut up), if client_open => match read {
                Ok(0) | Err(_) => {
                    client_open = false;
                    let _ = server.shutdown().await;
                }
                Ok(n) if shared.until(|f| f.requests) => {
                    shared.request_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Ok(n) => {
                    if server.write_all(&up[..n]).await.is_err() {
                        break;
                    }
                }
            },
            read = server.read(&mut down), if server_open => match read {
                Ok(0) | Err(_) => {
                    server_open = false;
                    let _ = client.shutdown().await;
                }
                Ok(n) if shared.until(|f| f.replies) => {
                    shared.reply_bytes.fetch_add(n as u64, Ordering::Relaxed);
                }
                Ok(n) => {
                    if client.write_all(&down[..n]).await.is_err() {
                        break;
                    }
                }
            },
            changed = reset.changed() => {
                if changed.is_ok() {
                    refuse(server, shared);
                    refuse(client, shared);
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let proxy = Proxy::start(echo().await).await.unwrap();
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
    }

    #[tokio::test]
    async fn a_partition_refuses_new_connections_and_drops_requests() {
        let proxy = Proxy::start(echo().await).await.unwrap();
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
}
