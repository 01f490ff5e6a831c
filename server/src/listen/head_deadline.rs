//! The request-head deadline with an answer: a connection that has begun a request head
//! and not finished it within the head timeout is answered `408 Request Timeout` (JSON,
//! `Connection: close`) and closed; one that sent nothing since its last response (an idle
//! keep-alive connection, or a new one) is closed quietly after the same time. hyper's own
//! head timeout closes without a word; it stays set, a little later, as a backstop.
//!
//! The connection's service tells the deadline when a request's head is done (the service
//! is called) and when its response has been written (the response body is dropped), so
//! the clock runs only while the connection waits for a head, never during a long upload
//! or a stream.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Requests begun and responses written on one connection.
#[derive(Clone, Default)]
pub(super) struct Requests(Arc<(AtomicU64, AtomicU64)>);

impl Requests {
    /// A request's head is done.
    pub(super) fn began(&self) {
        self.0 .0.fetch_add(1, Ordering::AcqRel);
    }

    /// `body`, which counts its request as answered once it is dropped (written or
    /// abandoned).
    pub(super) fn answer_with(&self, body: Body) -> Body {
        Body::new(Answered {
            inner: body,
            requests: self.clone(),
        })
    }

    /// The responses written, when no request is under way.
    fn idle(&self) -> Option<u64> {
        let done = self.0 .1.load(Ordering::Acquire);
        (self.0 .0.load(Ordering::Acquire) == done).then_some(done)
    }
}

/// A response body that counts its request as answered when dropped.
struct Answered {
    inner: Body,
    requests: Requests,
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.requests.0 .1.fetch_add(1, Ordering::AcqRel);
    }
}

impl HttpBody for Answered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

const TIMED_OUT: &str =
    "{\"detail\":\"the request head did not arrive in time\",\"code\":\"header_timeout\"}";

/// A connection's I/O with the head deadline.
pub(super) struct HeadDeadline<IO> {
    io: IO,
    limit: Duration,
    requests: Requests,
    /// The deadline of the head awaited, and the responses written when it was set.
    armed: Option<(Pin<Box<Sleep>>, u64)>,
    /// Whether bytes of the awaited head have arrived.
    begun: bool,
    /// The deadline passed: reads end.
    closed: bool,
}

impl<IO> HeadDeadline<IO> {
    pub(super) fn new(io: IO, limit: Duration, requests: Requests) -> Self {
        HeadDeadline {
            io,
            limit,
            requests,
            armed: None,
            begun: false,
            closed: false,
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for HeadDeadline<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.closed {
            return Poll::Ready(Ok(()));
        }
        match this.requests.idle() {
            None => this.armed = None,
            Some(done) => {
                if this.armed.as_ref().is_none_or(|(_, at)| *at != done) {
                    let sleep = Box::pin(tokio::time::sleep_until(Instant::now() + this.limit));
                    this.armed = Some((sleep, done));
                    this.begun = false;
                }
                if let Some((sleep, _)) = this.armed.as_mut() {
                    if sleep.as_mut().poll(cx).is_ready() {
                        this.closed = true;
                        if this.begun {
                            let answer = format!(
                                "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n\
                                 connection: close\r\ncontent-length: {}\r\n\r\n{TIMED_OUT}",
                                TIMED_OUT.len()
                            );
                            // Best effort: a socket that cannot take it now is closed anyway.
                            let _ = Pin::new(&mut this.io).poll_write(cx, answer.as_bytes());
                            let _ = Pin::new(&mut this.io).poll_flush(cx);
                        }
                        return Poll::Ready(Ok(()));
                    }
                }
            }
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before && this.armed.is_some() {
            this.begun = true;
        }
        read
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for HeadDeadline<IO> {
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
