//! The bytes in flight across all requests, bounded: a semaphore whose permits are bytes. Each
//! request takes a [`Lease`] and grows it as its body arrives (and as a gzip body inflates); the
//! lease is given back when the request is answered. A request that would take the total past
//! the bound is not made to wait: it is refused at once (HTTP 503 with `Retry-After`, gRPC
//! `UNAVAILABLE`), which every OTLP exporter retries later.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body as HttpBody;
use http_body_util::BodyExt as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bytes held at once across all requests of both transports: bodies as they arrive (a
/// declared `Content-Length` is taken whole before the body is read) and gzip bodies as they
/// inflate, each request's until it is answered. A request that would pass it is refused at once
/// (HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`), which every OTLP exporter retries.
pub const MAX_IN_FLIGHT: usize = 256 * 1024 * 1024;
/// How long a request's body may take to arrive whole, from its head (past it: HTTP 408, gRPC
/// `DEADLINE_EXCEEDED`, and the bytes it held are given back).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The `Retry-After` of a 503 for a full receiver, in seconds.
pub const RETRY_AFTER_SECONDS: u16 = 1;

/// The per-request limits both transports apply.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// The largest body, compressed or inflated.
    pub(super) max_body: usize,
    /// How long a body may take to arrive whole.
    pub(super) body_timeout: Duration,
}

/// The shared bound.
#[derive(Debug, Clone)]
pub(super) struct Budget {
    bytes: Arc<Semaphore>,
}

/// The bound is reached: the request is to be retried later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Full;

impl Budget {
    /// A bound of `max` bytes in flight.
    pub(super) fn new(max: usize) -> Self {
        Budget {
            bytes: Arc::new(Semaphore::new(max)),
        }
    }

    /// An empty lease, grown as bytes arrive.
    pub(super) fn lease(&self) -> Lease {
        Lease {
            bytes: self.bytes.clone(),
            held: None,
        }
    }
}

/// The bytes one request holds, given back when it is dropped.
#[derive(Debug)]
pub(super) struct Lease {
    bytes: Arc<Semaphore>,
    held: Option<OwnedSemaphorePermit>,
}

impl Lease {
    /// Takes `n` more bytes, or [`Full`] when the bound would be passed.
    pub(super) fn grow(&mut self, n: usize) -> Result<(), Full> {
        if n == 0 {
            return Ok(());
        }
        let n = u32::try_from(n).map_err(|_| Full)?;
        let more = self
            .bytes
            .clone()
            .try_acquire_many_owned(n)
            .map_err(|_| Full)?;
        match &mut self.held {
            Some(held) => held.merge(more),
            None => self.held = Some(more),
        }
        Ok(())
    }

    /// The bytes held.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.as_ref().map_or(0, |h| h.num_permits())
    }
}

/// Why a body was not read whole.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The bytes in flight would pass the bound: retry later.
    Full,
    /// Over the per-request cap.
    TooLarge,
    /// Not all there within the time allowed.
    Stalled,
    /// The connection failed or the framing was wrong.
    Broken(String),
}

impl From<Full> for ReadError {
    fn from(_: Full) -> Self {
        ReadError::Full
    }
}

/// A buffer whose every byte of capacity is held in a lease.
pub(super) struct Buffer<'a> {
    bytes: Vec<u8>,
    lease: &'a mut Lease,
    leased: usize,
    max: usize,
}

impl<'a> Buffer<'a> {
    /// An empty buffer of at most `max` bytes, counted in `lease`; `expected` bytes are taken at
    /// once (the declared length: refused before any byte is read when it does not fit).
    pub(super) fn new(
        lease: &'a mut Lease,
        max: usize,
        expected: usize,
    ) -> Result<Self, ReadError> {
        if expected > max {
            return Err(ReadError::TooLarge);
        }
        lease.grow(expected)?;
        Ok(Buffer {
            bytes: Vec::with_capacity(expected),
            lease,
            leased: expected,
            max,
        })
    }

    /// Appends `more`, taking the capacity it needs from the lease first.
    pub(super) fn push(&mut self, more: &[u8]) -> Result<(), ReadError> {
        let needed = self.bytes.len() + more.len();
        if needed > self.max {
            return Err(ReadError::TooLarge);
        }
        if needed > self.leased {
            let target = needed.max(self.leased * 2).min(self.max);
            self.lease.grow(target - self.leased)?;
            self.bytes.reserve_exact(target - self.bytes.len());
            self.leased = target;
        }
        self.bytes.extend_from_slice(more);
        Ok(())
    }

    /// The bytes (their capacity stays counted until the lease is dropped).
    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads a whole request body of at most `max` bytes (`declared`, its `Content-Length`, taken
/// at once) into memory counted in `lease`, within `timeout` of the call.
pub(super) async fn read_body(
    body: HttpBody,
    declared: Option<usize>,
    max: usize,
    timeout: Duration,
    lease: &mut Lease,
) -> Result<Vec<u8>, ReadError> {
    let mut buffer = Buffer::new(lease, max, declared.unwrap_or(0))?;
    let read = async {
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ReadError::Broken(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                buffer.push(&data)?;
            }
        }
        Ok(())
    };
    let read = tokio::time::timeout(timeout, read).await;
    match read {
        Ok(Ok(())) => Ok(buffer.into_bytes()),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(ReadError::Stalled),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_share_the_bound_and_give_it_back_when_dropped() {
        let budget = Budget::new(100);
        let mut a = budget.lease();
        let mut b = budget.lease();
        assert_eq!(a.grow(60), Ok(()));
        assert_eq!(b.grow(50), Err(Full));
        assert_eq!(b.grow(40), Ok(()));
        assert_eq!(a.grow(1), Err(Full));
        assert_eq!((a.held(), b.held()), (60, 40));
        drop(a);
        assert_eq!(b.grow(60), Ok(()));
        assert_eq!(b.held(), 100);
    }
}
