//! The LangGraph Agent Server API shapes: assistants, threads, thread state and history,
//! runs (background, stream, wait, join, cancel; on a thread or stateless), as the official
//! `langgraph-sdk` clients (Python and JS, and the JS `useStream` hook) call them.
//!
//! SSE event ids are `seq * 1000 + n`: `seq` is the engine event's position in the run and
//! `n` the index of the SSE event made from it, so ids are unique, increasing and stable
//! across joins of the same run with the same stream modes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use palgraph::checkpoint::PruneStrategy;
use palgraph::dynamic::DynSnapshot;
use palgraph::{CancelReason, Event, InterruptInfo, ListOptions, StreamMode};
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

// ---------- small helpers ----------

/// Query parameters as sent; keys may repeat (`stream_mode=values&stream_mode=updates`), and
/// flags come as `1`/`0` (JS SDK) or `true`/`false` (Python SDK).
pub(crate) struct Params(Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)?;
        Ok(Params(pairs))
    }
}

impl Params {
    /// The last non-empty value of `key`.
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    }

    /// Every value of `key` (repeated keys and comma-separated lists).
    fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split(',').map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// A boolean flag.
    fn flag(&self, key: &str) -> ApiResult<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(Some(true)),
                "0" | "false" | "no" | "off" => Ok(Some(false)),
                _ => Err(ApiError::BadRequest(format!(
                    "query parameter `{key}` must be true or false, not `{v}`"
                ))),
            },
        }
    }
}

/// A 501 for the parts of the Agent Server API palgraph does not implement.
fn not_supported(what: &str) -> Response {
    (
        StatusCode::NOT_IMPLEMENTED,
        Json(json!({"detail": format!("{what} is not supported by palgraph"), "code": "not_supported"})),
    )
        .into_response()
}

fn with_header(mut resp: Response, name: &'static str, value: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
    resp
}

fn one_of(field: &str, value: Option<&str>, allowed: &[&str]) -> ApiResult<()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::Invalid(format!(
            "{field} must be one of {}, not `{v}`",
            allowed.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// Keeps only the `select`ed top-level fields of each object.
fn project(items: Vec<Value>, select: &Option<Vec<String>>) -> Vec<Value> {
    match select {
        Some(keys) if !keys.is_empty() => items
            .into_iter()
            .map(|v| match v {
                Value::Object(o) => Value::Object(
                    o.into_iter()
                        .filter(|(k, _)| keys.iter().any(|s| s == k))
                        .collect(),
                ),
                other => other,
            })
            .collect(),
        _ => items,
    }
}

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

fn interrupt_json(i: &InterruptInfo) -> Value {
    json!({"value": i.value, "id": i.id})
}

fn interrupts_by_task(snap: &DynSnapshot) -> Value {
    let mut out = Map::new();
    for i in &snap.interrupts {
        let list = out.entry(i.task_id.clone()).or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            a.push(interrupt_json(i));
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
        "values": snap.map(|s| s.values.clone()).unwrap_or_else(|| json!({})),
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
        "cancel_reason": r.cancel_reason,
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
                "interrupts": t.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
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
        "interrupts": s.interrupts.iter().map(interrupt_json).collect::<Vec<_>>(),
        "checkpoint_id": s.checkpoint_id,
        "parent_checkpoint_id": s.parent_checkpoint_id,
    })
}

fn empty_state(thread_id: &str) -> Value {
    json!({"values": {}, "next": [], "tasks": [], "checkpoint": null, "metadata": {"thread_id": thread_id},
           "created_at": null, "parent_checkpoint": null, "interrupts": []})
}

/// The graph a thread runs: the one its metadata names (every run sets it), or the only
/// registered graph.
fn thread_graph<'a>(state: &'a AppState, t: &Thread) -> Option<&'a GraphEntry> {
    match t.metadata.get("graph_id").and_then(Value::as_str) {
        Some(g) => state.graphs.find(g),
        None => {
            let mut all = state.graphs.all();
            match (all.next(), all.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        }
    }
}

async fn thread_snapshot(state: &AppState, t: &Thread) -> ApiResult<Option<DynSnapshot>> {
    Ok(match thread_graph(state, t) {
        Some(g) => g.graph.state(&t.thread_id, None).await?,
        None => None,
    })
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
    select: Option<Vec<String>>,
    sort_by: Option<String>,
    sort_order: Option<String>,
}

fn matching_assistants<'a>(
    state: &'a AppState,
    q: &'a AssistantSearch,
) -> impl Iterator<Item = &'a GraphEntry> + 'a {
    state
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
}

/// `POST /assistants/search`.
pub(crate) async fn search_assistants(
    State(state): State<AppState>,
    _user: User,
    OptionalJson(q): OptionalJson<AssistantSearch>,
) -> ApiResult<Response> {
    one_of(
        "sort_by",
        q.sort_by.as_deref(),
        &[
            "assistant_id",
            "graph_id",
            "name",
            "created_at",
            "updated_at",
        ],
    )?;
    one_of("sort_order", q.sort_order.as_deref(), &["asc", "desc"])?;
    let limit = q.limit.unwrap_or(10).clamp(1, 1000);
    let offset = q.offset.unwrap_or(0);
    let mut all: Vec<&GraphEntry> = matching_assistants(&state, &q).collect();
    match q.sort_by.as_deref() {
        Some("assistant_id") => all.sort_by(|a, b| a.assistant_id.cmp(&b.assistant_id)),
        _ => all.sort_by(|a, b| a.graph_id.cmp(&b.graph_id)),
    }
    if q.sort_order.as_deref() == Some("desc") {
        all.reverse();
    }
    let total = all.len();
    let page: Vec<Value> = all
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(assistant_json)
        .collect();
    let resp = Json(Value::Array(project(page, &q.select))).into_response();
    Ok(if offset + limit < total {
        with_header(resp, "x-pagination-next", &(offset + limit).to_string())
    } else {
        resp
    })
}

/// `POST /assistants/count`.
pub(crate) async fn count_assistants(
    State(state): State<AppState>,
    _user: User,
    OptionalJson(q): OptionalJson<AssistantSearch>,
) -> Json<Value> {
    Json(json!(matching_assistants(&state, &q).count()))
}

fn assistant(state: &AppState, id: &str) -> ApiResult<GraphEntry> {
    state
        .graphs
        .find(id)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(format!("assistant `{id}`")))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CreateAssistant {
    graph_id: Option<String>,
    assistant_id: Option<String>,
    if_exists: Option<String>,
}

/// `POST /assistants`: palgraph serves one assistant per graph; asking for an existing one
/// with `if_exists: do_nothing` returns it.
pub(crate) async fn create_assistant(
    State(state): State<AppState>,
    _user: User,
    ApiJson(req): ApiJson<CreateAssistant>,
) -> ApiResult<Response> {
    one_of(
        "if_exists",
        req.if_exists.as_deref(),
        &["raise", "do_nothing"],
    )?;
    let graph = req
        .graph_id
        .as_deref()
        .ok_or_else(|| ApiError::Invalid("graph_id is required".into()))?;
    let e = assistant(&state, graph)?;
    let existing = req
        .assistant_id
        .as_deref()
        .is_none_or(|a| a == e.assistant_id || a == e.graph_id);
    if existing && req.if_exists.as_deref() == Some("do_nothing") {
        return Ok(Json(assistant_json(&e)).into_response());
    }
    Ok(not_supported(
        "creating assistants (each graph has one default assistant; use its graph_id or assistant_id)",
    ))
}

/// `PATCH|DELETE /assistants/{id}`.
pub(crate) async fn change_assistant(_user: User) -> Response {
    not_supported("changing or deleting assistants")
}

/// `GET /assistants/{id}`.
pub(crate) async fn get_assistant(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(assistant_json(&assistant(&state, &id)?)))
}

/// `POST /assistants/{id}/versions`: the one version.
pub(crate) async fn assistant_versions(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(json!([assistant_json(&assistant(&state, &id)?)])))
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

/// `GET /assistants/{id}/subgraphs[/{namespace}]`: palgraph graphs have no subgraphs.
pub(crate) async fn assistant_subgraphs(
    State(state): State<AppState>,
    _user: User,
    Path(params): Path<Vec<(String, String)>>,
) -> ApiResult<Json<Value>> {
    let id = params
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    assistant(&state, &id)?;
    Ok(Json(json!({})))
}

