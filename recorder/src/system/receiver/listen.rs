//! The receiver's listener: at most [`MAX_CONNECTIONS`] connections open at once (the next is
//! accepted when one closes; it waits in the kernel's queue meanwhile), and a connection whose
//! first request head (an HTTP/1 request line and headers, or the HTTP/2 preface) is not all
//! there within [`HEAD_TIMEOUT`] is closed. An accept that fails for want of descriptors waits
//! a moment and tries again.

use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// The most connections one server of the receiver keeps open.
pub const MAX_CONNECTIONS: usize = 512;

/// How long a connection may take to send its first request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an accept that failed (no descriptor left) waits before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// A loopback listener with a cap on connections and a deadline on the first request head.
pub(super) struct Bounded {
    listener: TcpListener,
    open: Arc<Semaphore>,
}

impl Bounded {
    pub(super) fn new(listener: TcpListener) -> Bounded {
        Bounded {
            listener,
            open: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        }
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        let permit = self
            .open
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.listener.accept().await {
                Ok((io, addr)) => {
                    let deadline = Box::pin(tokio::time::sleep(HEAD_TIMEOUT));
                    let guarded = Guarded {
                        io,
                        deadline: Some(deadline),
                        matched: 0,
                        _permit: permit,
                    };
                    return (guarded, addr);
                }
                Err(e) if connection_error(&e) => {}
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

fn connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// One connection: its place under the cap, and its first head's deadline until the head is in.
pub struct Guarded {
    io: TcpStream,
    /// Until the first `\r\n\r\n` is read.
    deadline: Option<Pin<Box<Sleep>>>,
    /// How many bytes of `\r\n\r\n` the bytes read so far end with.
    matched: usize,
    _permit: OwnedSemaphorePermit,
}

impl Guarded {
    /// Follows the bytes read for the end of the first head.
    fn saw(&mut self, bytes: &[u8]) {
        const END: &[u8] = b"\r\n\r\n";
        for &b in bytes {
            self.matched = if b == END[self.matched] {
                self.matched + 1
            } else if b == END[0] {
                1
            } else {
                0
            };
            if self.matched == END.len() {
                self.deadline = None;
                return;
            }
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.deadline.is_some() {
                    let new = buf.filled()[before..].to_vec();
                    this.saw(&new);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let late = (this.deadline.as_mut()).is_some_and(|d| d.as_mut().poll(cx).is_ready());
                if late {
                    let e = io::Error::new(io::ErrorKind::TimedOut, "no request head in time");
                    return Poll::Ready(Err(e));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
