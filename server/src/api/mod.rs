//! The HTTP API: the chat contract ([`chat`]), the LangGraph Agent Server API
//! ([`langgraph`]), health, the page ([`web`]), and the OpenAPI document ([`openapi`])
//! generated from all of them. [`admission`] lets runs in for both APIs alike.
//!
//! Every route is registered documented (aide): the router and the document cannot drift.
//! Layers, outermost first: CORS (the configured origins), a request id and a trace span
//! per request, NUL characters refused in paths and queries, a body limit (per route where
//! it differs), each client's request rate ([`rate_limit`]). The body deadline and the
//! connection caps are the listener's ([`crate::listen`]).

pub(crate) mod admission;
pub(crate) mod auth;
pub(crate) mod chat;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod json_array;
pub(crate) mod langgraph;
mod metrics;
pub(crate) mod openapi;
pub(crate) mod rate_limit;
pub(crate) mod sse;
pub(crate) mod time;
pub(crate) mod web;

use std::sync::Arc;

use aide::axum::routing::{get_with, post_with};
use aide::axum::ApiRouter;
use aide::openapi::OpenApi;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::{Extension, Json, Router};
use schemars::JsonSchema;
use serde::Serialize;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::auth::AuthConfig;
use crate::graphs::Graphs;
use crate::runs::Runs;
use crate::store::Store;
use openapi::sse;

/// The router's state: what every handler of the server can reach, shared, so that the
/// copy each request's handler and stream takes is one reference count. Opaque outside the
/// server: an [`Extension`](crate::Extension)'s routes carry it as their router's state and
/// reach their own parts through what they capture.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    /// The state of a server made of `parts`.
    pub fn new(parts: AppParts) -> Self {
        AppState(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// The parts of an [`AppState`].
pub struct AppParts {
    /// The run machinery.
    pub runs: Arc<Runs>,
    /// Threads, runs, events.
    pub store: Arc<dyn Store>,
    /// The long-term store (`/store/*`), unscoped: handlers use the caller's view.
    pub long_term: Arc<dyn palgraph::store::Store>,
    /// The graphs served.
    pub graphs: Graphs,
    /// Scheduled runs (crons).
    pub crons: crate::crons::CronStore,
    /// Authentication.
    pub auth: Arc<AuthConfig>,
    /// Cancelled at shutdown: open streams end.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Prometheus metrics (`GET /metrics`); `None` when turned off.
    pub metrics: Option<crate::prometheus::Metrics>,
    /// Bytes of one streamed list response ([`json_array`]).
    pub max_response_bytes: usize,
    /// Runs one `POST /runs/batch` may create.
    pub max_batch_runs: usize,
}

/// Largest request body of the LangGraph API's runs and state updates (a run's input or a
/// state update can carry a whole document).
pub(crate) const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Largest body of every other request (threads, search, commands).
pub(crate) const SMALL_BODY_LIMIT: usize = 1024 * 1024;

/// Largest body of a chat turn or a prompt's answer (see [`chat::MAX_MESSAGE_BYTES`]).
pub(crate) const CHAT_BODY_LIMIT: usize = 1024 * 1024;

/// `GET /healthz`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Health {
    /// Always true.
    pub ok: bool,
}

/// `GET /readyz`.
#[derive(Serialize, JsonSchema)]
pub(crate) struct Ready {
    /// Whether the server takes work.
    pub ready: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

async fn healthz() -> Json<Health> {
    Json(Health { ok: true })
}

async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Ready>) {
    if state.runs.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Ready {
                ready: false,
                detail: Some("shutting down".into()),
            }),
        );
    }
    match state.store.get_thread_any("readiness-probe").await {
        Ok(_) => (
            StatusCode::OK,
            Json(Ready {
                ready: true,
                detail: None,
            }),
        ),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(Ready {
                ready: false,
                detail: Some(e.to_string()),
            }),
        ),
    }
}

/// The chat contract's routes, documented.
fn chat_routes() -> ApiRouter<AppState> {
    let chat_body = || DefaultBodyLimit::max(CHAT_BODY_LIMIT);
    ApiRouter::new()
        .api_route(
            "/chat",
            post_with(chat::chat, |o| {
                sse(o
                    .summary("Start a turn and stream status, token and one terminal event")
                    .tag("chat"))
            })
            .layer(chat_body()),
        )
        .api_route(
            "/chat/resume",
            post_with(chat::resume, |o| {
                sse(o
                    .summary("Answer the pending prompt and stream the rest of the turn")
                    .tag("chat"))
            })
            .layer(chat_body()),
        )
        .api_route(
            "/chat/graphs",
            get_with(chat::graphs, |o| {
                o.summary(
                    "The graphs served on /chat, the default first, with the panels each needs",
                )
                .tag("chat")
            }),
        )
        .api_route(
            "/chat/history/{thread_id}",
            get_with(chat::history, |o| {
                o.summary("A conversation's messages and its pending prompt")
                    .tag("chat")
            }),
        )
        .api_route(
            "/chat/stream/{thread_id}",
            get_with(chat::stream, |o| {
                sse(o
                    .summary("Reconnect: a snapshot, then live events (Last-Event-ID resumes)")
                    .tag("chat"))
            }),
        )
        .api_route(
            "/threads/{thread_id}/cancel",
            post_with(chat::cancel_thread, |o| {
                o.summary("Stop a thread's active run (idempotent)")
                    .tag("chat")
            }),
        )
}

