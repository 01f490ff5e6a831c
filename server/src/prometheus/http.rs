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

use super::{HTTP_REQUESTS, HTTP_SECONDS};

/// The middleware (`axum::middleware::from_fn(track)`, layered on the router so that the
/// matched route is known).
pub async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let method = method_label(req.method());
    let started = Instant::now();
    let resp = next.run(req).await;
    let secs = started.elapsed().as_secs_f64();
    metrics::histogram!(HTTP_SECONDS, "method" => method, "route" => route.clone()).record(secs);
    metrics::counter!(
        HTTP_REQUESTS,
        "method" => method,
        "route" => route,
        "status" => resp.status().as_str().to_string()
    )
    .increment(1);
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
