//! A loopback TCP proxy between one process and one service, which the recorder runs for every
//! role instance and every service of a system: the process reaches the service only through it
//! (its `${services.NAME.port}` is the proxy's), so a fault can lose bytes on the wire at the exact
//! moment a step is reported: the request arrived and its answer was lost, or the request never
//! arrived, or the connection was cut. Bytes are relayed as they come, one task per connection;
//! for a service that names its protocol ([`protocol::Wire`]) a reader follows its messages
//! ([`postgres`], [`nats`]) so that a fault can lose one reply: a commit's, a publish's ACK.
//!
//! What it cannot see: TLS (the bytes are relayed, but nothing inside them can be told apart) and
//! Unix sockets (a process that reaches its service by a socket file passes no proxy).

pub mod heard;
pub mod kafka;
mod listen;
pub mod nats;
pub mod postgres;
pub mod protocol;
mod relay;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use self::listen::{Listener, Told};
use self::protocol::{Losses, Reader};
use self::relay::{refuse, relay, Proxied, Way};
use crate::fault::protocols::Wire;
use crate::fault::spec::WireFault;

/// How long the proxy waits for the service to take a connection.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);

/// The most connections one proxy relays at once (each holds two descriptors); one past it is
/// refused with a reset.
pub const MAX_CONNECTIONS: usize = 256;

/// How long the proxy waits after an accept that failed (no descriptor left) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A wire fault this proxy cannot carry out.
#[derive(Debug, thiserror::Error)]
#[error("{fault} needs a service with wire = {needs} (this one speaks {speaks})")]
pub struct NotOnThisWire {
    /// The fault, as written.
    pub fault: &'static str,
    /// The wires it needs, in words (`"postgres" or "kafka"`).
    pub needs: String,
    /// The service's wire.
    pub speaks: &'static str,
}

/// What the proxy dropped and reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes from the service to the process discarded.
    pub reply_bytes: u64,
    /// Bytes from the process to the service discarded.
    pub request_bytes: u64,
    /// Whole protocol messages discarded (a commit's reply, a publish's ACK).
    pub messages: u64,
    /// Connections reset or refused.
    pub resets: u64,
}

impl std::ops::Sub for Dropped {
    type Output = Dropped;

    fn sub(self, earlier: Dropped) -> Dropped {
        Dropped {
            reply_bytes: self.reply_bytes - earlier.reply_bytes,
            request_bytes: self.request_bytes - earlier.request_bytes,
            messages: self.messages - earlier.messages,
            resets: self.resets - earlier.resets,
        }
    }
}

/// A wire fault that is over, or that acted: what its `fault` row says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Over {
    /// The fault.
    pub fault: WireFault,
    /// When it began (for `lose`, when the message it waited for crossed the proxy).
    pub began: Instant,
    /// How long it lasted, for a fault that lasts (shorter than asked when the scenario ended
    /// first).
    pub lasted: Option<Duration>,
    /// What it dropped and reset.
    pub dropped: Dropped,
}

impl Over {
    /// Whether it lost one reply (a lose fault of a protocol the proxy reads).
    pub fn loses(&self) -> bool {
        self.fault.loses_a_reply()
    }

    /// Whether it acted on traffic: bytes or messages dropped, connections reset or refused. A
    /// fault over an idle or unused connection did not.
    pub fn acted(&self) -> bool {
        let d = self.dropped;
        d.reply_bytes + d.request_bytes + d.messages + d.resets > 0
    }

    /// Its `fault` row, for the process `actor` and its `service`.
    pub fn row(&self, actor: &str, service: &str) -> outbox_trace::detail::Fault {
        let d = self.dropped;
        outbox_trace::detail::Fault {
            fault: self.fault.kind(),
            target: Some(actor.to_string()),
            service: Some(service.to_string()),
            duration_ms: self.lasted.map(|l| l.as_millis() as u64),
            dropped_bytes: Some(d.reply_bytes + d.request_bytes),
            dropped_messages: self.loses().then_some(d.messages),
            resets: Some(d.resets),
            ..outbox_trace::detail::Fault::default()
        }
    }
}

/// Until when each direction is dropped, and new connections refused.
#[derive(Debug, Default)]
struct Faults {
    replies: Option<Instant>,
    requests: Option<Instant>,
    refuse: Option<Instant>,
}

