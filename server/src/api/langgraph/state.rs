//! A thread's state: at its latest or any checkpoint, its history, and `update_state`.

use axum::extract::{Path, State};
use axum::Json;
use palgraph::ListOptions;
use serde_json::{json, Value};

use super::common::{
    checkpoint_id_of, in_namespace, project, subgraph_ns, thread_graph, values, CheckpointPath,
    Params, ThreadPath,
};
use super::models::{
    CheckpointRef, HistoryParams, HistoryQuery, StateAt, StateParams, StateUpdated, ThreadState,
    UpdateState,
};
use super::unsupported::NotSupported;
use crate::api::admission::own_thread;
use crate::api::auth::User;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::AppState;

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

async fn history_of(
    state: &AppState,
    user: &User,
    id: &str,
    q: HistoryQuery,
) -> ApiResult<Json<Vec<Value>>> {
    let t = own_thread(state, user, id).await?;
    let Some(g) = thread_graph(state, &t) else {
        return Ok(Json(Vec::new()));
    };
    let ns = subgraph_ns(&q.checkpoint).unwrap_or_default();
    let (graph, inner) = in_namespace(g, id, ns)?;
    let before = match q.before {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(Value::Object(o)) => o
            .get("checkpoint_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "before must be a checkpoint id or a checkpoint, not {other}"
            )))
        }
    };
    let opts = ListOptions {
        before,
        limit: Some(q.limit.unwrap_or(10).clamp(1, 1000)),
        filter: q.metadata.filter(|m| !m.is_empty()),
    };
    let snaps = graph.history(&inner, &opts).await?;
    let mut list = values(snaps.iter().map(|s| ThreadState::of_ns(id, ns, s)));
    before_input(graph.as_ref(), &inner, &snaps, &mut list).await?;
    Ok(Json(project(list, &q.select)))
}

/// Shows a turn's input checkpoint with the values its input was applied to, as LangGraph's
/// `input` checkpoints hold the input only as a pending write: a message is first seen in
/// the checkpoint after it, whose parent is the input checkpoint, so a client that edits a
/// message (agent-chat-ui's Edit, also of a thread's first message) runs from that parent
/// and the engine replaces the input there. The base of a thread's first input is empty.
async fn before_input(
    graph: &dyn palgraph::dynamic::DynGraph,
    thread: &str,
    snaps: &[palgraph::dynamic::DynSnapshot],
    list: &mut [Value],
) -> ApiResult<()> {
    for (snap, item) in snaps.iter().zip(list.iter_mut()) {
        if snap.metadata.get("source").and_then(Value::as_str) != Some("input") {
            continue;
        }
        let base = snap.metadata.get("turn_base").and_then(Value::as_str);
        let values = match base {
            None => json!({}),
            Some(b) => match snaps.iter().find(|s| s.checkpoint_id == b) {
                Some(s) => s.values.clone(),
                None => graph
                    .state(thread, Some(b))
                    .await?
                    .map_or_else(|| json!({}), |s| s.values),
            },
        };
        item["values"] = values;
    }
    Ok(())
}

/// `POST /threads/{id}/history`.
pub(crate) async fn post_history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    OptionalJson(q): OptionalJson<HistoryQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    history_of(&state, &user, &id, q).await
}

/// `GET /threads/{id}/history?limit=&before=`.
pub(crate) async fn get_history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    params: Params<HistoryParams>,
) -> ApiResult<Json<Vec<Value>>> {
    let limit = match params.get("limit") {
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| ApiError::BadRequest(format!("limit must be a number, not `{l}`")))?,
        ),
        None => None,
    };
    history_of(
        &state,
        &user,
        &id,
        HistoryQuery {
            limit,
            before: params.get("before").map(|b| Value::String(b.to_string())),
            ..Default::default()
        },
    )
    .await
}
