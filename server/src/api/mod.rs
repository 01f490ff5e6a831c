//! The HTTP API: the seed chat contract ([`chat`]), the LangGraph Agent Server shapes
//! ([`lg`]), documents, health and the OpenAPI document.

pub mod auth;
pub mod chat;
pub mod documents;
pub mod error;
pub mod extract;
pub mod lg;
pub mod openapi;
pub mod sse;
pub mod time;
pub mod web;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use crate::graphs::Graphs;
use crate::runs::Runs;
use crate::store::Store;
use auth::AuthConfig;
use chat::ChatBinding;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    /// The run machinery.
    pub runs: Arc<Runs>,
    /// Threads, runs, events.
    pub store: Arc<dyn Store>,
    /// The graphs served.
    pub graphs: Graphs,
    /// Authentication.
    pub auth: Arc<AuthConfig>,
    /// The graph behind `/chat`.
    pub chat: Option<ChatBinding>,
    /// The per-user documents.
    pub docs: Option<Arc<dyn palgraph_nodes::documents::DocumentStore>>,
    /// Cancelled at shutdown: open streams end.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Largest request body of the LangGraph API's runs and state updates (a run's input or a
/// state update can carry a whole document).
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Largest body of every other request (threads, search, commands).
pub const SMALL_BODY_LIMIT: usize = 1024 * 1024;

/// Largest body of a chat turn or a prompt's answer (see [`chat::MAX_MESSAGE_BYTES`]).
pub const CHAT_BODY_LIMIT: usize = 1024 * 1024;

/// Largest document upload (multipart or JSON): the content limit of the document store
/// and room for the form.
pub const DOCUMENT_BODY_LIMIT: usize = palgraph_nodes::documents::MAX_CONTENT_BYTES + 64 * 1024;

async fn healthz() -> impl IntoResponse {
    Json(json!({"ok": true}))
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.runs.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "detail": "shutting down"})),
        );
    }
    match state.store.get_thread_any("readiness-probe").await {
        Ok(_) => (StatusCode::OK, Json(json!({"ready": true}))),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "detail": e.to_string()})),
        ),
    }
}

/// The router with every endpoint.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(web::routes())
        .route("/healthz", get(healthz))
        .route("/ok", get(healthz))
        .route("/readyz", get(readyz))
        .route("/info", get(lg::info))
        .route("/openapi.json", get(openapi::openapi))
        .route(
            "/chat",
            post(chat::chat).layer(DefaultBodyLimit::max(CHAT_BODY_LIMIT)),
        )
        .route(
            "/chat/resume",
            post(chat::resume).layer(DefaultBodyLimit::max(CHAT_BODY_LIMIT)),
        )
        .route("/chat/history/{thread_id}", get(chat::history))
        .route("/chat/stream/{thread_id}", get(chat::stream))
        .route(
            "/documents",
            post(documents::create)
                .layer(DefaultBodyLimit::max(DOCUMENT_BODY_LIMIT))
                .get(documents::list),
        )
        .route(
            "/documents/{id}",
            get(documents::get).delete(documents::delete),
        )
        .route("/assistants", post(lg::create_assistant))
        .route("/assistants/search", post(lg::search_assistants))
        .route("/assistants/count", post(lg::count_assistants))
        .route(
            "/assistants/{id}",
            get(lg::get_assistant)
                .patch(lg::change_assistant)
                .delete(lg::change_assistant),
        )
        .route("/assistants/{id}/graph", get(lg::assistant_graph))
        .route("/assistants/{id}/schemas", get(lg::assistant_schemas))
        .route("/assistants/{id}/subgraphs", get(lg::assistant_subgraphs))
        .route(
            "/assistants/{id}/subgraphs/{namespace}",
            get(lg::assistant_subgraphs),
        )
        .route("/assistants/{id}/versions", post(lg::assistant_versions))
        .route("/threads", post(lg::create_thread))
        .route("/threads/search", post(lg::search_threads))
        .route("/threads/count", post(lg::count_threads))
        .route("/threads/prune", post(lg::prune_threads))
        .route(
            "/threads/{thread_id}",
            get(lg::get_thread)
                .patch(lg::patch_thread)
                .delete(lg::delete_thread),
        )
        .route("/threads/{thread_id}/copy", post(lg::copy_thread))
        .route("/threads/{thread_id}/cancel", post(chat::cancel_thread))
        .route("/threads/{thread_id}/stream", get(lg::thread_stream))
        .route(
            "/threads/{thread_id}/state",
            get(lg::get_state)
                .post(lg::update_state)
                .layer(DefaultBodyLimit::max(BODY_LIMIT))
                .patch(lg::patch_state),
        )
        .route(
            "/threads/{thread_id}/state/checkpoint",
            post(lg::get_state_at),
        )
        .route(
            "/threads/{thread_id}/state/{checkpoint_id}",
            get(lg::get_state),
        )
        .route(
            "/threads/{thread_id}/history",
            get(lg::get_history).post(lg::post_history),
        )
        .route(
            "/threads/{thread_id}/runs",
            get(lg::list_runs)
                .post(lg::create_run)
                .layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/threads/{thread_id}/runs/stream",
            post(lg::stream_run).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/threads/{thread_id}/runs/wait",
            post(lg::wait_run).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route("/threads/{thread_id}/runs/crons", post(lg::crons))
        .route(
            "/threads/{thread_id}/runs/{run_id}",
            get(lg::get_run).delete(lg::delete_run),
        )
        .route("/threads/{thread_id}/runs/{run_id}/join", get(lg::join_run))
        .route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get(lg::join_stream),
        )
        .route(
            "/threads/{thread_id}/runs/{run_id}/cancel",
            post(lg::cancel_run),
        )
        .route(
            "/runs",
            post(lg::create_stateless_run).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/runs/stream",
            post(lg::stream_stateless_run).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/runs/wait",
            post(lg::wait_stateless_run).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route(
            "/runs/batch",
            post(lg::create_batch).layer(DefaultBodyLimit::max(BODY_LIMIT)),
        )
        .route("/runs/cancel", post(lg::cancel_many))
        .route("/runs/{run_id}/stream", get(lg::join_stream_by_run))
        .route("/runs/crons", post(lg::crons))
        .route("/runs/crons/{*rest}", axum::routing::any(lg::crons))
        .route("/store/{*rest}", axum::routing::any(lg::long_term_store))
        .layer(DefaultBodyLimit::max(SMALL_BODY_LIMIT))
        .layer(axum::middleware::from_fn(extract::reject_nul))
        .layer(axum::middleware::from_fn(lg::cors))
        .with_state(state)
}
