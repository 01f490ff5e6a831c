//! Server-sent events: the headers every stream carries and the keep-alive comments that
//! keep idle streams (and proxies) open.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{header, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};

/// How often an idle stream gets a heartbeat comment.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(15);

/// How long a stream has, once the server's shutdown is over, to deliver what it still has
/// and end by itself before it is cut. Streams of runs end by themselves as soon as they
/// have delivered what this process holds (a finished run's terminal event included); this
/// bounds any other.
pub(crate) const SHUTDOWN_FLUSH: Duration = Duration::from_secs(3);

/// One open event stream in the `palgraph_sse_streams` gauge, from its making to its drop.
struct OpenStream;

impl OpenStream {
    fn new() -> Self {
        metrics::gauge!(crate::metric::SSE_STREAMS).increment(1.0);
        OpenStream
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics::gauge!(crate::metric::SSE_STREAMS).decrement(1.0);
    }
}

/// An SSE response: no caching, no proxy buffering, events flushed one by one.
pub(crate) fn sse_response<S>(
    state: &super::AppState,
    stream: S,
    extra: &[(&'static str, String)],
) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    // Streams end when the server shuts down, so graceful shutdown does not wait on them for
    // long: by then every run here has ended or been handed back, and a stream first
    // delivers what its run left (its terminal event, if it finished) within
    // `SHUTDOWN_FLUSH`. The stream counts as open until it is dropped (ended, or its client
    // went away).
    let open = OpenStream::new();
    let shutdown = state.shutdown.clone();
    let cut = async move {
        shutdown.cancelled().await;
        tokio::time::sleep(SHUTDOWN_FLUSH).await;
    };
    let stream = stream.take_until(cut).map(move |e| {
        let _ = &open;
        e
    });
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(HEARTBEAT).text("heartbeat"))
        .into_response();
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    for (k, v) in extra {
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(*k, v);
        }
    }
    resp
}

/// A `data:` event with an id.
pub(crate) fn data_event(id: Option<String>, json: &serde_json::Value) -> Event {
    let e = Event::default().data(json.to_string());
    match id {
        Some(id) => e.id(id),
        None => e,
    }
}

/// The `Last-Event-ID` request header.
pub(crate) fn last_event_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
