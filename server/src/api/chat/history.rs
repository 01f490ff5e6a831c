//! `GET /chat/history/{thread_id}`: the conversation and the prompt waiting for an answer.

use axum::extract::{Path, State};
use axum::Json;

use super::models::History;
use super::thread_chat;
use crate::api::auth::User;
use crate::api::error::{ApiError, ApiResult};
use crate::api::langgraph::common::ThreadPath;
use crate::api::AppState;

/// `GET /chat/history/{thread_id}`.
pub async fn history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
) -> ApiResult<Json<History>> {
    let empty = History {
        thread_id: thread_id.clone(),
        messages: Vec::new(),
        pending_interrupt: None,
    };
    let thread = match state.store.get_thread_any(&thread_id).await? {
        None => return Ok(Json(empty)),
        Some(t) if t.owner != user.id => {
            return Err(ApiError::NotFound(format!("thread `{thread_id}`")))
        }
        Some(t) => t,
    };
    let Ok((entry, adapter)) = thread_chat(&state, &thread) else {
        return Ok(Json(empty));
    };
    let Some(snap) = entry.graph.state(&thread_id, None).await? else {
        return Ok(Json(empty));
    };
    Ok(Json(History {
        thread_id,
        messages: adapter.history(&snap.values),
        pending_interrupt: snap.interrupts.first().map(|i| adapter.prompt(i)),
    }))
}