/// The state schema: the registered one when it describes fields, otherwise one listing the
/// state's fields (with their reducers).
fn state_schema(e: &GraphEntry) -> Value {
    if e.state_schema.get("properties").is_some() {
        return (*e.state_schema).clone();
    }
    let props: Map<String, Value> = e
        .graph
        .fields()
        .iter()
        .map(|f| {
            let mut s = if f.name == "messages" {
                json!({"type": "array", "items": {"type": "object"}})
            } else {
                json!({})
            };
            s["description"] = json!(format!("reducer: {}", f.reducer));
            (f.name.to_string(), s)
        })
        .collect();
    json!({"title": e.graph_id, "type": "object", "properties": props})
}

/// `GET /assistants/{id}/schemas`. A run's `input` is an update of the state, so the input
/// schema is the state's with nothing required.
pub(crate) async fn assistant_schemas(
    State(state): State<AppState>,
    _user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let e = assistant(&state, &id)?;
    let state_schema = state_schema(&e);
    let mut input_schema = state_schema.clone();
    if let Some(o) = input_schema.as_object_mut() {
        o.remove("required");
    }
    Ok(Json(json!({
        "graph_id": e.graph_id,
        "input_schema": input_schema,
        "output_schema": state_schema,
        "state_schema": state_schema,
        "config_schema": {"type": "object", "properties": {}},
        "context_schema": {"type": "object", "properties": {}},
    })))
}

// ---------- threads ----------

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct Superstep {
    updates: Vec<SuperstepUpdate>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct SuperstepUpdate {
    values: Value,
    command: Option<Value>,
    as_node: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CreateThread {
    thread_id: Option<String>,
    metadata: Option<Map<String, Value>>,
    if_exists: Option<IfExists>,
    graph_id: Option<String>,
    supersteps: Option<Vec<Superstep>>,
    ttl: Option<Value>,
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
    let mut metadata = req.metadata.unwrap_or_default();
    if let Some(g) = req.graph_id {
        metadata.insert("graph_id".into(), g.into());
    }
    let _ = req.ttl;
    let steps = req.supersteps.unwrap_or_default();
    let graph = match metadata.get("graph_id").and_then(Value::as_str) {
        Some(g) => Some(assistant(&state, g)?),
        None => None,
    };
    if let Some(g) = &graph {
        metadata
            .entry("assistant_id")
            .or_insert_with(|| g.assistant_id.clone().into());
    }
    if !steps.is_empty() {
        if graph.is_none() {
            return Err(ApiError::Invalid(
                "supersteps need metadata.graph_id (the graph whose state they write)".into(),
            ));
        }
        if steps
            .iter()
            .flat_map(|s| &s.updates)
            .any(|u| u.command.is_some())
        {
            return Err(ApiError::Invalid(
                "supersteps with a command are not supported; give values and as_node".into(),
            ));
        }
    }
    let now = crate::store::now_ms();
    let existing = state.store.get_thread_any(&thread_id).await?;
    if let Some(existing) = &existing {
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
                thread_id: thread_id.clone(),
                owner: user.id.clone(),
                metadata: Value::Object(metadata),
                status: "idle".into(),
                created_at_ms: now,
                updated_at_ms: now,
            },
            req.if_exists.unwrap_or_default(),
        )
        .await?;
    if existing.is_some() {
        let snap = thread_snapshot(&state, &t).await?;
        return Ok(Json(thread_json(&t, snap.as_ref())));
    }
    if let Some(g) = &graph {
        for u in steps.iter().flat_map(|s| &s.updates) {
            let values = if u.values.is_null() {
                json!({})
            } else {
                u.values.clone()
            };
            if let Err(e) = g
                .graph
                .update_state(&thread_id, None, values, u.as_node.as_deref())
                .await
            {
                // Nothing of a refused request stays.
                let _ = g.graph.checkpointer().delete_thread(&thread_id).await;
                g.graph.forget(&thread_id);
                let _ = state.store.delete_thread(&user.id, &thread_id).await;
                return Err(e.into());
            }
        }
    }
    let snap = thread_snapshot(&state, &t).await?;
    Ok(Json(thread_json(&t, snap.as_ref())))
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
    sort_by: Option<String>,
    sort_order: Option<String>,
    select: Option<Vec<String>>,
    extract: Option<Map<String, Value>>,
}

const THREAD_STATUSES: [&str; 4] = ["idle", "busy", "interrupted", "error"];

fn check_search(q: &SearchThreads) -> ApiResult<()> {
    one_of("status", q.status.as_deref(), &THREAD_STATUSES)?;
    one_of(
        "sort_by",
        q.sort_by.as_deref(),
        &[
            "thread_id",
            "status",
            "created_at",
            "updated_at",
            "state_updated_at",
        ],
    )?;
    one_of("sort_order", q.sort_order.as_deref(), &["asc", "desc"])?;
    if q.extract.as_ref().is_some_and(|e| !e.is_empty()) {
        return Err(ApiError::Invalid(
            "extract is not supported; use select or read the thread's values".into(),
        ));
    }
    Ok(())
}

/// Every one of the owner's threads the store's filters match (pages of 1000).
async fn all_threads(state: &AppState, user: &User, q: &SearchThreads) -> ApiResult<Vec<Thread>> {
    let mut out = Vec::new();
    loop {
        let got = state
            .store
            .search_threads(
                &user.id,
                &ThreadQuery {
                    metadata: q.metadata.clone(),
                    status: q.status.clone(),
                    ids: q.ids.clone(),
                    limit: 1000,
                    offset: out.len() as i64,
                },
            )
            .await?;
        let n = got.len();
        out.extend(got);
        if n < 1000 {
            return Ok(out);
        }
    }
}

/// Whether a thread's values match the `values` filter.
fn values_match(filter: &Option<Map<String, Value>>, snap: Option<&DynSnapshot>) -> bool {
    filter.as_ref().is_none_or(|f| {
        let values = snap.map(|s| &s.values);
        f.iter()
            .all(|(k, v)| values.and_then(|x| x.get(k)) == Some(v))
    })
}

/// The owner's threads matching `q`, as JSON, in the requested order and page.
async fn find_threads(state: &AppState, user: &User, q: &SearchThreads) -> ApiResult<Vec<Value>> {
    check_search(q)?;
    let limit = q.limit.unwrap_or(10).clamp(1, 1000) as usize;
    let offset = q.offset.unwrap_or(0).max(0) as usize;
    let filter_values = q.values.as_ref().is_some_and(|v| !v.is_empty());
    let default_order = matches!(q.sort_by.as_deref(), None | Some("updated_at"))
        && q.sort_order.as_deref() != Some("asc");
    if default_order && !filter_values {
        // The store pages in this order itself.
        let threads = state
            .store
            .search_threads(
                &user.id,
                &ThreadQuery {
                    metadata: q.metadata.clone(),
                    status: q.status.clone(),
                    ids: q.ids.clone(),
                    limit: limit as i64,
                    offset: offset as i64,
                },
            )
            .await?;
        let mut out = Vec::with_capacity(threads.len());
        for t in &threads {
            let snap = thread_snapshot(state, t).await?;
            out.push(thread_json(t, snap.as_ref()));
        }
        return Ok(out);
    }
    // Another order or a values filter: every matching thread first.
    let needs_state = filter_values || q.sort_by.as_deref() == Some("state_updated_at");
    let mut rows: Vec<(Thread, Option<Option<DynSnapshot>>)> = Vec::new();
    for t in all_threads(state, user, q).await? {
        if needs_state {
            let snap = thread_snapshot(state, &t).await?;
            if values_match(&q.values, snap.as_ref()) {
                rows.push((t, Some(snap)));
            }
        } else {
            rows.push((t, None));
        }
    }
    let key = |t: &Thread, snap: &Option<Option<DynSnapshot>>| -> String {
        match q.sort_by.as_deref() {
            Some("thread_id") => t.thread_id.clone(),
            Some("status") => t.status.clone(),
            Some("created_at") => format!("{:020}", t.created_at_ms),
            Some("state_updated_at") => format!(
                "{:020}",
                snap.as_ref()
                    .and_then(|s| s.as_ref())
                    .map(|s| s.created_at_ms)
                    .unwrap_or(t.updated_at_ms)
            ),
            _ => format!("{:020}", t.updated_at_ms),
        }
    };
    rows.sort_by_cached_key(|(t, snap)| key(t, snap));
    if q.sort_order.as_deref() != Some("asc") {
        rows.reverse();
    }
    let mut out = Vec::new();
    for (t, snap) in rows.into_iter().skip(offset).take(limit) {
        let snap = match snap {
            Some(s) => s,
            None => thread_snapshot(state, &t).await?,
        };
        out.push(thread_json(&t, snap.as_ref()));
    }
    Ok(out)
}

/// `POST /threads/search`.
pub(crate) async fn search_threads(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchThreads>,
) -> ApiResult<Json<Value>> {
    let found = find_threads(&state, &user, &q).await?;
    Ok(Json(Value::Array(project(found, &q.select))))
}

/// `POST /threads/count`.
pub(crate) async fn count_threads(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchThreads>,
) -> ApiResult<Json<Value>> {
    check_search(&q)?;
    let threads = all_threads(&state, &user, &q).await?;
    let mut n = 0usize;
    for t in &threads {
        if q.values.is_none() || values_match(&q.values, thread_snapshot(&state, t).await?.as_ref())
        {
            n += 1;
        }
    }
    Ok(Json(json!(n)))
}

/// `GET /threads/{id}`.
pub(crate) async fn get_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    let snap = thread_snapshot(&state, &t).await?;
    Ok(Json(thread_json(&t, snap.as_ref())))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct PatchThread {
    metadata: Map<String, Value>,
    ttl: Option<Value>,
}

/// `PATCH /threads/{id}`: merges metadata.
pub(crate) async fn patch_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    OptionalJson(p): OptionalJson<PatchThread>,
) -> ApiResult<Json<Value>> {
    let _ = p.ttl;
    if let Some(g) = p.metadata.get("graph_id") {
        let t = own_thread(&state, &user, &id).await?;
        if t.metadata.get("graph_id").is_some_and(|old| old != g) {
            return Err(ApiError::Invalid(
                "metadata.graph_id is set by the thread's runs and cannot be changed".into(),
            ));
        }
    }
    let t = state
        .store
        .patch_thread(&user.id, &id, &Value::Object(p.metadata))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("thread `{id}`")))?;
    let snap = thread_snapshot(&state, &t).await?;
    Ok(Json(thread_json(&t, snap.as_ref())))
}

