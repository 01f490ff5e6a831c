//! The LangGraph Agent Server API shapes: assistants, threads, thread state and history,
//! runs (background, stream, wait, join, cancel), as the official `langgraph-sdk` clients
//! call them.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use palgraph::dynamic::DynSnapshot;
use palgraph::{CancelReason, Event, ListOptions, RunEvent, StreamMode};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::auth::User;
use super::chat::{check_uuid, own_thread, OnDisconnect};
use super::error::{ApiError, ApiResult};
use super::extract::{ApiJson, OptionalJson};
use super::sse::{last_event_id, sse_response};
use super::time::iso;
use super::AppState;
use crate::graphs::GraphEntry;
use crate::runs::spec::{CommandSpec, Resumed, RunSpec};
use crate::store::{
    CancelAction, IfExists, MultitaskStrategy, NewRun, Run, RunState, Thread, ThreadQuery,
};

// ---------- resources ----------

fn assistant_json(e: &GraphEntry) -> Value {
    json!({
        "assistant_id": e.assistant_id,
        "graph_id": e.graph_id,
        "name": e.graph_id,
        "description": e.description,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": iso(0),
        "updated_at": iso(0),
    })
}

fn interrupts_by_task(snap: &DynSnapshot) -> Value {
    let mut out = Map::new();
    for i in &snap.interrupts {
        let list = out.entry(i.task_id.clone()).or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            a.push(json!({"value": i.value, "id": i.id}));
        }
    }
    Value::Object(out)
}

/// A thread as the API shows it (with its current values and interrupts).
pub(crate) fn thread_json(t: &Thread, snap: Option<&DynSnapshot>) -> Value {
    json!({
        "thread_id": t.thread_id,
        "created_at": iso(t.created_at_ms),
        "updated_at": iso(t.updated_at_ms),
        "state_updated_at": iso(snap.map(|s| s.created_at_ms).unwrap_or(t.updated_at_ms)),
        "metadata": t.metadata,
        "status": t.status,
        "config": {},
        "values": snap.map(|s| s.values.clone()).unwrap_or(Value::Null),
        "interrupts": snap.map(interrupts_by_task).unwrap_or_else(|| json!({})),
    })
}

/// LangGraph's run statuses (a cancelled run is "interrupted").
fn api_status(s: RunState) -> &'static str {
    match s {
        RunState::Cancelled => "interrupted",
        other => other.as_str(),
    }
}

fn run_json(r: &Run) -> Value {
    json!({
        "run_id": r.run_id,
        "thread_id": r.thread_id,
        "assistant_id": r.assistant_id,
        "created_at": iso(r.created_at_ms),
        "updated_at": iso(r.updated_at_ms),
        "status": api_status(r.status),
        "metadata": r.metadata,
        "kwargs": r.kwargs,
        "multitask_strategy": r.multitask_strategy.as_str(),
    })
}

fn checkpoint_json(thread_id: &str, id: &str) -> Value {
    json!({"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": id, "checkpoint_map": null})
}

/// A `ThreadState`.
fn state_json(thread_id: &str, s: &DynSnapshot) -> Value {
    let tasks: Vec<Value> = s
        .tasks
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "name": t.name,
                "path": ["__pregel_pull", t.name],
                "error": t.error,
                "interrupts": t.interrupts.iter().map(|i| json!({"value": i.value, "id": i.id})).collect::<Vec<_>>(),
                "checkpoint": null,
                "state": null,
                "result": null,
            })
        })
        .collect();
    let mut metadata = s.metadata.clone();
    metadata
        .entry("thread_id")
        .or_insert_with(|| thread_id.into());
    json!({
        "values": s.values,
        "next": s.next,
        "tasks": tasks,
        "checkpoint": checkpoint_json(thread_id, &s.checkpoint_id),
        "metadata": metadata,
        "created_at": iso(s.created_at_ms),
        "parent_checkpoint": s.parent_checkpoint_id.as_deref().map(|p| checkpoint_json(thread_id, p)),
        "interrupts": s.interrupts.iter().map(|i| json!({"value": i.value, "id": i.id})).collect::<Vec<_>>(),
        "checkpoint_id": s.checkpoint_id,
        "parent_checkpoint_id": s.parent_checkpoint_id,
    })
}