/// A fault that lasts, under way.
struct Active {
    id: u64,
    fault: WireFault,
    began: Instant,
    /// The counts when it began.
    from: Dropped,
}

struct Shared {
    /// The proxy's own port.
    port: u16,
    upstream: SocketAddr,
    wire: Wire,
    faults: Mutex<Faults>,
    reply_bytes: AtomicU64,
    request_bytes: AtomicU64,
    resets: AtomicU64,
    /// Bytes relayed (not dropped) each way.
    passed: [AtomicU64; 2],
    losses: Losses,
    active: Mutex<Vec<Active>>,
    /// The id of the next lasting fault.
    next: AtomicU64,
    over: Mutex<Vec<Over>>,
    /// Bumped to reset every connection open at that moment.
    reset: watch::Sender<u64>,
    /// Where what the readers hear goes, when the proxy listens.
    listener: Option<Listener>,
}

impl Shared {
    fn until(&self, pick: fn(&Faults) -> Option<Instant>) -> bool {
        let faults = self.faults.lock().expect("proxy faults");
        pick(&faults).is_some_and(|until| Instant::now() < until)
    }

    /// Resets every open connection.
    fn reset_all(&self) {
        let open = self.reset.receiver_count() as u64;
        self.resets.fetch_add(open, Ordering::Relaxed);
        self.reset.send_modify(|g| *g += 1);
    }

    fn dropped(&self) -> Dropped {
        Dropped {
            reply_bytes: self.reply_bytes.load(Ordering::Relaxed),
            request_bytes: self.request_bytes.load(Ordering::Relaxed),
            messages: 0,
            resets: self.resets.load(Ordering::Relaxed),
        }
    }

    /// Ends the lasting fault `id` (if not ended yet). A fault that dropped bytes broke its
    /// connections' streams, which are reset; one that dropped none leaves them as they are (an
    /// idle connection a partition passed over is not cut when it heals).
    fn end(&self, id: u64) {
        let mut active = self.active.lock().expect("proxy active");
        let Some(at) = active.iter().position(|a| a.id == id) else {
            return;
        };
        let done = active.remove(at);
        drop(active);
        let so_far = self.dropped() - done.from;
        if so_far.reply_bytes + so_far.request_bytes > 0 {
            self.reset_all();
        }
        let over = Over {
            fault: done.fault,
            began: done.began,
            lasted: Some(done.began.elapsed()),
            dropped: self.dropped() - done.from,
        };
        self.over.lock().expect("proxy over").push(over);
    }

    /// A reader for a new connection, by the service's wire.
    fn reader(&self) -> Option<Box<dyn Reader>> {
        match self.wire {
            Wire::Postgres if self.listener.is_some() => {
                Some(Box::new(postgres::Postgres::listening()))
            }
            Wire::Nats if self.listener.is_some() => Some(Box::new(nats::Nats::listening())),
            Wire::Postgres => Some(Box::<postgres::Postgres>::default()),
            Wire::Nats => Some(Box::<nats::Nats>::default()),
            Wire::Kafka => Some(Box::new(kafka::Kafka::new(self.port))),
            Wire::Tcp | Wire::Redis => None,
        }
    }
}

impl Proxied for Shared {
    fn dropping(&self, way: Way) -> bool {
        match way {
            Way::Request => self.until(|f| f.requests),
            Way::Reply => self.until(|f| f.replies),
        }
    }

    fn count(&self, way: Way, n: u64, dropped: bool) {
        let counter = match (way, dropped) {
            (Way::Request, true) => &self.request_bytes,
            (Way::Reply, true) => &self.reply_bytes,
            (Way::Request, false) => &self.passed[0],
            (Way::Reply, false) => &self.passed[1],
        };
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn losses(&self) -> &Losses {
        &self.losses
    }

    fn listener(&self) -> Option<&Listener> {
        self.listener.as_ref()
    }
}

/// One proxy: listening on a loopback port, relaying to its service.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port for connections to `upstream`, which speaks `wire`.
    pub async fn start(upstream: SocketAddr, wire: Wire) -> std::io::Result<Proxy> {
        Proxy::start_listening(upstream, wire, None).await
    }