/// Deletes a thread with its runs, events and checkpoints (its active runs are cancelled).
async fn remove_thread(state: &AppState, user: &User, t: &Thread) -> ApiResult<()> {
    for run in state.store.active_runs(&t.thread_id).await? {
        state
            .runs
            .cancel(
                &run.run_id,
                CancelAction::Interrupt,
                CancelReason::UserCancelled,
            )
            .await?;
    }
    if let Some(g) = thread_graph(state, t) {
        g.graph.checkpointer().delete_thread(&t.thread_id).await?;
        g.graph.forget(&t.thread_id);
    }
    state.store.delete_thread(&user.id, &t.thread_id).await?;
    Ok(())
}

/// `DELETE /threads/{id}`: the thread, its runs, events and checkpoints.
pub(crate) async fn delete_thread(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let t = own_thread(&state, &user, &id).await?;
    remove_thread(&state, &user, &t).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct PruneThreads {
    thread_ids: Vec<String>,
    strategy: Option<String>,
}

/// `POST /threads/prune`: deletes threads, or keeps only their latest checkpoint.
pub(crate) async fn prune_threads(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<PruneThreads>,
) -> ApiResult<Json<Value>> {
    one_of(
        "strategy",
        req.strategy.as_deref(),
        &["delete", "keep_latest"],
    )?;
    let mut threads = Vec::new();
    for id in &req.thread_ids {
        check_uuid(id, "thread_id")?;
        if let Some(t) = state.store.get_thread(&user.id, id).await? {
            threads.push(t);
        }
    }
    let keep_latest = req.strategy.as_deref() == Some("keep_latest");
    for t in &threads {
        if keep_latest {
            if let Some(g) = thread_graph(&state, t) {
                g.graph
                    .checkpointer()
                    .prune(&t.thread_id, PruneStrategy::KeepLatest)
                    .await?;
                g.graph.forget(&t.thread_id);
            }
        } else {
            remove_thread(&state, &user, t).await?;
        }
    }
    Ok(Json(json!({"pruned_count": threads.len()})))
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
    let snap = thread_snapshot(&state, &copy).await?;
    Ok(Json(thread_json(&copy, snap.as_ref())))
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
        None if params.contains_key("checkpoint_id") => Err(ApiError::NotFound(format!(
            "checkpoint `{}`",
            params["checkpoint_id"]
        ))),
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
    checkpoint_id.clone().filter(|s| !s.is_empty()).or_else(|| {
        checkpoint
            .as_ref()
            .and_then(|c| c.get("checkpoint_id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

/// A subgraph namespace asked for (palgraph graphs have none).
fn subgraph_ns(checkpoint: &Option<Map<String, Value>>) -> Option<&str> {
    checkpoint
        .as_ref()
        .and_then(|c| c.get("checkpoint_ns"))
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

/// `POST /threads/{id}/state/checkpoint`.
pub(crate) async fn get_state_at(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    OptionalJson(req): OptionalJson<StateAt>,
) -> ApiResult<Json<Value>> {
    let t = own_thread(&state, &user, &id).await?;
    if let Some(ns) = subgraph_ns(&req.checkpoint) {
        return Err(ApiError::NotFound(format!("subgraph `{ns}`")));
    }
    let Some(g) = thread_graph(&state, &t) else {
        return Ok(Json(empty_state(&id)));
    };
    let cp = checkpoint_id_of(&req.checkpoint, &req.checkpoint_id);
    match g.graph.state(&id, cp.as_deref()).await? {
        Some(s) => Ok(Json(state_json(&id, &s))),
        None if cp.is_none() => Ok(Json(empty_state(&id))),
        None => Err(ApiError::NotFound(format!(
            "checkpoint `{}`",
            cp.unwrap_or_default()
        ))),
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
    let g = thread_graph(&state, &t).ok_or_else(|| {
        ApiError::Invalid(format!(
            "thread `{id}` has no graph yet: run it once, or create it with metadata.graph_id"
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
    Ok(Json(
        json!({"checkpoint": checkpoint_json(&id, &new_id), "configurable": checkpoint_json(&id, &new_id)}),
    ))
}

/// `PATCH /threads/{id}/state` (checkpoint metadata).
pub(crate) async fn patch_state(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    own_thread(&state, &user, &id).await?;
    Ok(not_supported(
        "changing a checkpoint's metadata (checkpoints are immutable)",
    ))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct HistoryQuery {
    limit: Option<usize>,
    before: Option<Value>,
    metadata: Option<Map<String, Value>>,
    checkpoint: Option<Map<String, Value>>,
    select: Option<Vec<String>>,
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
    if subgraph_ns(&q.checkpoint).is_some() {
        return Ok(Json(json!([])));
    }
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
        limit: Some(q.limit.unwrap_or(default_limit).clamp(1, 1000)),
        filter: q.metadata.filter(|m| !m.is_empty()),
    };
    let snaps = g.graph.history(id, &opts).await?;
    let list: Vec<Value> = snaps.iter().map(|s| state_json(id, s)).collect();
    Ok(Json(Value::Array(project(list, &q.select))))
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

/// `GET /threads/{id}/history?limit=&before=`.
pub(crate) async fn get_history(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
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
        10,
    )
    .await
}

// ---------- runs: requests ----------

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
    stream_subgraphs: Option<bool>,
    stream_resumable: Option<bool>,
    multitask_strategy: Option<MultitaskStrategy>,
    if_not_exists: Option<String>,
    on_disconnect: Option<OnDisconnect>,
    on_completion: Option<String>,
    interrupt_before: Option<Value>,
    interrupt_after: Option<Value>,
    after_seconds: Option<f64>,
    webhook: Option<String>,
    durability: Option<String>,
    checkpoint_during: Option<bool>,
    strict_resume: Option<bool>,
}

/// The stream modes the SDKs may ask for (`tools` and `lifecycle` produce nothing here:
/// palgraph graphs have no LangChain tools and no subgraphs).
const STREAM_MODES: [&str; 11] = [
    "values",
    "messages",
    "messages-tuple",
    "updates",
    "custom",
    "tasks",
    "checkpoints",
    "debug",
    "events",
    "tools",
    "lifecycle",
];

/// The stream modes asked for (default `values`), validated.
fn parse_modes(v: &Option<Value>) -> ApiResult<Vec<String>> {
    let asked: Vec<String> = match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::Invalid(format!("stream_mode entries must be strings, not {x}"))
                })
            })
            .collect::<ApiResult<_>>()?,
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "stream_mode must be a string or a list of strings, not {other}"
            )))
        }
    };
    checked_modes(asked)
}

fn checked_modes(asked: Vec<String>) -> ApiResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for m in asked {
        if !STREAM_MODES.contains(&m.as_str()) {
            return Err(ApiError::Invalid(format!(
                "unknown stream_mode `{m}`; one of {}",
                STREAM_MODES.join(", ")
            )));
        }
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        out.push("values".into());
    }
    Ok(out)
}

/// The modes a run was created with.
fn run_modes(run: &Run) -> Vec<String> {
    run.kwargs
        .get("api")
        .and_then(|a| a.get("stream_mode"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .filter(|m: &Vec<String>| !m.is_empty())
        .unwrap_or_else(|| vec!["values".to_string()])
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

/// `goto` as node names (a `Send` names its node; its input is not supported).
fn goto_list(v: &Option<Value>) -> ApiResult<Vec<String>> {
    fn one(x: &Value) -> ApiResult<String> {
        match x {
            Value::String(s) => Ok(s.clone()),
            Value::Object(o) => {
                if o.get("input").is_some_and(|i| !i.is_null()) {
                    return Err(ApiError::Invalid(
                        "command.goto: a Send with input is not supported; update the state and go to the node".into(),
                    ));
                }
                o.get("node")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::Invalid("command.goto: a Send needs a node".into()))
            }
            other => Err(ApiError::Invalid(format!(
                "command.goto must be a node name, a Send or a list of them, not {other}"
            ))),
        }
    }
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(one).collect(),
        Some(x) => Ok(vec![one(x)?]),
    }
}

/// Whether a key looks like an interrupt id (32 hex digits).
fn looks_like_interrupt_id(k: &str) -> bool {
    k.len() == 32 && k.chars().all(|c| c.is_ascii_hexdigit())
}

/// Checks a resume against the pending interrupts: a map of interrupt ids answers them by
/// id (every id must be pending); anything else answers the only pending interrupt.
fn check_resume(value: &Value, pending: &[InterruptInfo], thread_id: &str) -> ApiResult<()> {
    if pending.is_empty() {
        return Err(ApiError::BadRequest(format!(
            "thread `{thread_id}` has no pending interrupt to resume"
        )));
    }
    if let Value::Object(map) = value {
        let pending_ids: HashSet<&str> = pending.iter().map(|i| i.id.as_str()).collect();
        if !map.is_empty() && map.keys().all(|k| pending_ids.contains(k.as_str())) {
            return Ok(());
        }
        if !map.is_empty() && map.keys().all(|k| looks_like_interrupt_id(k)) {
            let unknown: Vec<&String> = map
                .keys()
                .filter(|k| !pending_ids.contains(k.as_str()))
                .collect();
            return Err(ApiError::BadRequest(format!(
                "unknown interrupt id(s) {unknown:?}: thread `{thread_id}` waits on {:?}",
                pending_ids
            )));
        }
    }
    if pending.len() > 1 {
        return Err(ApiError::BadRequest(format!(
            "thread `{thread_id}` has {} pending interrupts: resume with a map of interrupt id to value",
            pending.len()
        )));
    }
    Ok(())
}

/// The checkpoint a request forks from: `checkpoint_id`, `checkpoint.checkpoint_id` or
/// `config.configurable.checkpoint_id`.
fn fork_of(req: &CreateRun) -> Option<String> {
    checkpoint_id_of(&req.checkpoint, &req.checkpoint_id).or_else(|| {
        req.config
            .as_ref()
            .and_then(|c| c.get("configurable"))
            .and_then(|c| c.get("checkpoint_id"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    })
}

/// Validates everything a run request says that does not depend on the thread.
fn check_request(state: &AppState, req: &CreateRun) -> ApiResult<(GraphEntry, Vec<String>)> {
    let assistant_id = req
        .assistant_id
        .as_deref()
        .ok_or_else(|| ApiError::Invalid("assistant_id is required".into()))?;
    let modes = parse_modes(&req.stream_mode)?;
    let non_empty = |v: &Option<Value>| match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    if non_empty(&req.interrupt_before) || non_empty(&req.interrupt_after) {
        return Err(ApiError::Invalid(
            "interrupt_before / interrupt_after are not supported: call ctx.interrupt() in the node".into(),
        ));
    }
    if req.after_seconds.is_some_and(|s| s > 0.0) {
        return Err(ApiError::Invalid(
            "after_seconds is not supported: create the run when it should start".into(),
        ));
    }
    if req.webhook.as_deref().is_some_and(|w| !w.is_empty()) {
        return Err(ApiError::Invalid("webhooks are not supported".into()));
    }
    one_of(
        "if_not_exists",
        req.if_not_exists.as_deref(),
        &["reject", "create"],
    )?;
    one_of(
        "on_completion",
        req.on_completion.as_deref(),
        &["delete", "keep"],
    )?;
    one_of(
        "durability",
        req.durability.as_deref(),
        &["sync", "async", "exit"],
    )?;
    let _ = (req.checkpoint_during, req.strict_resume);
    if let Some(c) = req.config.as_ref() {
        if !c.is_object() && !c.is_null() {
            return Err(ApiError::Invalid("config must be an object".into()));
        }
        if let Some(r) = c.get("recursion_limit").filter(|r| !r.is_null()) {
            if r.as_u64().is_none_or(|n| n == 0) {
                return Err(ApiError::Invalid(format!(
                    "config.recursion_limit must be a positive integer, not {r}"
                )));
            }
        }
    }
    let entry = assistant(state, assistant_id)?;
    if let Some(c) = &req.command {
        let has_input = req.input.as_ref().is_some_and(|v| !v.is_null());
        if has_input {
            return Err(ApiError::Invalid(
                "give either input or command, not both".into(),
            ));
        }
        let goto = goto_list(&c.goto)?;
        let nodes = entry.graph.nodes();
        if let Some(bad) = goto.iter().find(|g| !nodes.contains(g)) {
            return Err(ApiError::Invalid(format!(
                "command.goto: graph `{}` has no node `{bad}`",
                entry.graph_id
            )));
        }
        let has_update = c.update.as_ref().is_some_and(|u| !u.is_null());
        if c.resume.is_some() && (has_update || !goto.is_empty()) {
            return Err(ApiError::Invalid(
                "command.resume cannot be combined with update or goto in palgraph: resume first, then send the update".into(),
            ));
        }
        if let Some(Value::Array(_)) = &c.update {
            return Err(ApiError::Invalid(
                "command.update must be an object of state fields".into(),
            ));
        }
    }
    Ok((entry, modes))
}

/// Creates a run from a LangGraph request body; refuses bad input before changing anything.
async fn start_run(
    state: &AppState,
    user: &User,
    thread_id: &str,
    req: &CreateRun,
) -> ApiResult<Run> {
    check_uuid(thread_id, "thread_id")?;
    let (entry, modes) = check_request(state, req)?;
    let existing = match state.store.get_thread_any(thread_id).await? {
        Some(t) if t.owner != user.id => {
            return Err(ApiError::NotFound(format!("thread `{thread_id}`")))
        }
        Some(t) => Some(t),
        None if req.if_not_exists.as_deref() == Some("create") => None,
        None => return Err(ApiError::NotFound(format!("thread `{thread_id}`"))),
    };
    // A thread keeps the graph whose state it holds.
    if let Some(t) = &existing {
        if let Some(other) = t
            .metadata
            .get("graph_id")
            .and_then(Value::as_str)
            .filter(|g| *g != entry.graph_id)
            .and_then(|g| state.graphs.find(g))
        {
            let has_state = other.graph.state(thread_id, None).await?.is_some();
            let active = state
                .store
                .active_runs(thread_id)
                .await?
                .iter()
                .any(|r| r.graph_id != entry.graph_id);
            if has_state || active {
                return Err(ApiError::Conflict {
                    code: "graph_mismatch",
                    message: format!(
                        "thread `{thread_id}` holds the state of graph `{}`; run `{}` on a new thread",
                        other.graph_id, entry.graph_id
                    ),
                });
            }
        }
    }
    let head = match &existing {
        Some(_) => entry.graph.state(thread_id, None).await?,
        None => None,
    };
    let fork = fork_of(req);
    if let Some(cp) = &fork {
        let found = match &existing {
            Some(_) => entry.graph.state(thread_id, Some(cp)).await?.is_some(),
            None => false,
        };
        if !found {
            return Err(ApiError::NotFound(format!(
                "checkpoint `{cp}` of thread `{thread_id}`"
            )));
        }
    }
    let command = match &req.command {
        Some(c) => {
            if let Some(value) = &c.resume {
                if fork
                    .as_ref()
                    .is_some_and(|f| head.as_ref().is_none_or(|h| &h.checkpoint_id != f))
                {
                    return Err(ApiError::Invalid(
                        "a resume answers the thread's latest checkpoint; do not give an older checkpoint".into(),
                    ));
                }
                let pending = head
                    .as_ref()
                    .map(|h| h.interrupts.as_slice())
                    .unwrap_or(&[]);
                check_resume(value, pending, thread_id)?;
            }
            Some(CommandSpec {
                resume: c.resume.clone().map(|value| Resumed { value }),
                update: c.update.clone().filter(|u| !u.is_null()),
                goto: goto_list(&c.goto)?,
            })
        }
        None => None,
    };
    if existing.is_none() {
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
    let mut context = req.context.clone().unwrap_or_default();
    context.insert("user_id".into(), user.id.clone().into());
    let recursion_limit = req
        .config
        .as_ref()
        .and_then(|c| c.get("recursion_limit"))
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let spec = RunSpec {
        input: req.input.clone().filter(|v| !v.is_null()),
        command,
        checkpoint_id: fork,
        stream_modes: engine_modes(&modes),
        recursion_limit,
        context,
        api: json!({
            "stream_mode": modes,
            "stream_subgraphs": req.stream_subgraphs.unwrap_or(false),
            "stream_resumable": req.stream_resumable.unwrap_or(false),
            "config": req.config,
        }),
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
    // LangGraph keeps the graph and assistant of a thread's runs in its metadata (clients
    // find their threads by `metadata.graph_id`).
    if let Some(t) = &existing {
        let same = t.metadata.get("graph_id").and_then(Value::as_str) == Some(&entry.graph_id)
            && t.metadata.get("assistant_id").and_then(Value::as_str) == Some(&entry.assistant_id);
        if !same {
            state
                .store
                .patch_thread(
                    &user.id,
                    thread_id,
                    &json!({"graph_id": entry.graph_id, "assistant_id": entry.assistant_id}),
                )
                .await?;
        }
    }
    Ok(created.run)
}

/// A stateless run: on a new thread, deleted when the run ends unless
/// `on_completion: keep`.
async fn start_stateless(state: &AppState, user: &User, req: &CreateRun) -> ApiResult<(Run, bool)> {
    if fork_of(req).is_some() {
        return Err(ApiError::Invalid(
            "a stateless run has no checkpoint to start from; run on a thread to fork".into(),
        ));
    }
    if req.command.as_ref().is_some_and(|c| c.resume.is_some()) {
        return Err(ApiError::Invalid(
            "a stateless run has no interrupt to resume; run on a thread".into(),
        ));
    }
    let mut req = req.clone();
    req.if_not_exists = Some("create".into());
    let thread_id = uuid::Uuid::new_v4().to_string();
    let run = start_run(state, user, &thread_id, &req).await?;
    Ok((run, req.on_completion.as_deref() != Some("keep")))
}

fn location(run: &Run) -> String {
    format!("/threads/{}/runs/{}", run.thread_id, run.run_id)
}

fn created_response(run: &Run) -> Response {
    with_header(
        Json(run_json(run)).into_response(),
        "content-location",
        &location(run),
    )
}

/// `POST /threads/{id}/runs`: a background run.
pub(crate) async fn create_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    Ok(created_response(&run))
}

/// `POST /runs`: a background stateless run.
pub(crate) async fn create_stateless_run(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let (run, cleanup) = start_stateless(&state, &user, &req).await?;
    if cleanup {
        spawn_cleanup(state.clone(), run.clone());
    }
    Ok(created_response(&run))
}

/// `POST /runs/batch`: several background stateless runs (each validated before any is
/// created).
pub(crate) async fn create_batch(
    State(state): State<AppState>,
    user: User,
    ApiJson(reqs): ApiJson<Vec<CreateRun>>,
) -> ApiResult<Json<Value>> {
    for r in &reqs {
        check_request(&state, r)?;
    }
    let mut out = Vec::with_capacity(reqs.len());
    for r in &reqs {
        let (run, cleanup) = start_stateless(&state, &user, r).await?;
        if cleanup {
            spawn_cleanup(state.clone(), run.clone());
        }
        out.push(run_json(&run));
    }
    Ok(Json(Value::Array(out)))
}

// ---------- runs: SSE ----------

fn ai_chunk(id: &str, content: &str) -> Value {
    json!({
        "type": "AIMessageChunk", "content": content, "id": id, "name": null,
        "additional_kwargs": {}, "response_metadata": {},
        "tool_calls": [], "tool_call_chunks": [], "invalid_tool_calls": [],
    })
}

/// Turns a run's engine events into LangGraph SSE events for the requested modes, keeping
/// what later events need (the latest state, streamed message text, node steps).
struct Translator {
    run_id: String,
    thread_id: String,
    graph_id: String,
    modes: Vec<String>,
    partial: HashMap<String, String>,
    /// Text sent in `messages-tuple` chunks, per message; after a reset, the text sent
    /// before it, which the replayed deltas must get past before anything is sent again.
    tuple_sent: HashMap<String, String>,
    tuple_replay: HashMap<String, (String, String)>,
    streamed: HashSet<String>,
    node_step: HashMap<String, i64>,
    values: Option<Value>,
    parent_checkpoint: Option<String>,
}

impl Translator {
    fn new(run: &Run, modes: Vec<String>) -> Self {
        Translator {
            run_id: run.run_id.clone(),
            thread_id: run.thread_id.clone(),
            graph_id: run.graph_id.clone(),
            modes,
            partial: HashMap::new(),
            tuple_sent: HashMap::new(),
            tuple_replay: HashMap::new(),
            streamed: HashSet::new(),
            node_step: HashMap::new(),
            values: None,
            parent_checkpoint: None,
        }
    }

    fn want(&self, m: &str) -> bool {
        self.modes.iter().any(|x| x == m)
    }

    /// The `messages-tuple` chunk to send for a delta: after a reset, nothing while the
    /// replayed text is still a beginning of what this client has, then only what goes
    /// beyond it (a replay that says something else is sent as it comes).
    fn tuple_chunk(&mut self, message_id: &str, delta: &str) -> Option<String> {
        let chunk = match self.tuple_replay.get_mut(message_id) {
            Some((had, again)) => {
                again.push_str(delta);
                if had.starts_with(again.as_str()) {
                    return None;
                }
                let chunk = match again.strip_prefix(had.as_str()) {
                    Some(beyond) => beyond.to_string(),
                    None => delta.to_string(),
                };
                let again = std::mem::take(again);
                self.tuple_replay.remove(message_id);
                self.tuple_sent.insert(message_id.to_string(), again);
                return Some(chunk);
            }
            None => delta.to_string(),
        };
        self.tuple_sent
            .entry(message_id.to_string())
            .or_default()
            .push_str(delta);
        Some(chunk)
    }

    fn meta(&self, node: &str) -> Value {
        json!({
            "langgraph_node": node,
            "langgraph_step": self.node_step.get(node),
            "langgraph_triggers": [format!("branch:to:{node}")],
            "langgraph_path": ["__pregel_pull", node],
            "langgraph_checkpoint_ns": "",
            "checkpoint_ns": "",
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "tags": [],
        })
    }

    fn debug(&self, kind: &str, step: i64, payload: Value) -> (String, Value) {
        (
            "debug".into(),
            json!({"type": kind, "step": step, "timestamp": iso(crate::store::now_ms()), "payload": payload}),
        )
    }

    fn lc_event(&self, event: &str, name: &str, run_id: &str, node: &str, data: Value) -> Value {
        json!({
            "event": event, "name": name, "run_id": run_id, "parent_ids": [self.run_id],
            "tags": [], "metadata": self.meta(node), "data": data,
        })
    }

    async fn translate(&mut self, state: &AppState, event: &Event) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        match event {
            Event::RunStarted { .. } if self.want("events") => {
                let mut e =
                    self.lc_event("on_chain_start", &self.graph_id, &self.run_id, "", json!({}));
                e["parent_ids"] = json!([]);
                out.push(("events".into(), e));
            }
            Event::NodeStarted {
                node,
                task_id,
                step,
                status,
            } => {
                self.node_step.insert(node.clone(), *step);
                if let (true, Some(line)) = (self.want("custom"), status) {
                    out.push((
                        "custom".into(),
                        json!({"type": "status", "node": node, "message": line}),
                    ));
                }
                let task = json!({"id": task_id, "name": node, "input": self.values, "triggers": [format!("branch:to:{node}")]});
                if self.want("tasks") {
                    out.push(("tasks".into(), task.clone()));
                }
                if self.want("debug") {
                    out.push(self.debug("task", *step, task));
                }
                if self.want("events") {
                    out.push((
                        "events".into(),
                        self.lc_event("on_chain_start", node, task_id, node, json!({"input": self.values})),
                    ));
                }
            }
            Event::NodeFinished {
                node,
                task_id,
                step,
                update,
                ..
            } => {
                if self.want("updates") {
                    out.push(("updates".into(), json!({ node.clone(): update })));
                }
                let result = json!({"id": task_id, "name": node, "error": null, "interrupts": [], "result": update});
                if self.want("tasks") {
                    out.push(("tasks".into(), result.clone()));
                }
                if self.want("debug") {
                    out.push(self.debug("task_result", *step, result));
                }
                let messages: Vec<Value> = update
                    .get("messages")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for m in messages.iter().filter(|m| m.is_object()) {
                    let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
                    let streamed = self.streamed.contains(id);
                    if self.want("messages-tuple") && !streamed {
                        out.push(("messages".into(), json!([m, self.meta(node)])));
                    }
                    if self.want("messages") {
                        if !streamed && !id.is_empty() {
                            out.push((
                                "messages/metadata".into(),
                                json!({ id: {"metadata": self.meta(node)} }),
                            ));
                        }
                        out.push(("messages/complete".into(), json!([m])));
                    }
                }
                if self.want("events") {
                    out.push((
                        "events".into(),
                        self.lc_event("on_chain_end", node, task_id, node, json!({"output": update})),
                    ));
                }
            }
            Event::Values { values, .. } => {
                self.values = Some(values.clone());
                if self.want("values") {
                    out.push(("values".into(), values.clone()));
                }
            }
            Event::Checkpoint {
                checkpoint_id,
                step,
                next,
            } => {
                if self.want("checkpoints") || self.want("debug") {
                    let payload = json!({
                        "config": {"configurable": checkpoint_json(&self.thread_id, checkpoint_id)},
                        "parent_config": self.parent_checkpoint.as_deref().map(|p| json!({"configurable": checkpoint_json(&self.thread_id, p)})),
                        "values": self.values.clone().unwrap_or_else(|| json!({})),
                        "metadata": {"source": if *step < 0 { "input" } else { "loop" }, "step": step, "run_id": self.run_id, "thread_id": self.thread_id},
                        "next": next,
                        "tasks": next.iter().map(|n| json!({"id": null, "name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
                    });
                    if self.want("checkpoints") {
                        out.push(("checkpoints".into(), payload.clone()));
                    }
                    if self.want("debug") {
                        out.push(self.debug("checkpoint", *step, payload));
                    }
                }
                self.parent_checkpoint = Some(checkpoint_id.clone());
            }
            Event::MessageDelta {
                node,
                message_id,
                delta,
            } => {
                self.streamed.insert(message_id.clone());
                if self.want("messages-tuple") {
                    if let Some(chunk) = self.tuple_chunk(message_id, delta) {
                        out.push((
                            "messages".into(),
                            json!([ai_chunk(message_id, &chunk), self.meta(node)]),
                        ));
                    }
                }
                if self.want("messages") {
                    let first = !self.partial.contains_key(message_id);
                    if first {
                        out.push((
                            "messages/metadata".into(),
                            json!({ message_id.clone(): {"metadata": self.meta(node)} }),
                        ));
                    }
                    let text = self.partial.entry(message_id.clone()).or_default();
                    text.push_str(delta);
                    let text = text.clone();
                    let mut m = ai_chunk(message_id, &text);
                    m["type"] = json!("ai");
                    out.push(("messages/partial".into(), json!([m])));
                }
                if self.want("events") {
                    out.push((
                        "events".into(),
                        self.lc_event(
                            "on_chat_model_stream",
                            node,
                            message_id,
                            node,
                            json!({"chunk": ai_chunk(message_id, delta)}),
                        ),
                    ));
                }
            }
            Event::MessageReset { message_id, .. } => {
                // `messages` sends the whole text so far: start it again. Chunks of
                // `messages-tuple` are concatenated by clients: hold back the replayed text
                // until it goes beyond what this client has.
                self.partial.remove(message_id);
                if let Some(sent) = self.tuple_sent.remove(message_id) {
                    self.tuple_replay
                        .insert(message_id.clone(), (sent, String::new()));
                }
            }
            Event::Custom { node, value } => {
                if self.want("custom") {
                    out.push(("custom".into(), value.clone()));
                }
                if self.want("events") {
                    out.push((
                        "events".into(),
                        self.lc_event("on_custom_event", "custom", &self.run_id, node, value.clone()),
                    ));
                }
            }
            Event::Status {
                node,
                message,
                details,
            } if self.want("custom") => {
                let mut v = json!({"type": "status", "node": node, "message": message});
                if let (Some(o), Some(d)) = (v.as_object_mut(), details.as_object()) {
                    for (k, x) in d {
                        o.insert(k.clone(), x.clone());
                    }
                }
                out.push(("custom".into(), v));
            }
            Event::Interrupted { interrupts } => {
                let list: Vec<Value> = interrupts.iter().map(interrupt_json).collect();
                if self.want("values") {
                    let mut values = match self.values.clone() {
                        Some(v) => v,
                        None => match state.graphs.find(&self.graph_id) {
                            Some(g) => g
                                .graph
                                .state(&self.thread_id, None)
                                .await
                                .ok()
                                .flatten()
                                .map(|s| s.values)
                                .unwrap_or_else(|| json!({})),
                            None => json!({}),
                        },
                    };
                    if let Some(o) = values.as_object_mut() {
                        o.insert("__interrupt__".into(), Value::Array(list.clone()));
                    }
                    out.push(("values".into(), values));
                }
                if self.want("updates") {
                    out.push(("updates".into(), json!({"__interrupt__": list})));
                }
                if self.want("tasks") || self.want("debug") {
                    let mut by_task: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
                    for i in interrupts {
                        by_task
                            .entry((i.task_id.clone(), i.node.clone()))
                            .or_default()
                            .push(interrupt_json(i));
                    }
                    for ((task, node), list) in by_task {
                        let result = json!({"id": task, "name": node, "error": null, "interrupts": list, "result": {}});
                        let step = self.node_step.get(&node).copied().unwrap_or(-1);
                        if self.want("tasks") {
                            out.push(("tasks".into(), result.clone()));
                        }
                        if self.want("debug") {
                            out.push(self.debug("task_result", step, result));
                        }
                    }
                }
            }
            Event::Completed { .. } if self.want("events") => {
                let mut e = self.lc_event(
                    "on_chain_end",
                    &self.graph_id,
                    &self.run_id,
                    "",
                    json!({"output": self.values}),
                );
                e["parent_ids"] = json!([]);
                out.push(("events".into(), e));
            }
            Event::Failed { node, error } => out.push((
                "error".into(),
                json!({"error": if node.is_some() { "NodeError" } else { "RunError" }, "message": error}),
            )),
            _ => {}
        }
        out
    }
}

/// What ends with a run's stream or wait: a cancel when the client leaves early
/// (`on_disconnect: cancel`), and the deletion of a stateless run's thread.
struct RunGuard {
    state: AppState,
    run: Run,
    cancel_armed: bool,
    cleanup: bool,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.cancel_armed {
            let (runs, id) = (self.state.runs.clone(), self.run.run_id.clone());
            tokio::spawn(async move {
                let _ = runs
                    .cancel(&id, CancelAction::Interrupt, CancelReason::Disconnect)
                    .await;
            });
        }
        if self.cleanup {
            spawn_cleanup(self.state.clone(), self.run.clone());
        }
    }
}

/// Deletes a stateless run's thread once the run has ended.
fn spawn_cleanup(state: AppState, run: Run) {
    tokio::spawn(async move {
        wait_for(&state, &run).await;
        let user = User {
            id: run.owner.clone(),
        };
        if let Ok(Some(t)) = state.store.get_thread(&run.owner, &run.thread_id).await {
            if let Err(e) = remove_thread(&state, &user, &t).await {
                tracing::warn!(thread_id = %run.thread_id, error = %e, "could not delete a stateless run's thread");
            }
        }
    });
}

/// A run's LangGraph event stream: every SSE event after `skip_through` (an SSE id), after
/// a `metadata` event when `head`.
fn lg_stream(
    state: AppState,
    run: Run,
    modes: Vec<String>,
    skip_through: Option<u64>,
    head: bool,
    guard: RunGuard,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    let mut guard = guard;
    let head = head.then(|| {
        Ok(SseEvent::default().event("metadata").data(
            json!({"run_id": run.run_id, "thread_id": run.thread_id, "attempt": run.attempt.max(1)})
                .to_string(),
        ))
    });
    let translator = Arc::new(tokio::sync::Mutex::new(Translator::new(&run, modes)));
    let events = state.runs.watch(&run.run_id, 0);
    let body = events
        .then(move |e| {
            let (state, translator) = (state.clone(), translator.clone());
            async move {
                let out = translator.lock().await.translate(&state, &e.event).await;
                (e.seq, e.event.is_terminal(), out)
            }
        })
        .flat_map(move |(seq, terminal, out)| {
            // Capture the whole guard (not just its flag): it lives as long as the stream.
            let g = &mut guard;
            if terminal {
                g.cancel_armed = false;
            }
            let items: Vec<Result<SseEvent, Infallible>> = out
                .into_iter()
                .enumerate()
                .filter_map(|(i, (name, data))| {
                    let id = seq * 1000 + i as u64;
                    if skip_through.is_some_and(|s| id <= s) {
                        return None;
                    }
                    Some(Ok(SseEvent::default()
                        .event(name)
                        .id(id.to_string())
                        .data(data.to_string())))
                })
                .collect();
            futures_util::stream::iter(items)
        });
    futures_util::stream::iter(head).chain(body)
}

/// The position of a run's latest event so far.
async fn last_seq(state: &AppState, run_id: &str) -> ApiResult<u64> {
    if let Some(ch) = state.runs.hub.get(run_id) {
        if let Some(e) = ch.after(0).0.last() {
            return Ok(e.seq);
        }
    }
    Ok(state
        .store
        .events_after(run_id, 0)
        .await?
        .last()
        .map(|r| r.seq as u64)
        .unwrap_or(0))
}

fn stream_response(state: &AppState, run: Run, req: &CreateRun, cleanup: bool) -> Response {
    let modes = run_modes(&run);
    let guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: req.on_disconnect == Some(OnDisconnect::Cancel),
        cleanup,
    };
    let loc = location(&run);
    sse_response(
        state,
        lg_stream(state.clone(), run, modes, None, true, guard),
        &[
            ("content-location", loc.clone()),
            ("location", format!("{loc}/stream")),
        ],
    )
}

/// `POST /threads/{id}/runs/stream`.
pub(crate) async fn stream_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    Ok(stream_response(&state, run, &req, false))
}

/// `POST /runs/stream`: a stateless run, streamed.
pub(crate) async fn stream_stateless_run(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let (run, cleanup) = start_stateless(&state, &user, &req).await?;
    Ok(stream_response(&state, run, &req, cleanup))
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
                Value::Array(s.interrupts.iter().map(interrupt_json).collect()),
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

async fn wait_response(
    state: &AppState,
    run: Run,
    cancel: bool,
    cleanup: bool,
) -> ApiResult<Response> {
    let mut guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: cancel,
        cleanup,
    };
    wait_for(state, &run).await;
    guard.cancel_armed = false;
    let values = final_values(state, &run).await?;
    drop(guard);
    let loc = location(&run);
    let resp = with_header(Json(values).into_response(), "content-location", &loc);
    Ok(with_header(resp, "location", &format!("{loc}/join")))
}

/// `POST /threads/{id}/runs/wait`.
pub(crate) async fn wait_run(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start_run(&state, &user, &id, &req).await?;
    let cancel = req.on_disconnect == Some(OnDisconnect::Cancel);
    wait_response(&state, run, cancel, false).await
}

/// `POST /runs/wait`: a stateless run, awaited.
pub(crate) async fn wait_stateless_run(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let (run, cleanup) = start_stateless(&state, &user, &req).await?;
    let cancel = req.on_disconnect == Some(OnDisconnect::Cancel);
    wait_response(&state, run, cancel, cleanup).await
}

// ---------- runs: reading, joining, cancelling ----------

const RUN_STATUSES: [&str; 6] = [
    "pending",
    "running",
    "error",
    "success",
    "timeout",
    "interrupted",
];

/// `GET /threads/{id}/runs?limit&offset&status&select`.
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    user: User,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    own_thread(&state, &user, &id).await?;
    let num = |k: &str, default: i64| -> ApiResult<i64> {
        match params.get(k) {
            Some(v) => v
                .parse::<i64>()
                .map_err(|_| ApiError::BadRequest(format!("{k} must be a number, not `{v}`"))),
            None => Ok(default),
        }
    };
    let (limit, offset) = (num("limit", 10)?.clamp(1, 1000), num("offset", 0)?.max(0));
    let status = params.get("status");
    one_of("status", status, &RUN_STATUSES)?;
    let runs = match status {
        // Filter before paging.
        Some(_) => state.store.list_runs(&id, 100_000, 0).await?,
        None => state.store.list_runs(&id, limit, offset).await?,
    };
    let mut list: Vec<Value> = runs
        .iter()
        .filter(|r| status.is_none_or(|s| api_status(r.status) == s))
        .map(run_json)
        .collect();
    if status.is_some() {
        list = list
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect();
    }
    let select = Some(params.all("select")).filter(|s| !s.is_empty());
    Ok(Json(Value::Array(project(list, &select))))
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
    params: Params,
) -> ApiResult<Json<Value>> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    let mut guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: params.flag("cancel_on_disconnect")?.unwrap_or(false),
        cleanup: false,
    };
    wait_for(&state, &run).await;
    guard.cancel_armed = false;
    Ok(Json(final_values(&state, &run).await?))
}

/// Joins a run's stream: `Last-Event-ID: -1` replays the whole run, an event id resumes
/// after it, and no id follows the run from now on.
async fn join_response(
    state: &AppState,
    run: Run,
    headers: &HeaderMap,
    params: &Params,
) -> ApiResult<Response> {
    let asked = params.all("stream_mode");
    let modes = if asked.is_empty() {
        run_modes(&run)
    } else {
        checked_modes(asked)?
    };
    let (skip_through, head) = match last_event_id(headers).as_deref() {
        Some("-1") | Some("-") | Some("0") => (None, true),
        Some(id) => (
            Some(id.parse::<u64>().map_err(|_| {
                ApiError::BadRequest(format!(
                    "bad Last-Event-ID `{id}`: give an event id of this run, or -1 to replay it"
                ))
            })?),
            false,
        ),
        None => (
            Some(last_seq(state, &run.run_id).await? * 1000 + 999),
            false,
        ),
    };
    let guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: params.flag("cancel_on_disconnect")?.unwrap_or(false),
        cleanup: false,
    };
    Ok(sse_response(
        state,
        lg_stream(state.clone(), run, modes, skip_through, head, guard),
        &[],
    ))
}

