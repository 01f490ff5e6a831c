//! The chat contract, served for every graph registered with a [`ChatAdapter`] (PalAssist
//! by default; a thread keeps the graph it started with):
//!
//! - `POST /chat` starts a turn and streams `data: {json}` events: `status` per node (and
//!   `token` for streamed answer text), then exactly one terminal event: `response`,
//!   `interrupt`, `error`, or `cancelled` (a stop);
//! - `POST /chat/resume` answers a prompt (`type: "cancel"` resumes with null);
//! - `GET /chat/history/{thread_id}` returns the messages and the pending prompt;
//! - `GET /chat/stream/{thread_id}` reconnects: a `snapshot` first, then live events
//!   (`Last-Event-ID: <run_id>:<seq>` resumes a dropped stream without a snapshot);
//! - `POST /threads/{thread_id}/cancel` stops the thread's active run.
//!
//! Every event carries an SSE id `<run_id>:<seq>`.

mod cancel;
pub(crate) mod events;
mod history;
mod reconnect;
mod turn;

use std::sync::Arc;

use serde_json::Value;

pub(crate) use crate::contract::{ChatAdapter, ChatGraph, ChatGraphs, TurnRequest};
pub(crate) use cancel::cancel_thread;
pub(crate) use history::history;
pub(crate) use reconnect::stream;
pub(crate) use turn::{chat, resume};

use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::graphs::GraphEntry;
use crate::store::Thread;

/// The longest chat message accepted, in bytes (the request may hold up to 1 MiB).
pub(crate) const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// The chat graph named `graph` (a graph id or assistant id), or the default one.
pub(crate) fn chat_graph(
    state: &AppState,
    graph: Option<&str>,
) -> ApiResult<(GraphEntry, Arc<dyn ChatAdapter>)> {
    let entry = match graph {
        Some(g) => state
            .graphs
            .find(g)
            .ok_or_else(|| ApiError::NotFound(format!("graph `{g}`")))?,
        None => state
            .graphs
            .default_chat()
            .ok_or_else(|| ApiError::NotFound("a chat graph".into()))?,
    };
    let adapter = entry.chat.clone().ok_or_else(|| ApiError::Conflict {
        code: "not_a_chat_graph",
        message: format!(
            "graph `{}` does not speak the chat contract; use the LangGraph API (/threads/.../runs)",
            entry.graph_id
        ),
    })?;
    Ok((entry.clone(), adapter))
}

/// The chat graph of a thread: the one its runs ran, or the default for a new thread.
pub(crate) fn thread_chat(
    state: &AppState,
    thread: &Thread,
) -> ApiResult<(GraphEntry, Arc<dyn ChatAdapter>)> {
    chat_graph(
        state,
        thread.metadata.get("graph_id").and_then(Value::as_str),
    )
}

/// `GET /chat/graphs`: the graphs served on `/chat` (the default first), with the page
/// panels each needs.
pub(crate) async fn graphs(
    axum::extract::State(state): axum::extract::State<AppState>,
    _user: crate::auth::User,
) -> axum::Json<ChatGraphs> {
    let default = state.graphs.default_chat().map(|e| e.graph_id.clone());
    let mut graphs: Vec<ChatGraph> = state
        .graphs
        .all()
        .filter_map(|e| {
            let chat = e.chat.as_ref()?;
            Some(ChatGraph {
                graph_id: e.graph_id.clone(),
                assistant_id: e.assistant_id.clone(),
                description: e.description.clone(),
                default: default.as_deref() == Some(e.graph_id.as_str()),
                panels: chat.panels(),
            })
        })
        .collect();
    graphs.sort_by_key(|g| !g.default);
    axum::Json(ChatGraphs { graphs })
}