fn empty_state(thread_id: &str) -> Value {
    json!({"values": {}, "next": [], "tasks": [], "checkpoint": null, "metadata": {"thread_id": thread_id},
           "created_at": null, "parent_checkpoint": null, "interrupts": []})
}

/// The graph a thread runs (from its metadata), or the only/first registered graph.
fn thread_graph<'a>(state: &'a AppState, t: &Thread) -> Option<&'a GraphEntry> {
    t.metadata
        .get("graph_id")
        .and_then(Value::as_str)
        .and_then(|g| state.graphs.find(g))
        .or_else(|| state.graphs.all().next())
}

// ---------- system and assistants ----------

/// `GET /info`.
pub(crate) async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "langgraph_py_version": null,
        "flags": {"assistants": true, "crons": false, "langsmith": false, "langsmith_tracing_replicas": false},
        "host": {"kind": "palgraph", "project_id": null, "revision_id": null, "tenant_id": null},
    }))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct AssistantSearch {
    graph_id: Option<String>,
    metadata: Map<String, Value>,
    limit: Option<usize>,
    offset: Option<usize>,
    name: Option<String>,
}

/// `POST /assistants/search`.
pub(crate) async fn search_assistants(
    State(state): State<AppState>,
    _user: User,
    OptionalJson(q): OptionalJson<AssistantSearch>,
) -> Json<Value> {
    let list: Vec<Value> = state
        .graphs
        .all()
        .filter(|e| q.graph_id.as_ref().is_none_or(|g| &e.graph_id == g))
        .filter(|e| {
            q.name
                .as_ref()
                .is_none_or(|n| e.graph_id.contains(n.as_str()))
        })
        .filter(|_| {
            q.metadata
                .iter()
                .all(|(k, v)| k == "created_by" && v == "system")
        })
        .skip(q.offset.unwrap_or(0))
        .take(q.limit.unwrap_or(10))
        .map(assistant_json)
        .collect();
    Json(Value::Array(list))
}

fn assistant(state: &AppState, id: &str) -> ApiResult<GraphEntry> {
    state
        .graphs
        .find(id)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(format!("assistant `{id}`")))
}

/// `GET /assistants/{id}`.
pub(crate) async fn get_assistant(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(assistant_json(&assistant(&state, &id)?)))
}

/// `GET /assistants/{id}/graph`: nodes and edges (plus Mermaid).
pub(crate) async fn assistant_graph(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let e = assistant(&state, &id)?;
    let mut nodes = vec![json!({"id": "__start__", "type": "schema", "data": "__start__"})];
    nodes.extend(
        e.graph
            .nodes()
            .into_iter()
            .map(|n| json!({"id": n, "type": "runnable", "data": {"name": n}})),
    );
    nodes.push(json!({"id": "__end__", "type": "schema", "data": "__end__"}));
    let mermaid = e.graph.mermaid();
    let edges: Vec<Value> = mermaid
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (arrow, conditional) = if l.contains(" -.-> ") {
                (" -.-> ", true)
            } else {
                (" --> ", false)
            };
            let (a, b) = l.split_once(arrow)?;
            Some(json!({"source": a.trim(), "target": b.trim(), "conditional": conditional}))
        })
        .collect();
    Ok(Json(
        json!({"nodes": nodes, "edges": edges, "mermaid": mermaid}),
    ))
}

/// `GET /assistants/{id}/schemas`.
pub(crate) async fn assistant_schemas(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let e = assistant(&state, &id)?;
    Ok(Json(json!({
        "graph_id": e.graph_id,
        "input_schema": e.input_schema,
        "output_schema": e.state_schema,
        "state_schema": e.state_schema,
        "config_schema": {"type": "object", "properties": {}},
        "context_schema": {"type": "object", "properties": {}},
    })))
}

// ---------- threads ----------

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CreateThread {
    thread_id: Option<String>,
    metadata: Map<String, Value>,
    if_exists: Option<IfExists>,
    graph_id: Option<String>,
}