/// `GET /threads/{id}/runs/{run_id}/stream`.
pub(crate) async fn join_stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path((id, run_id)): Path<(String, String)>,
    params: Params,
) -> ApiResult<Response> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    join_response(&state, run, &headers, &params).await
}

/// `GET /runs/{run_id}/stream` (the JS SDK's `joinStream` without a thread).
pub(crate) async fn join_stream_by_run(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(run_id): Path<String>,
    params: Params,
) -> ApiResult<Response> {
    let run = state
        .store
        .get_run_any(&run_id)
        .await?
        .filter(|r| r.owner == user.id)
        .ok_or_else(|| ApiError::NotFound(format!("run `{run_id}`")))?;
    join_response(&state, run, &headers, &params).await
}

fn cancel_action(params: &Params) -> ApiResult<CancelAction> {
    match params.get("action") {
        None | Some("interrupt") => Ok(CancelAction::Interrupt),
        Some("rollback") => Ok(CancelAction::Rollback),
        Some(other) => Err(ApiError::Invalid(format!(
            "action must be interrupt or rollback, not `{other}`"
        ))),
    }
}

/// `POST /threads/{id}/runs/{run_id}/cancel?wait&action` (idempotent).
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    user: User,
    Path((id, run_id)): Path<(String, String)>,
    params: Params,
) -> ApiResult<Response> {
    let action = cancel_action(&params)?;
    let wait = params.flag("wait")?.unwrap_or(false);
    let run = own_run(&state, &user, &id, &run_id).await?;
    state
        .runs
        .cancel(&run.run_id, action, CancelReason::UserCancelled)
        .await?;
    if wait {
        let _ = tokio::time::timeout(Duration::from_secs(30), wait_for(&state, &run)).await;
        let mut after = state.store.get_run_any(&run.run_id).await?;
        // A rolled back run is deleted just after its last event.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while action == CancelAction::Rollback
            && after.is_some()
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
            after = state.store.get_run_any(&run.run_id).await?;
        }
        return Ok(Json(after.as_ref().map(run_json).unwrap_or_else(|| json!({}))).into_response());
    }
    Ok((StatusCode::ACCEPTED, Json(json!({}))).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CancelMany {
    thread_id: Option<String>,
    run_ids: Option<Vec<String>>,
    status: Option<String>,
}

/// `POST /runs/cancel?action`: the given runs of a thread, or every pending / running run of
/// the caller.
pub(crate) async fn cancel_many(
    State(state): State<AppState>,
    user: User,
    params: Params,
    OptionalJson(req): OptionalJson<CancelMany>,
) -> ApiResult<StatusCode> {
    let action = cancel_action(&params)?;
    one_of(
        "status",
        req.status.as_deref(),
        &["pending", "running", "all"],
    )?;
    let runs: Vec<Run> = match (&req.thread_id, &req.run_ids, &req.status) {
        (Some(t), Some(ids), None) => {
            own_thread(&state, &user, t).await?;
            let mut out = Vec::new();
            for id in ids {
                out.push(
                    state
                        .store
                        .get_run(&user.id, t, id)
                        .await?
                        .ok_or_else(|| ApiError::NotFound(format!("run `{id}`")))?,
                );
            }
            out
        }
        (None, None, Some(status)) => {
            let busy = all_threads(
                &state,
                &user,
                &SearchThreads {
                    status: Some("busy".into()),
                    ..Default::default()
                },
            )
            .await?;
            let mut out = Vec::new();
            for t in busy {
                for r in state.store.active_runs(&t.thread_id).await? {
                    if status == "all" || r.status.as_str() == status {
                        out.push(r);
                    }
                }
            }
            out
        }
        _ => {
            return Err(ApiError::Invalid(
                "give either thread_id with run_ids, or status".into(),
            ))
        }
    };
    for r in runs {
        state
            .runs
            .cancel(&r.run_id, action, CancelReason::UserCancelled)
            .await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// How often an idle thread stream looks for runs without being told: a safety net only,
/// since a new run wakes it (in this process, or by NOTIFY from another, and every waiter
/// when the listener reconnects).
const THREAD_RECHECK: Duration = Duration::from_secs(30);

/// `GET /threads/{id}/stream`: follows a thread's runs (`stream_mode` `run_modes`, each run
/// with its own modes, or `state_update`, values only), until the client leaves.
/// `Last-Event-ID: -` (or `-1`) includes the active run from its start.
pub(crate) async fn thread_stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Response> {
    own_thread(&state, &user, &id).await?;
    let mode = params
        .get("stream_mode")
        .or_else(|| params.get("stream_modes"))
        .unwrap_or("run_modes")
        .to_string();
    one_of("stream_mode", Some(&mode), &["run_modes", "state_update"])?;
    let from_start = matches!(last_event_id(&headers).as_deref(), Some("-") | Some("-1"));
    let since = crate::store::now_ms();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<SseEvent, Infallible>>(64);
    let st = state.clone();
    tokio::spawn(async move {
        let mut done: HashSet<String> = HashSet::new();
        let mut first = true;
        // Woken when a run is created on the thread (here or, via NOTIFY, by another
        // replica); the slow re-check only covers a missed announcement.
        let news = st.runs.threads.waiter(&id);
        loop {
            if tx.is_closed() || st.shutdown.is_cancelled() {
                break;
            }
            let woken = news.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let mut candidates = st.store.active_runs(&id).await.unwrap_or_default();
            candidates.extend(
                st.store
                    .list_runs(&id, 50, 0)
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|r| r.created_at_ms >= since),
            );
            candidates.retain(|r| !done.contains(&r.run_id));
            candidates.sort_by(|a, b| a.run_id.cmp(&b.run_id));
            let Some(run) = candidates.into_iter().next() else {
                first = false;
                tokio::select! {
                    _ = woken => {}
                    _ = tokio::time::sleep(THREAD_RECHECK) => {}
                    _ = tx.closed() => break,
                    _ = st.shutdown.cancelled() => break,
                }
                continue;
            };
            done.insert(run.run_id.clone());
            let modes = if mode == "state_update" {
                vec!["values".to_string()]
            } else {
                run_modes(&run)
            };
            let skip = if first && !from_start && run.created_at_ms < since {
                Some(last_seq(&st, &run.run_id).await.unwrap_or(0) * 1000 + 999)
            } else {
                None
            };
            first = false;
            let guard = RunGuard {
                state: st.clone(),
                run: run.clone(),
                cancel_armed: false,
                cleanup: false,
            };
            let mut s = Box::pin(lg_stream(
                st.clone(),
                run,
                modes,
                skip,
                skip.is_none(),
                guard,
            ));
            while let Some(ev) = s.next().await {
                if tx.send(ev).await.is_err() {
                    break;
                }
            }
        }
        drop(news);
        st.runs.threads.release(&id);
    });
    let events = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Ok(sse_response(&state, events, &[]))
}

/// `/runs/crons`, `/threads/{id}/runs/crons`, `/store/...`.
pub(crate) async fn crons(_user: User) -> Response {
    not_supported("crons (scheduled runs)")
}

/// `/store/...`.
pub(crate) async fn long_term_store(_user: User) -> Response {
    not_supported("the long-term store (/store)")
}

// ---------- CORS ----------

/// Origins allowed to call the API from a browser (`PALGRAPH_CORS_ORIGINS`: a comma-separated
/// list such as `http://localhost:3000`, or `*`); none by default, so a web page cannot
/// reach a local palgraph unless you say so.
fn cors_origins() -> &'static [String] {
    static ORIGINS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ORIGINS.get_or_init(|| {
        std::env::var("PALGRAPH_CORS_ORIGINS")
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().trim_end_matches('/').to_string())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// Lets the configured origins call the API from a browser (agent-chat-ui connecting
/// directly): answers preflights and exposes the headers the SDKs read (`Content-Location`,
/// `Location`, `X-Pagination-Next`).
pub(crate) async fn cors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let origin = req
        .headers()
        .get("origin")
        .and_then(|o| o.to_str().ok())
        .map(str::to_string);
    let allowed = origin.as_deref().filter(|o| {
        cors_origins()
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(o))
    });
    let Some(origin) = allowed.map(str::to_string) else {
        return next.run(req).await;
    };
    let preflight = req.method() == axum::http::Method::OPTIONS
        && req.headers().contains_key("access-control-request-method");
    let mut resp = if preflight {
        let asked = req
            .headers()
            .get("access-control-request-headers")
            .and_then(|h| h.to_str().ok())
            .unwrap_or("content-type, authorization, x-api-key, last-event-id")
            .to_string();
        let resp = StatusCode::NO_CONTENT.into_response();
        let resp = with_header(
            resp,
            "access-control-allow-methods",
            "GET, POST, PUT, PATCH, DELETE, OPTIONS",
        );
        let resp = with_header(resp, "access-control-allow-headers", &asked);
        with_header(resp, "access-control-max-age", "600")
    } else {
        let resp = next.run(req).await;
        with_header(
            resp,
            "access-control-expose-headers",
            "content-location, location, x-pagination-next",
        )
    };
    resp = with_header(resp, "access-control-allow-origin", &origin);
    resp.headers_mut()
        .append(axum::http::header::VARY, HeaderValue::from_static("origin"));
    resp
}
