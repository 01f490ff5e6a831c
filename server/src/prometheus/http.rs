//! HTTP request metrics: a middleware that counts each request by method, matched route
//! template and status, and times it until its response head.
//!
//! The route is the template the router matched (`/threads/{thread_id}/runs`), never the
//! raw path; a request no route matched is `unmatched`. Methods outside the standard set
//! are `other`.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use palgraph::metric::{self, KeyCache};

use crate::metric::{HTTP_REQUESTS, HTTP_SECONDS};

/// The keys of the requests' durations and counts, built once per method, route and status.
static SECONDS: KeyCache = KeyCache::new(HTTP_SECONDS);
static REQUESTS: KeyCache = KeyCache::new(HTTP_REQUESTS);

/// The middleware (`axum::middleware::from_fn(track)`, layered on the router so that the
/// matched route is known).
pub async fn track(req: Request, next: Next) -> Response {
    // The route template is shared (an `Arc` in the router): cloning it does not allocate.
    let route = req.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = method_label(req.method());
    let started = Instant::now();
    let resp = next.run(req).await;
    let secs = started.elapsed().as_secs_f64();
    metric::histogram(&SECONDS.key(&[("method", method), ("route", route)]), secs);
    metric::counter(
        &REQUESTS.key(&[
            ("method", method),
            ("route", route),
            ("status", resp.status().as_str()),
        ]),
        1,
    );
    resp
}

/// A bounded label for a method.
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
