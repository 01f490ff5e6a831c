//! The request-body deadline: a request's whole body must arrive within
//! [`BodyDeadline::limit`] of its head, on every route, however the handler reads it (JSON,
//! bytes, a multipart form). A client that announces a body and then sends it a few bytes
//! at a time (or not at all) gets `408 Request Timeout` with a JSON error and
//! `Connection: close`, and its connection is closed: it cannot hold a connection, a task
//! and a buffer for longer than the deadline.
//!
//! The deadline is total, not per read: tower-http's `RequestBodyTimeout` restarts its
//! clock on every frame, so a client sending one byte just inside each interval would
//! never be timed out.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tokio::time::{Instant, Sleep};

/// How long a request's body may take to arrive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyDeadline {
    /// From the end of the request head to the body's last byte.
    pub limit: Duration,
}

/// Why a body read failed: its deadline passed.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
pub(crate) struct BodyTimedOut(Duration);

/// A body that fails once its deadline has passed, and says so in `expired`.
struct DeadlineBody {
    inner: Body,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    expired: Arc<AtomicBool>,
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let Some(sleep) = this.sleep.as_mut() else {
            // Read to the end already, or failed: the inner body decides.
            return Pin::new(&mut this.inner).poll_frame(cx);
        };
        if sleep.as_mut().poll(cx).is_ready() {
            this.sleep = None;
            this.expired.store(true, Ordering::Release);
            return Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut(this.limit)))));
        }
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            this.sleep = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The middleware: gives the request's body its deadline, and answers 408 (closing the
/// connection) when the handler's read of it ran past the deadline, whatever the handler
/// made of the failed read.
pub(crate) async fn limit_body_time(
    State(deadline): State<BodyDeadline>,
    req: Request,
    next: Next,
) -> Response {
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let expired = Arc::new(AtomicBool::new(false));
    let limit = deadline.limit;
    let req = req.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            limit,
            sleep: Some(Box::pin(tokio::time::sleep_until(Instant::now() + limit))),
            expired: expired.clone(),
        })
    });
    let resp = next.run(req).await;
    if !expired.load(Ordering::Acquire) {
        return resp;
    }
    tracing::info!(limit_secs = limit.as_secs_f64(), "request body timed out");
    let mut resp = (
        StatusCode::REQUEST_TIMEOUT,
        Json(json!({
            "detail": format!(
                "the request body did not arrive within {} s; send it faster or in smaller parts",
                limit.as_secs_f64()
            ),
            "code": "body_timeout",
        })),
    )
        .into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use tower::ServiceExt;

    async fn echo(body: Bytes) -> String {
        format!("{} bytes", body.len())
    }

    fn app(limit: Duration) -> Router {
        // Every path: no route of the API's (they are all in its document).
        Router::new()
            .fallback(echo)
            .layer(axum::middleware::from_fn_with_state(
                BodyDeadline { limit },
                limit_body_time,
            ))
    }

    #[tokio::test]
    async fn a_body_that_never_ends_is_timed_out_with_408_and_close() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
        let body = Body::from_stream(tokio_stream_of(rx));
        tx.send(Ok(Bytes::from_static(b"{\"a\":"))).await.unwrap();
        let req = Request::post("/").body(body).unwrap();
        let resp = app(Duration::from_millis(200)).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
        assert_eq!(resp.headers()[header::CONNECTION], "close");
        drop(tx);
    }

    #[tokio::test]
    async fn a_whole_body_within_the_deadline_is_served() {
        let req = Request::post("/").body(Body::from("hello")).unwrap();
        let resp = app(Duration::from_secs(5)).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let body = axum::body::to_bytes(resp.into_body(), 100).await.unwrap();
        assert_eq!(&body[..], b"5 bytes");
    }

    fn tokio_stream_of(
        mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::io::Error>>,
    ) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
