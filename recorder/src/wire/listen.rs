//! A proxy that listens: what its readers hear goes to a [`Listener`], and the connection
//! waits for the listener's word ([`Told`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::heard::Heard;

/// The longest a listening proxy holds a connection for its listener's word (a listener that
/// stopped reading never stalls a process for longer).
const HOLD_AT_MOST: Duration = Duration::from_secs(10);

/// What a listening proxy tells its listener: whose connection, what was heard on it, when, and
/// the word that lets the connection go on. A reply heard is passed on to the process only once
/// `go` is sent or dropped; a request heard has reached the service already, and the connection
/// reads nothing more until then. So a step read from the wire can be followed by a kill before
/// the process learns its outcome, as a span's held export is.
#[derive(Debug)]
pub struct Told {
    /// The process, as the listener named it.
    pub actor: String,
    /// The service, as the listener named it.
    pub service: String,
    /// What was heard, in order.
    pub heard: Vec<Heard>,
    /// When the bytes that told it crossed the proxy.
    pub at: Instant,
    /// Sent or dropped: the connection goes on.
    pub go: oneshot::Sender<()>,
}

/// Where a listening proxy sends what it hears, and the names it gives.
#[derive(Clone)]
pub struct Listener {
    /// The channel to the listener.
    pub to: mpsc::Sender<Told>,
    /// The process whose connections the proxy carries.
    pub actor: String,
    /// The service it reaches.
    pub service: String,
    /// Counts the facts the listener never took: its channel stayed full for the whole hold.
    pub missed: Arc<AtomicU64>,
    /// Which facts the listener wants told; the others pass without a word.
    pub wants: Wants,
}

/// Which facts a listener wants told.
pub type Wants = Arc<dyn Fn(&Heard) -> bool + Send + Sync>;

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("actor", &self.actor)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Tells `heard` (if anything) and waits for the word to go on, at most [`HOLD_AT_MOST`].
    pub(super) async fn tell(&self, mut heard: Vec<Heard>) {
        heard.retain(|h| (self.wants)(h));
        if heard.is_empty() {
            return;
        }
        let (go, wait) = oneshot::channel();
        let told = Told {
            actor: self.actor.clone(),
            service: self.service.clone(),
            heard,
            at: Instant::now(),
            go,
        };
        // The whole hold, a wait for room in the channel included, lasts at most HOLD_AT_MOST.
        let mut sent = false;
        let _ = tokio::time::timeout(HOLD_AT_MOST, async {
            if self.to.send(told).await.is_ok() {
                sent = true;
                let _ = wait.await;
            }
        })
        .await;
        if !sent {
            self.missed.fetch_add(1, Ordering::Relaxed);
        }
    }
}