/// `POST /threads`.
pub(crate) async fn create_thread(
    State(state): State<AppState>,
    user: User,
    OptionalJson(req): OptionalJson<CreateThread>,
) -> ApiResult<Json<Value>> {
    let thread_id = match req.thread_id {
        Some(t) => {
            check_uuid(&t, "thread_id")?;
            t
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    let mut metadata = req.metadata;
    if let Some(g) = req.graph_id {
        metadata.insert("graph_id".into(), g.into());
    }
    let now = crate::store::now_ms();
    if let Some(existing) = state.store.get_thread_any(&thread_id).await? {
        if existing.owner != user.id {
            return Err(ApiError::Conflict {
                code: "exists",
                message: format!("thread `{thread_id}` already exists"),
            });
        }
    }
    let t = state
        .store
        .create_thread(
            Thread {
                thread_id,
                owner: user.id.clone(),
                metadata: Value::Object(metadata),
                status: "idle".into(),
                created_at_ms: now,
                updated_at_ms: now,
            },
            req.if_exists.unwrap_or_default(),
        )
        .await?;
    Ok(Json(thread_json(&t, None)))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct SearchThreads {
    metadata: Map<String, Value>,
    status: Option<String>,
    ids: Option<Vec<String>>,
    limit: Option<i64>,
    offset: Option<i64>,
    values: Option<Map<String, Value>>,
}

/// `POST /threads/search`.
pub(crate) async fn search_threads(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchThreads>,
) -> ApiResult<Json<Value>> {
    let threads = state
        .store
        .search_threads(
            &user.id,
            &ThreadQuery {
                metadata: q.metadata,
                status: q.status,
                ids: q.ids,
                limit: q.limit.unwrap_or(10).clamp(1, 1000),
                offset: q.offset.unwrap_or(0).max(0),
            },
        )
        .await?;
    let mut out = Vec::with_capacity(threads.len());
    for t in &threads {
        let snap = match thread_graph(&state, t) {
            Some(g) => g.graph.state(&t.thread_id, None).await?,
            None => None,
        };
        if let Some(filter) = &q.values {
            let values = snap.as_ref().map(|s| &s.values);
            if !filter
                .iter()
                .all(|(k, v)| values.and_then(|x| x.get(k)) == Some(v))
            {
                continue;
            }
        }
        out.push(thread_json(t, snap.as_ref()));
    }
    Ok(Json(Value::Array(out)))
}

/// `GET /threads/{id}`.
pub(crate) async fn get_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    let snap = match thread_graph(&state, &t) {
        Some(g) => g.graph.state(&id, None).await?,
        None => None,
    };
    Ok(Json(thread_json(&t, snap.as_ref())))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct PatchThread {
    metadata: Map<String, Value>,
}

/// `PATCH /threads/{id}`.
pub(crate) async fn patch_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    OptionalJson(p): OptionalJson<PatchThread>,
) -> ApiResult<Json<Value>> {
    let t = state
        .store
        .patch_thread(&user.id, &id, &Value::Object(p.metadata))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("thread `{id}`")))?;
    Ok(Json(thread_json(&t, None)))
}

