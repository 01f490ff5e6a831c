//! Server-sent events: the headers every stream carries and the keep-alive comments that
//! keep idle streams (and proxies) open.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{header, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};

/// How often an idle stream gets a heartbeat comment.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

/// One open event stream in the `palgraph_sse_streams` gauge, from its making to its drop.
struct OpenStream;

impl OpenStream {
    fn new() -> Self {
        metrics::gauge!(crate::prometheus::SSE_STREAMS).increment(1.0);
        OpenStream
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics::gauge!(crate::prometheus::SSE_STREAMS).decrement(1.0);
    }
}

/// An SSE response: no caching, no proxy buffering, events flushed one by one.
pub fn sse_response<S>(
    state: &super::AppState,
    stream: S,
    extra: &[(&'static str, String)],
) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    // Streams end when the server shuts down, so graceful shutdown does not wait on them.
    // The stream counts as open until it is dropped (ended, or its client went away).
    let open = OpenStream::new();
    let stream = stream
        .take_until(state.shutdown.clone().cancelled_owned())
        .map(move |e| {
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
pub fn data_event(id: Option<String>, json: &serde_json::Value) -> Event {
    let e = Event::default().data(json.to_string());
    match id {
        Some(id) => e.id(id),
        None => e,
    }
}

/// The `Last-Event-ID` request header.
pub fn last_event_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}
