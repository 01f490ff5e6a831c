//! A thread's state: at its latest or any checkpoint, and `update_state` (its history is
//! [`super::history`]'s).

use axum::extract::{Path, State};
use axum::Json;
use serde_json::json;

use super::common::{
    checkpoint_id_of, in_namespace, subgraph_ns, thread_graph, CheckpointPath, Params, ThreadPath,
};
use super::models::{CheckpointRef, StateAt, StateParams, StateUpdated, ThreadState, UpdateState};
use super::unsupported::NotSupported;
use crate::api::admission::own_thread;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::AppState;
use crate::auth::User;

/// `GET /threads/{id}/state?subgraphs=`.
pub(crate) async fn get(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    params: Params<StateParams>,
) -> ApiResult<Json<ThreadState>> {
    let subgraphs = params.flag("subgraphs")?.unwrap_or(false);
    state_at(&state, &user, &id, "", None, subgraphs).await
}

/// `GET /threads/{id}/state/{checkpoint_id}?subgraphs=`.
pub(crate) async fn get_at(
    State(state): State<AppState>,
    user: User,
    Path(p): Path<CheckpointPath>,
    params: Params<StateParams>,
) -> ApiResult<Json<ThreadState>> {
    let subgraphs = params.flag("subgraphs")?.unwrap_or(false);
    state_at(
        &state,
        &user,
        &p.thread_id,
        "",
        Some(&p.checkpoint_id),
        subgraphs,
    )
    .await
}

/// The state of thread `id` (of its subgraph namespace `ns` when not empty) at a checkpoint,
/// with subgraph tasks' states when `subgraphs`.
async fn state_at(
    state: &AppState,
    user: &User,
    id: &str,
    ns: &str,
    checkpoint: Option<&str>,
    subgraphs: bool,
) -> ApiResult<Json<ThreadState>> {
    let t = own_thread(state, user, id).await?;
    // A thread without a graph has no checkpoint: its latest state is empty, a checkpoint
    // asked for by id is not there.
    let Some(g) = thread_graph(state, &t) else {
        return match (ns, checkpoint) {
            (_, Some(c)) => Err(ApiError::NotFound(format!("checkpoint `{c}`"))),
            ("", None) => Ok(Json(ThreadState::empty(id))),
            (_, None) => Err(ApiError::NotFound(format!("subgraph namespace `{ns}`"))),
        };
    };
    let (graph, inner) = in_namespace(g, id, ns)?;
    let snap = if subgraphs {
        graph.state_with_subgraphs(&inner, checkpoint).await?
    } else {
        graph.state(&inner, checkpoint).await?
    };
    match snap {
        Some(s) => Ok(Json(ThreadState::of_ns(id, ns, &s))),
        None => match checkpoint {
            Some(c) => Err(ApiError::NotFound(format!("checkpoint `{c}`"))),
            None if ns.is_empty() => Ok(Json(ThreadState::empty(id))),
            None => Err(ApiError::NotFound(format!("subgraph namespace `{ns}`"))),
        },
    }
}

/// `POST /threads/{id}/state/checkpoint`: at a checkpoint of the thread or of one of its
/// subgraphs (`checkpoint.checkpoint_ns`).
pub(crate) async fn at(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    OptionalJson(req): OptionalJson<StateAt>,
) -> ApiResult<Json<ThreadState>> {
    let ns = subgraph_ns(&req.checkpoint).unwrap_or_default();
    let cp = checkpoint_id_of(&req.checkpoint, &req.checkpoint_id);
    let subgraphs = req.subgraphs.unwrap_or(false);
    state_at(&state, &user, &id, ns, cp.as_deref(), subgraphs).await
}

/// `POST /threads/{id}/state`: `update_state`.
pub(crate) async fn update(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(req): ApiJson<UpdateState>,
) -> ApiResult<Json<StateUpdated>> {
    let t = own_thread(&state, &user, &id).await?;
    // A thread made with a graph (`threads.create(graph_id=...)`) is updated even before
    // its first run (the update writes its first checkpoint); one without a graph cannot
    // be, 400 as on the official server.
    let g = thread_graph(&state, &t).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "Thread {id} has no graph ID: create it with a graph_id, or run it once"
        ))
    })?;
    if !state.store.active_runs(&id).await?.is_empty() {
        return Err(ApiError::Conflict {
            code: "thread_busy",
            message: format!("thread `{id}` is running a task; its state cannot be updated now"),
        });
    }
    let values = if req.values.is_null() {
        json!({})
    } else {
        req.values
    };
    let cp = checkpoint_id_of(&req.checkpoint, &req.checkpoint_id);
    if let Some(c) = &cp {
        if g.graph.state(&id, Some(c)).await?.is_none() {
            return Err(ApiError::NotFound(format!("checkpoint `{c}`")));
        }
    }
    let new_id = g
        .graph
        .update_state(&id, cp.as_deref(), values, req.as_node.as_deref())
        .await?;
    Ok(Json(StateUpdated {
        checkpoint: CheckpointRef::new(&id, &new_id),
        configurable: CheckpointRef::new(&id, &new_id),
    }))
}

/// `PATCH /threads/{id}/state` (checkpoint metadata).
pub(crate) async fn patch(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> ApiResult<NotSupported> {
    own_thread(&state, &user, &id).await?;
    Ok(NotSupported(
        "changing a checkpoint's metadata (checkpoints are immutable)",
    ))
}