fn system_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/healthz",
            get_with(healthz, |o| o.summary("Liveness").tag("system")),
        )
        .api_route(
            "/ok",
            get_with(healthz, |o| {
                o.summary("Liveness (LangGraph's path)").tag("system")
            }),
        )
        .api_route(
            "/readyz",
            get_with(readyz, |o| {
                o.summary("Readiness: 503 while shutting down or without a database")
                    .tag("system")
                    .response_with::<200, Json<Ready>, _>(|r| r.description("Ready"))
                    .response_with::<503, Json<Ready>, _>(|r| {
                        r.description("Not ready: shutting down, or the database is unreachable")
                    })
            }),
        )
        .api_route(
            "/openapi.json",
            get_with(openapi::serve, |o| o.summary("This document").tag("system")),
        )
}

/// Every route documented: the system's, the chat contract's, the LangGraph API's, the
/// page's, and `extra` (a graph's own, e.g. PalAssist's documents).
pub(crate) fn documented_routes(
    extra: Vec<ApiRouter<AppState>>,
    page: Arc<web::Page>,
) -> ApiRouter<AppState> {
    let mut api = system_routes()
        .merge(chat_routes())
        .merge(langgraph::routes())
        .merge(web::routes(page))
        .merge(metrics::routes());
    for r in extra {
        api = api.merge(r);
    }
    api
}

/// CORS for `origins` (`*` for any); none configured: no browser origin but the server's
/// own may call the API.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::OPTIONS,
            ])
            .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
            .expose_headers([
                header::CONTENT_LOCATION,
                header::LOCATION,
                HeaderName::from_static("x-pagination-next"),
                HeaderName::from_static("x-thread-id"),
                HeaderName::from_static("x-run-id"),
            ])
            .max_age(std::time::Duration::from_secs(600)),
    )
}

/// The router with every endpoint, its OpenAPI document, and its layers.
///
/// `page` is the chat page with the extensions' modules; `rate` limits each client's
/// requests (none: unlimited).
pub(crate) fn router(
    state: AppState,
    extra: Vec<ApiRouter<AppState>>,
    page: Arc<web::Page>,
    cors_origins: &[String],
    rate: Option<crate::config::RequestRate>,
) -> Router {
    let mut doc = OpenApi::default();
    let app = documented_routes(extra, page).finish_api_with(&mut doc, openapi::frame);
    openapi::add_graph_schemas(&mut doc, &state.graphs);
    for (method, path) in openapi::undocumented(&doc) {
        tracing::warn!(%method, %path, "a route has no summary in the OpenAPI document");
    }
    let request_id = HeaderName::from_static("x-request-id");
    let app = match rate {
        Some(rate) => app.layer(axum::middleware::from_fn_with_state(
            (state.clone(), rate_limit::RateLimiter::new(rate)),
            rate_limit::limit_rate,
        )),
        None => app,
    };
    let app = app
        .layer(Extension(Arc::new(doc)))
        .layer(DefaultBodyLimit::max(SMALL_BODY_LIMIT))
        .layer(axum::middleware::from_fn(crate::prometheus::http::track))
        .layer(axum::middleware::from_fn(extract::reject_nul))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(crate::telemetry::request_span)
                .on_response(crate::telemetry::RecordStatus),
        )
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state);
    match cors(cors_origins) {
        Some(c) => app.layer(c),
        None => app,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OpenAPI document of `routes` (without serving them).
    fn document(routes: ApiRouter<AppState>) -> OpenApi {
        let mut doc = OpenApi::default();
        let _ = routes.finish_api_with(&mut doc, openapi::frame);
        doc
    }

    #[test]
    fn every_route_has_a_summary() {
        let doc = document(documented_routes(Vec::new(), Arc::default()));
        assert_eq!(openapi::undocumented(&doc), Vec::<(String, String)>::new());
        let operations: usize = doc
            .paths
            .iter()
            .flat_map(|p| p.paths.values())
            .map(|item| match item {
                aide::openapi::ReferenceOr::Item(i) => i.iter().count(),
                _ => 0,
            })
            .sum();
        assert!(operations >= 60, "{operations} operations");
    }

    /// Routes are added only through aide's `api_route`: a plain axum `.route(` (or a
    /// `Router` merged or nested in) would serve a path the document does not describe.
    #[test]
    fn no_route_bypasses_the_document() {
        fn scan(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("read the source tree") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    scan(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).expect("read a source file");
                    for (n, line) in text.lines().enumerate() {
                        let code = line.split("//").next().unwrap_or_default();
                        let plain = ["route", "route_service", "nest", "nest_service"]
                            .iter()
                            .any(|name| code.contains(&format!(".{name}(")));
                        if plain {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut found = Vec::new();
        for dir in ["src", "../graphs/src", "../app/src"] {
            scan(&root.join(dir), &mut found);
        }
        assert!(
            found.is_empty(),
            "routes outside the OpenAPI document:\n{}",
            found.join("\n")
        );
    }
}