    /// As [`Proxy::start`]; with a `listener`, the readers of `wire` also tell it what they hear
    /// (see [`Told`]).
    pub async fn start_listening(
        upstream: SocketAddr,
        wire: Wire,
        listener: Option<Listener>,
    ) -> std::io::Result<Proxy> {
        let socket = TcpListener::bind("127.0.0.1:0").await?;
        let port = socket.local_addr()?.port();
        let shared = Arc::new(Shared {
            port,
            upstream,
            wire,
            faults: Mutex::new(Faults::default()),
            reply_bytes: AtomicU64::new(0),
            request_bytes: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            passed: [AtomicU64::new(0), AtomicU64::new(0)],
            losses: Losses::default(),
            active: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            over: Mutex::new(Vec::new()),
            reset: watch::channel(0).0,
            listener,
        });
        let accept = tokio::spawn(accept(socket, shared.clone()));
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

    /// Switches `fault` on now. A fault that lasts resets the connections when it is over (if it
    /// dropped bytes); a `lose` waits for the next message it loses. Each is reported by
    /// [`Proxy::take_over`] when it is over or has acted.
    pub fn apply(&self, fault: WireFault) -> Result<(), NotOnThisWire> {
        let now = Instant::now();
        if fault.loses_a_reply() {
            if self.shared.wire.offer(fault).is_none() {
                return Err(NotOnThisWire {
                    fault: fault.verb(),
                    needs: fault.wires_in_words(),
                    speaks: self.shared.wire.as_str(),
                });
            }
            self.shared.losses.arm(fault);
            return Ok(());
        }
        let Some(hold) = fault.hold() else {
            // A cut: the connections reset now.
            let from = self.shared.dropped();
            self.shared.reset_all();
            let dropped = self.shared.dropped() - from;
            self.shared.over.lock().expect("proxy over").push(Over {
                fault,
                began: now,
                lasted: None,
                dropped,
            });
            return Ok(());
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
        let id = self.shared.next.fetch_add(1, Ordering::Relaxed);
        self.shared
            .active
            .lock()
            .expect("proxy active")
            .push(Active {
                id,
                fault,
                began: now,
                from: self.shared.dropped(),
            });
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            shared.end(id);
        });
        Ok(())
    }

    /// The wire faults over or acted since the last call.
    pub fn take_over(&self) -> Vec<Over> {
        let mut over = std::mem::take(&mut *self.shared.over.lock().expect("proxy over"));
        over.extend(self.shared.losses.drain().into_iter().map(|lost| Over {
            fault: lost.what,
            began: lost.began,
            lasted: None,
            dropped: Dropped {
                reply_bytes: lost.bytes,
                request_bytes: 0,
                messages: lost.messages,
                resets: lost.resets,
            },
        }));
        over.sort_by_key(|o| o.began);
        over
    }

    /// Ends every fault that lasts now (the scenario is over), then reports as
    /// [`Proxy::take_over`] does.
    pub fn finish(&self) -> Vec<Over> {
        let ids: Vec<u64> = (self.shared.active.lock().expect("proxy active"))
            .iter()
            .map(|a| a.id)
            .collect();
        for id in ids {
            self.shared.end(id);
        }
        self.take_over()
    }

    /// What it dropped and reset so far.
    pub fn dropped(&self) -> Dropped {
        self.shared.dropped()
    }

    /// The bytes it relayed so far (not those dropped): `(toward the service, toward the
    /// process)`.
    pub fn passed(&self) -> (u64, u64) {
        let [requests, replies] = &self.shared.passed;
        (
            requests.load(Ordering::Relaxed),
            replies.load(Ordering::Relaxed),
        )
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
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionAborted => continue,
            Err(_) => {
                // Out of descriptors (or memory): the connections open now may end meanwhile.
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let _ = client.set_nodelay(true);
        if shared.until(|f| f.refuse) {
            shared.resets.fetch_add(1, Ordering::Relaxed);
            refuse(client);
            continue;
        }
        let Ok(permit) = open.clone().try_acquire_owned() else {
            refuse(client);
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let reset = shared.reset.subscribe();
            let upstream =
                tokio::time::timeout(CONNECT_WITHIN, TcpStream::connect(shared.upstream)).await;
            match upstream {
                Ok(Ok(server)) => {
                    let _ = server.set_nodelay(true);
                    let reader = shared.reader();
                    relay(client, server, &*shared, reset, reader).await;
                }
                _ => refuse(client),
            }
        });
    }
}

#[cfg(test)]
mod tests;
