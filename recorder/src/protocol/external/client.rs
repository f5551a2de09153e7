//! The worker's client for the payments receiver, on hyper's HTTP/1 client. [`send`] returns once
//! the whole request has been flushed to the socket and [`receive`] reads the answer, so a crash
//! between the two is a crash after the request left and before its answer was read.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::Context as _;
use axum::http::header;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::spec::{Answer, Payment};

/// A request on its way: its answer, once read.
pub struct Sent {
    answer: tokio::task::JoinHandle<anyhow::Result<Answer>>,
}

/// Sends a payment request through hyper's HTTP/1 client and returns once the whole request has
/// been flushed to the socket; [`receive`] reads the answer.
pub async fn send(addr: &str, payment: &Payment, key: Option<&str>) -> anyhow::Result<Sent> {
    let stream = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to the receiver at {addr}"))?;
    let (flushed, on_flush) = tokio::sync::oneshot::channel();
    let handed = Arc::new(AtomicBool::new(false));
    let io = hyper_util::rt::TokioIo::new(Flushed {
        io: stream,
        body_handed: handed.clone(),
        flushed: Some(flushed),
    });
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .context("HTTP handshake with the receiver")?;
    let mut request = hyper::Request::post("/payments")
        .header(header::HOST, addr)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let body = Full::new(Bytes::from(serde_json::to_vec(payment)?));
    let request = request.body(Handed { body, handed })?;
    let answer = tokio::spawn(async move {
        let connection = tokio::spawn(connection);
        let response = sender
            .send_request(request)
            .await
            .context("the receiver's answer")?;
        let status = response.status().as_u16();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        let body = response.into_body().collect().await?.to_bytes();
        connection.abort();
        Ok(Answer {
            status,
            replayed,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    });
    if on_flush.await.is_err() {
        // The connection ended before the request went out: the answer says why.
        answer.await.context("the HTTP client task")??;
        anyhow::bail!("the request to {addr} was never sent");
    }
    Ok(Sent { answer })
}

/// Reads the answer to a request sent with [`send`].
pub async fn receive(sent: Sent) -> anyhow::Result<Answer> {
    sent.answer.await.context("the HTTP client task")?
}

/// A request body that notes when hyper has taken its (only) frame to write.
struct Handed {
    body: Full<Bytes>,
    handed: Arc<AtomicBool>,
}

impl hyper::body::Body for Handed {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(Some(_))) && self.body.is_end_stream() {
            self.handed.store(true, Ordering::Release);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A socket that says once the request's body has been handed to it and flushed: the whole
/// request has left.
struct Flushed {
    io: TcpStream,
    body_handed: Arc<AtomicBool>,
    flushed: Option<tokio::sync::oneshot::Sender<()>>,
}

impl AsyncRead for Flushed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Flushed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.io).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) && self.body_handed.load(Ordering::Acquire) {
            if let Some(tx) = self.flushed.take() {
                let _ = tx.send(());
            }
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