/// `DELETE /threads/{id}`: the thread, its runs, events and checkpoints.
pub(crate) async fn delete_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let t = own_thread(&state, &user, &id).await?;
    for run in state.store.active_runs(&id).await? {
        state
            .runs
            .cancel(
                &run.run_id,
                CancelAction::Interrupt,
                CancelReason::UserCancelled,
            )
            .await?;
    }
    if let Some(g) = thread_graph(&state, &t) {
        g.graph.checkpointer().delete_thread(&id).await?;
        g.graph.forget(&id);
    }
    state.store.delete_thread(&user.id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /threads/{id}/copy`.
pub(crate) async fn copy_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    let new_id = uuid::Uuid::new_v4().to_string();
    if let Some(g) = thread_graph(&state, &t) {
        g.graph.checkpointer().copy_thread(&id, &new_id).await?;
    }
    let now = crate::store::now_ms();
    let copy = state
        .store
        .create_thread(
            Thread {
                thread_id: new_id,
                owner: user.id.clone(),
                metadata: t.metadata.clone(),
                status: if t.status == "busy" {
                    "idle".into()
                } else {
                    t.status.clone()
                },
                created_at_ms: now,
                updated_at_ms: now,
            },
            IfExists::Raise,
        )
        .await?;
    Ok(Json(thread_json(&copy, None)))
}

/// `GET /threads/{id}/state[/{checkpoint_id}]`.
pub(crate) async fn get_state(
    State(state): State<AppState>,
    user: User,
    Path(params): Path<Vec<(String, String)>>,
) -> ApiResult<Json<Value>> {
    let params: BTreeMap<String, String> = params.into_iter().collect();
    let id = params.get("thread_id").cloned().unwrap_or_default();
    let t = own_thread(&state, &user, &id).await?;
    let Some(g) = thread_graph(&state, &t) else {
        return Ok(Json(empty_state(&id)));
    };
    match g
        .graph
        .state(&id, params.get("checkpoint_id").map(String::as_str))
        .await?
    {
        Some(s) => Ok(Json(state_json(&id, &s))),
        None if params.contains_key("checkpoint_id") => {
            Err(ApiError::NotFound("checkpoint".into()))
        }
        None => Ok(Json(empty_state(&id))),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct StateAt {
    checkpoint: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
}

fn checkpoint_id_of(
    checkpoint: &Option<Map<String, Value>>,
    checkpoint_id: &Option<String>,
) -> Option<String> {
    checkpoint_id.clone().or_else(|| {
        checkpoint
            .as_ref()
            .and_then(|c| c.get("checkpoint_id"))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// `POST /threads/{id}/state/checkpoint`.
pub(crate) async fn get_state_at(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    OptionalJson(req): OptionalJson<StateAt>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    let g = thread_graph(&state, &t).ok_or_else(|| ApiError::NotFound("graph".into()))?;
    let cp = checkpoint_id_of(&req.checkpoint, &req.checkpoint_id);
    match g.graph.state(&id, cp.as_deref()).await? {
        Some(s) => Ok(Json(state_json(&id, &s))),
        None => Err(ApiError::NotFound("checkpoint".into())),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct UpdateState {
    values: Value,
    as_node: Option<String>,
    checkpoint: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
}

/// `POST /threads/{id}/state`: `update_state`.
pub(crate) async fn update_state(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateState>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    let g = thread_graph(&state, &t).ok_or_else(|| ApiError::NotFound("graph".into()))?;
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
    let new_id = g
        .graph
        .update_state(&id, cp.as_deref(), values, req.as_node.as_deref())
        .await?;
    Ok(Json(
        json!({"checkpoint": checkpoint_json(&id, &new_id), "configurable": checkpoint_json(&id, &new_id)}),
    ))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct HistoryQuery {
    limit: Option<usize>,
    before: Option<Value>,
    metadata: Option<Map<String, Value>>,
    checkpoint: Option<Map<String, Value>>,
}

async fn history_of(
    state: &AppState,
    user: &User,
    id: &str,
    q: HistoryQuery,
    default_limit: usize,
) -> ApiResult<Json<Value>> {
    let t = own_thread(state, user, id).await?;
    let Some(g) = thread_graph(state, &t) else {
        return Ok(Json(json!([])));
    };
    let before = match q.before {
        Some(Value::String(s)) => Some(s),
        Some(Value::Object(o)) => o
            .get("checkpoint_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    };
    let opts = ListOptions {
        before,
        limit: Some(q.limit.unwrap_or(default_limit).clamp(1, 1000)),
        filter: q.metadata.filter(|m| !m.is_empty()),
    };
    let snaps = g.graph.history(id, &opts).await?;
    Ok(Json(Value::Array(
        snaps.iter().map(|s| state_json(id, s)).collect(),
    )))
}

/// `POST /threads/{id}/history`.
pub(crate) async fn post_history(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    OptionalJson(q): OptionalJson<HistoryQuery>,
) -> ApiResult<Json<Value>> {
    history_of(&state, &user, &id, q, 10).await
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct HistoryParams {
    limit: Option<usize>,
    before: Option<String>,
}

/// `GET /threads/{id}/history`.
pub(crate) async fn get_history(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    Query(q): Query<HistoryParams>,
) -> ApiResult<Json<Value>> {
    history_of(
        &state,
        &user,
        &id,
        HistoryQuery {
            limit: q.limit,
            before: q.before.map(Value::String),
            ..Default::default()
        },
        10,
    )
    .await
}

// ---------- runs ----------

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct CommandBody {
    resume: Option<Value>,
    update: Option<Value>,
    goto: Option<Value>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
pub(crate) struct CreateRun {
    assistant_id: Option<String>,
    input: Option<Value>,
    command: Option<CommandBody>,
    checkpoint: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
    config: Option<Value>,
    context: Option<Map<String, Value>>,
    metadata: Option<Map<String, Value>>,
    stream_mode: Option<Value>,
    stream_subgraphs: bool,
    stream_resumable: bool,
    multitask_strategy: Option<MultitaskStrategy>,
    if_not_exists: Option<String>,
    on_disconnect: Option<OnDisconnect>,
    interrupt_before: Option<Value>,
    interrupt_after: Option<Value>,
}

/// The stream modes asked for (default `values`), as LangGraph names them.
fn requested_modes(v: &Option<Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => vec!["values".into()],
    }
}

fn engine_modes(modes: &[String]) -> Vec<StreamMode> {
    let mut out = Vec::new();
    for m in modes {
        match m.as_str() {
            "values" => out.push(StreamMode::Values),
            "updates" | "tasks" => out.push(StreamMode::Updates),
            "messages" | "messages-tuple" => out.push(StreamMode::Messages),
            "custom" => out.push(StreamMode::Custom),
            "debug" | "checkpoints" | "events" => {
                out.push(StreamMode::Debug);
                out.push(StreamMode::Values);
            }
            _ => {}
        }
    }
    out
}

fn goto_list(v: &Option<Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .or_else(|| x.get("node").and_then(Value::as_str).map(str::to_string))
            })
            .collect(),
        Some(Value::Object(o)) => o
            .get("node")
            .and_then(Value::as_str)
            .map(|s| vec![s.to_string()])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Creates a run from a LangGraph request body.
async fn start_run(
    state: &AppState,
    user: &User,
    thread_id: &str,
    req: &CreateRun,
) -> ApiResult<Run> {
    check_uuid(thread_id, "thread_id")?;
    if req.interrupt_before.is_some() || req.interrupt_after.is_some() {
        return Err(ApiError::Invalid(
            "interrupt_before / interrupt_after are not supported: call ctx.interrupt() in the node".into(),
        ));
    }
    let assistant_id = req
        .assistant_id
        .clone()
        .ok_or_else(|| ApiError::Invalid("assistant_id is required".into()))?;
    let entry = assistant(state, &assistant_id)?;
    match state.store.get_thread_any(thread_id).await? {
        Some(t) if t.owner != user.id => {
            return Err(ApiError::NotFound(format!("thread `{thread_id}`")))
        }
        Some(_) => {}
        None if req.if_not_exists.as_deref() == Some("create") => {
            let now = crate::store::now_ms();
            state
                .store
                .create_thread(
                    Thread {
                        thread_id: thread_id.to_string(),
                        owner: user.id.clone(),
                        metadata: json!({"graph_id": entry.graph_id, "assistant_id": entry.assistant_id}),
                        status: "idle".into(),
                        created_at_ms: now,
                        updated_at_ms: now,
                    },
                    IfExists::DoNothing,
                )
                .await?;
        }
        None => return Err(ApiError::NotFound(format!("thread `{thread_id}`"))),
    }
    let modes = requested_modes(&req.stream_mode);
    let mut context = req.context.clone().unwrap_or_default();
    context.insert("user_id".into(), user.id.clone().into());
    let recursion_limit = req
        .config
        .as_ref()
        .and_then(|c| c.get("recursion_limit"))
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let command = req.command.as_ref().map(|c| CommandSpec {
        resume: c.resume.clone().map(|value| Resumed { value }),
        update: c.update.clone(),
        goto: goto_list(&c.goto),
    });
    if let Some(c) = &command {
        if c.resume.is_some() {
            let pending = entry
                .graph
                .state(thread_id, None)
                .await?
                .map(|s| s.interrupts.len())
                .unwrap_or(0);
            if pending == 0 {
                return Err(ApiError::BadRequest(format!(
                    "thread `{thread_id}` has no pending interrupt to resume"
                )));
            }
        }
    }
    let spec = RunSpec {
        input: req.input.clone().filter(|v| !v.is_null()),
        command,
        checkpoint_id: checkpoint_id_of(&req.checkpoint, &req.checkpoint_id),
        stream_modes: engine_modes(&modes),
        recursion_limit,
        context,
        api: json!({"stream_mode": modes, "stream_subgraphs": req.stream_subgraphs, "stream_resumable": req.stream_resumable}),
    };
    let created = state
        .runs
        .create(NewRun {
            run_id: uuid::Uuid::now_v7().to_string(),
            thread_id: thread_id.to_string(),
            owner: user.id.clone(),
            assistant_id: entry.assistant_id.clone(),
            graph_id: entry.graph_id.clone(),
            kwargs: serde_json::to_value(spec).map_err(|e| ApiError::Internal(e.to_string()))?,
            metadata: Value::Object(req.metadata.clone().unwrap_or_default()),
            multitask_strategy: req.multitask_strategy.unwrap_or(MultitaskStrategy::Reject),
            idempotency_key: None,
        })
        .await?;
    Ok(created.run)
}

fn location(run: &Run) -> String {
    format!("/threads/{}/runs/{}", run.thread_id, run.run_id)
}

/// `POST /threads/{id}/runs`: a background run.
pub(crate) async fn create_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    let mut resp = Json(run_json(&run)).into_response();
    if let Ok(v) = location(&run).parse() {
        resp.headers_mut().insert("content-location", v);
    }
    Ok(resp)
}

/// The LangGraph SSE events of one run event.
async fn lg_events(
    state: &AppState,
    run: &Run,
    modes: &[String],
    e: &RunEvent,
    partial: &mut BTreeMap<String, String>,
) -> Vec<(String, Value)> {
    let want = |m: &str| modes.iter().any(|x| x == m);
    let mut out = Vec::new();
    let node_meta = |node: &str| json!({"langgraph_node": node, "langgraph_step": null, "run_id": run.run_id, "thread_id": run.thread_id});
    match &e.event {
        Event::Values { values, .. } if want("values") => {
            out.push(("values".into(), values.clone()))
        }
        Event::NodeFinished {
            node,
            update,
            task_id,
            ..
        } => {
            if want("updates") {
                out.push(("updates".into(), json!({ node.clone(): update })));
            }
            if want("tasks") {
                out.push(("tasks".into(), json!({"id": task_id, "name": node, "error": null, "interrupts": [], "result": update})));
            }
        }
        Event::NodeStarted { node, task_id, .. } if want("tasks") => {
            out.push((
                "tasks".into(),
                json!({"id": task_id, "name": node, "input": null, "triggers": []}),
            ));
        }
        Event::MessageDelta {
            node,
            message_id,
            delta,
        } => {
            if want("messages-tuple") {
                out.push((
                    "messages".into(),
                    json!([{"type": "AIMessageChunk", "content": delta, "id": message_id}, node_meta(node)]),
                ));
            }
            if want("messages") {
                let text = partial.entry(message_id.clone()).or_default();
                if text.is_empty() {
                    out.push((
                        "messages/metadata".into(),
                        json!({ message_id.clone(): {"metadata": node_meta(node)} }),
                    ));
                }
                text.push_str(delta);
                out.push((
                    "messages/partial".into(),
                    json!([{"type": "ai", "content": text.clone(), "id": message_id}]),
                ));
            }
        }
        Event::Custom { value, .. } if want("custom") => out.push(("custom".into(), value.clone())),
        Event::Status {
            node,
            message,
            details,
        } if want("custom") => {
            let mut v = json!({"type": "status", "node": node, "message": message});
            if let (Some(o), Some(d)) = (v.as_object_mut(), details.as_object()) {
                for (k, x) in d {
                    o.insert(k.clone(), x.clone());
                }
            }
            out.push(("custom".into(), v));
        }
        Event::Checkpoint {
            checkpoint_id,
            step,
            next,
        } if want("checkpoints") => {
            out.push(("checkpoints".into(), json!({"config": {"configurable": checkpoint_json(&run.thread_id, checkpoint_id)}, "metadata": {"step": step}, "next": next})));
        }
        Event::Interrupted { interrupts } => {
            let list: Vec<Value> = interrupts
                .iter()
                .map(|i| json!({"value": i.value, "id": i.id}))
                .collect();
            if want("values") {
                let mut values = match state.graphs.find(&run.graph_id) {
                    Some(g) => g
                        .graph
                        .state(&run.thread_id, None)
                        .await
                        .ok()
                        .flatten()
                        .map(|s| s.values)
                        .unwrap_or(json!({})),
                    None => json!({}),
                };
                if let Some(o) = values.as_object_mut() {
                    o.insert("__interrupt__".into(), Value::Array(list.clone()));
                }
                out.push(("values".into(), values));
            }
            if want("updates") {
                out.push(("updates".into(), json!({"__interrupt__": list})));
            }
        }
        Event::Failed { error, .. } => out.push((
            "error".into(),
            json!({"error": "RunError", "message": error}),
        )),
        _ => {}
    }
    if want("debug") && e.event.mode().is_some() {
        out.push((
            "debug".into(),
            json!({"type": "task", "timestamp": iso(crate::store::now_ms()), "step": null, "payload": e.event}),
        ));
    }
    out
}

/// A run's LangGraph event stream from `after` on (after a `metadata` event when starting).
fn lg_stream(
    state: AppState,
    run: Run,
    modes: Vec<String>,
    after: u64,
    guard_cancel: bool,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    struct Guard {
        state: AppState,
        run_id: String,
        armed: bool,
    }
    impl Drop for Guard {
        fn drop(&mut self) {
            if self.armed {
                let (runs, id) = (self.state.runs.clone(), self.run_id.clone());
                tokio::spawn(async move {
                    let _ = runs
                        .cancel(&id, CancelAction::Interrupt, CancelReason::Disconnect)
                        .await;
                });
            }
        }
    }
    let mut guard = Guard {
        state: state.clone(),
        run_id: run.run_id.clone(),
        armed: guard_cancel,
    };
    let head = if after == 0 {
        vec![Ok(SseEvent::default().event("metadata").data(
            json!({"run_id": run.run_id, "thread_id": run.thread_id, "attempt": 1}).to_string(),
        ))]
    } else {
        Vec::new()
    };
    let partial = std::sync::Arc::new(tokio::sync::Mutex::new(BTreeMap::new()));
    let events = state.runs.watch(&run.run_id, after);
    let body = events
        .then(move |e| {
            let (state, run, modes, partial) =
                (state.clone(), run.clone(), modes.clone(), partial.clone());
            async move {
                let mut p = partial.lock().await;
                let out = lg_events(&state, &run, &modes, &e, &mut p).await;
                (e.seq, e.event.is_terminal(), out)
            }
        })
        .flat_map(move |(seq, terminal, out)| {
            // Capture the whole guard (not just its flag): it lives as long as the stream.
            let g = &mut guard;
            if terminal {
                g.armed = false;
            }
            futures_util::stream::iter(
                out.into_iter()
                    .map(move |(name, data)| {
                        Ok(SseEvent::default()
                            .event(name)
                            .id(seq.to_string())
                            .data(data.to_string()))
                    })
                    .collect::<Vec<_>>(),
            )
        });
    futures_util::stream::iter(head).chain(body)
}

/// `POST /threads/{id}/runs/stream`.
pub(crate) async fn stream_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    let modes = requested_modes(&req.stream_mode);
    let cancel = req.on_disconnect == Some(OnDisconnect::Cancel);
    let loc = location(&run);
    Ok(sse_response(
        &state,
        lg_stream(state.clone(), run, modes, 0, cancel),
        &[
            ("content-location", loc.clone()),
            ("location", format!("{loc}/stream")),
        ],
    ))
}

/// Waits for a run to end (by watching its events).
async fn wait_for(state: &AppState, run: &Run) {
    let mut events = Box::pin(state.runs.watch(&run.run_id, 0));
    while events.next().await.is_some() {}
}

/// The values a finished run leaves, LangGraph style (`__interrupt__` / `__error__`).
async fn final_values(state: &AppState, run: &Run) -> ApiResult<Value> {
    let run = state
        .store
        .get_run_any(&run.run_id)
        .await?
        .unwrap_or_else(|| run.clone());
    let g = assistant(state, &run.graph_id)?;
    let snap = g.graph.state(&run.thread_id, None).await?;
    let mut values = snap.as_ref().map(|s| s.values.clone()).unwrap_or(json!({}));
    if let (Some(s), Some(o)) = (&snap, values.as_object_mut()) {
        if !s.interrupts.is_empty() {
            o.insert(
                "__interrupt__".into(),
                Value::Array(
                    s.interrupts
                        .iter()
                        .map(|i| json!({"value": i.value, "id": i.id}))
                        .collect(),
                ),
            );
        }
    }
    if run.status == RunState::Error {
        if let Some(o) = values.as_object_mut() {
            o.insert(
                "__error__".into(),
                json!({"error": "RunError", "message": run.error}),
            );
        }
    }
    Ok(values)
}

/// `POST /threads/{id}/runs/wait`.
pub(crate) async fn wait_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    wait_for(&state, &run).await;
    let mut resp = Json(final_values(&state, &run).await?).into_response();
    if let Ok(v) = location(&run).parse() {
        resp.headers_mut().insert("content-location", v);
    }
    Ok(resp)
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ListRuns {
    limit: Option<i64>,
    offset: Option<i64>,
    status: Option<String>,
}

/// `GET /threads/{id}/runs`.
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    Query(q): Query<ListRuns>,
) -> ApiResult<Json<Value>> {
    own_thread(&state, &user, &id).await?;
    let runs = state
        .store
        .list_runs(
            &id,
            q.limit.unwrap_or(10).clamp(1, 1000),
            q.offset.unwrap_or(0).max(0),
        )
        .await?;
    Ok(Json(Value::Array(
        runs.iter()
            .filter(|r| q.status.as_ref().is_none_or(|s| api_status(r.status) == s))
            .map(run_json)
            .collect(),
    )))
}

async fn own_run(state: &AppState, user: &User, thread_id: &str, run_id: &str) -> ApiResult<Run> {
    own_thread(state, user, thread_id).await?;
    state
        .store
        .get_run(&user.id, thread_id, run_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("run `{run_id}`")))
}

/// `GET /threads/{id}/runs/{run_id}`.
pub(crate) async fn get_run(
    State(state): State<AppState>,
    user: User,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(run_json(&own_run(&state, &user, &id, &run_id).await?)))
}

/// `DELETE /threads/{id}/runs/{run_id}` (not while it runs).
pub(crate) async fn delete_run(
    State(state): State<AppState>,
    user: User,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    if !run.status.is_final() {
        return Err(ApiError::Conflict {
            code: "run_active",
            message: "the run is still active; cancel it first".into(),
        });
    }
    state.store.delete_run(&run_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /threads/{id}/runs/{run_id}/join`: waits, then returns the thread's values.
pub(crate) async fn join_run(
    State(state): State<AppState>,
    user: User,
    Path((id, run_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    wait_for(&state, &run).await;
    Ok(Json(final_values(&state, &run).await?))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct JoinStream {
    stream_mode: Option<String>,
    cancel_on_disconnect: bool,
}

/// `GET /threads/{id}/runs/{run_id}/stream`: joins a run's stream; `Last-Event-ID` resumes
/// after that event (`-1` replays everything).
pub(crate) async fn join_stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<JoinStream>,
) -> ApiResult<Response> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    let modes = match q.stream_mode {
        Some(m) => m.split(',').map(str::to_string).collect(),
        None => run
            .kwargs
            .get("api")
            .and_then(|a| a.get("stream_mode"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_else(|| vec!["values".to_string()]),
    };
    let after = match last_event_id(&headers) {
        Some(id) if id == "-1" || id == "-" => 0,
        Some(id) => id
            .parse::<u64>()
            .map_err(|_| ApiError::BadRequest(format!("bad Last-Event-ID `{id}`")))?,
        None => 0,
    };
    Ok(sse_response(
        &state,
        lg_stream(state.clone(), run, modes, after, q.cancel_on_disconnect),
        &[],
    ))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CancelParams {
    wait: Option<bool>,
    action: Option<CancelAction>,
}

/// `POST /threads/{id}/runs/{run_id}/cancel` (idempotent).
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    user: User,
    Path((id, run_id)): Path<(String, String)>,
    Query(q): Query<CancelParams>,
) -> ApiResult<Response> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    let action = q.action.unwrap_or(CancelAction::Interrupt);
    state
        .runs
        .cancel(&run.run_id, action, CancelReason::UserCancelled)
        .await?;
    if q.wait.unwrap_or(false) {
        let _ = tokio::time::timeout(Duration::from_secs(30), wait_for(&state, &run)).await;
    }
    Ok((StatusCode::ACCEPTED, Json(json!({}))).into_response())
}
