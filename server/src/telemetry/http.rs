//! The span of an HTTP request: with traces exported, an OpenTelemetry server span named
//! `{method} {route}` with the HTTP semantic-convention attributes, continuing the caller's
//! `traceparent`; without, the plain `request` span the logs always showed.

use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use tower_http::trace::{DefaultOnResponse, OnResponse};
use tracing::field::Empty;

use super::context::{enabled, set_parent_from_headers};

/// The span a request runs in (tower-http's `MakeSpan`).
pub(crate) fn request_span<B>(req: &Request<B>) -> tracing::Span {
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !enabled() {
        return tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id);
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("", MatchedPath::as_str);
    let span = tracing::info_span!(
        "request",
        otel.name = %format_args!("{} {}", req.method(), if route.is_empty() { "unmatched" } else { route }),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %req.method(),
        http.route = route,
        url.path = %req.uri().path(),
        http.response.status_code = Empty,
        request_id = %id,
    );
    set_parent_from_headers(&span, req.headers());
    span
}

/// Records the response's status on the request's span (tower-http's `OnResponse`), then
/// logs as tower-http does by default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecordStatus;

impl<B> OnResponse<B> for RecordStatus {
    fn on_response(self, response: &Response<B>, latency: Duration, span: &tracing::Span) {
        let status = response.status();
        span.record("http.response.status_code", i64::from(status.as_u16()));
        if status.is_server_error() {
            span.record("otel.status_code", "error");
        }
        DefaultOnResponse::default().on_response(response, latency, span);
    }
}
