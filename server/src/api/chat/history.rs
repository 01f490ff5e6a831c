//! `GET /chat/history/{thread_id}`: the conversation and the prompt waiting for an answer
//! (422 for a malformed id, 404 for an unknown thread or someone else's).

use axum::extract::{Path, State};
use axum::Json;

use super::thread_chat;
use crate::api::admission::own_thread;
use crate::api::error::ApiResult;
use crate::api::langgraph::common::ThreadPath;
use crate::api::AppState;
use crate::auth::User;
use crate::contract::History;

/// `GET /chat/history/{thread_id}`.
pub(crate) async fn history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
) -> ApiResult<Json<History>> {
    let thread = own_thread(&state, &user, &thread_id).await?;
    let empty = History {
        thread_id: thread_id.clone(),
        messages: Vec::new(),
        pending_interrupt: None,
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
