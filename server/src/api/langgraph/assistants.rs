//! `/info` and `/assistants`: one assistant per registered graph, its graph drawing and its
//! schemas. Assistants are read-only here (creating another or changing one is a 501).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use std::sync::Arc;

use palgraph::dynamic::DynGraph;

use super::common::{assistant, one_of, project, values, with_header, AssistantPath, Params};
use super::models::SubgraphParams;
use super::models::{
    Assistant, AssistantSchemas, AssistantSearch, CreateAssistant, GraphDrawing, Info,
};
use super::unsupported::NotSupported;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::AppState;
use crate::auth::User;
use crate::graphs::GraphEntry;

/// `GET /info`.
pub(crate) async fn info() -> Json<Info> {
    Json(Info {
        version: env!("CARGO_PKG_VERSION").to_string(),
        langgraph_py_version: None,
        flags: json!({"assistants": true, "crons": false, "langsmith": false, "langsmith_tracing_replicas": false}),
        host: json!({"kind": "palgraph", "project_id": null, "revision_id": null, "tenant_id": null}),
    })
}

fn matching<'a>(
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
pub(crate) async fn search(
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
    let mut all: Vec<&GraphEntry> = matching(&state, &q).collect();
    match q.sort_by.as_deref() {
        Some("assistant_id") => all.sort_by(|a, b| a.assistant_id.cmp(&b.assistant_id)),
        _ => all.sort_by(|a, b| a.graph_id.cmp(&b.graph_id)),
    }
    if q.sort_order.as_deref() == Some("desc") {
        all.reverse();
    }
    let total = all.len();
    let page = values(all.into_iter().skip(offset).take(limit).map(Assistant::of));
    let resp = Json(Value::Array(project(page, &q.select))).into_response();
    // Any offset is accepted (past the end: an empty page); the next page's offset
    // saturates rather than wrapping around to the start.
    let next = offset.saturating_add(limit);
    Ok(if next < total {
        with_header(resp, "x-pagination-next", &next.to_string())
    } else {
        resp
    })
}

/// `POST /assistants/count`.
pub(crate) async fn count(
    State(state): State<AppState>,
    _user: User,
    OptionalJson(q): OptionalJson<AssistantSearch>,
) -> Json<usize> {
    Json(matching(&state, &q).count())
}

/// `POST /assistants`: palgraph serves one assistant per graph; asking for an existing one
/// with `if_exists: do_nothing` returns it.
pub(crate) async fn create(
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
    let named = req
        .assistant_id
        .as_deref()
        .is_some_and(|a| a == e.assistant_id || a == e.graph_id);
    let existing = named || req.assistant_id.is_none();
    if existing && req.if_exists.as_deref() == Some("do_nothing") {
        return Ok(Json(Assistant::of(&e)).into_response());
    }
    // Its own id with `if_exists` `raise` (the default): it exists, as LangGraph answers.
    if named {
        return Err(ApiError::Conflict {
            code: "assistant_exists",
            message: format!(
                "assistant `{}` exists (graph `{}`); pass if_exists=do_nothing to get it",
                e.assistant_id, e.graph_id
            ),
        });
    }
    Ok(NotSupported(
        "creating assistants (each graph has one default assistant; use its graph_id or assistant_id)",
    )
    .into_response())
}

/// `PATCH|DELETE /assistants/{id}`.
pub(crate) async fn change(_user: User, Path(_p): Path<AssistantPath>) -> NotSupported {
    NotSupported("changing or deleting assistants")
}

/// `GET /assistants/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    _user: User,
    Path(AssistantPath { id }): Path<AssistantPath>,
) -> ApiResult<Json<Assistant>> {
    Ok(Json(Assistant::of(&assistant(&state, &id)?)))
}

/// `POST /assistants/{id}/versions`: the one version.
pub(crate) async fn versions(
    State(state): State<AppState>,
    _user: User,
    Path(AssistantPath { id }): Path<AssistantPath>,
) -> ApiResult<Json<Vec<Assistant>>> {
    Ok(Json(vec![Assistant::of(&assistant(&state, &id)?)]))
}

/// `GET /assistants/{id}/graph`: nodes and edges (plus Mermaid).
pub(crate) async fn graph(
    State(state): State<AppState>,
    _user: User,
    Path(AssistantPath { id }): Path<AssistantPath>,
) -> ApiResult<Json<GraphDrawing>> {
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
    Ok(Json(GraphDrawing {
        nodes,
        edges,
        mermaid,
    }))
}

/// `GET /assistants/{id}/subgraphs?recurse=`: the graph's subgraph nodes and their
/// schemas, by namespace (a node's name; nested ones `outer|inner` with `recurse`).
pub(crate) async fn subgraphs(
    State(state): State<AppState>,
    _user: User,
    Path(AssistantPath { id }): Path<AssistantPath>,
    params: Params<SubgraphParams>,
) -> ApiResult<Json<Map<String, Value>>> {
    let e = assistant(&state, &id)?;
    let recurse = params.flag("recurse")?.unwrap_or(false);
    let mut out = Map::new();
    list_subgraphs(&e.graph, "", recurse, &mut out);
    Ok(Json(out))
}

/// The path of a subgraph of an assistant.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct SubgraphPath {
    /// The assistant's id, or its graph's name.
    id: String,
    /// The subgraph's namespace (node names joined with `|`).
    namespace: String,
}

/// `GET /assistants/{id}/subgraphs/{namespace}?recurse=`: the subgraph at `namespace` (and
/// with `recurse` the ones inside it); `{}` when there is none.
pub(crate) async fn subgraph(
    State(state): State<AppState>,
    _user: User,
    Path(p): Path<SubgraphPath>,
    params: Params<SubgraphParams>,
) -> ApiResult<Json<Map<String, Value>>> {
    let e = assistant(&state, &p.id)?;
    let recurse = params.flag("recurse")?.unwrap_or(false);
    let mut g = e.graph.clone();
    let mut out = Map::new();
    for node in p.namespace.split('|') {
        match g.subgraph(node) {
            Some(sub) => g = sub,
            None => return Ok(Json(out)),
        }
    }
    out.insert(p.namespace.clone(), subgraph_schemas(&*g));
    if recurse {
        list_subgraphs(&g, &p.namespace, true, &mut out);
    }
    Ok(Json(out))
}

/// Adds the subgraphs of `g` (under namespace `prefix`) to `out`.
fn list_subgraphs(
    g: &Arc<dyn DynGraph>,
    prefix: &str,
    recurse: bool,
    out: &mut Map<String, Value>,
) {
    for (node, sub) in g.subgraphs() {
        let ns = if prefix.is_empty() {
            node
        } else {
            format!("{prefix}|{node}")
        };
        out.insert(ns.clone(), subgraph_schemas(&*sub));
        if recurse {
            list_subgraphs(&sub, &ns, true, out);
        }
    }
}

/// A subgraph's schemas, as LangGraph lists them.
fn subgraph_schemas(g: &dyn DynGraph) -> Value {
    json!({
        "input_schema": g.update_schema(),
        "output_schema": g.state_schema(),
        "state_schema": g.state_schema(),
        "config_schema": {"type": "object", "properties": {}},
        "context_schema": {"type": "object", "properties": {}},
    })
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

/// `GET /assistants/{id}/schemas`: the registered schemas (see [`GraphEntry::new`]); a
/// graph that registered none for its input takes the state's with nothing required.
pub(crate) async fn schemas(
    State(state): State<AppState>,
    _user: User,
    Path(AssistantPath { id }): Path<AssistantPath>,
) -> ApiResult<Json<AssistantSchemas>> {
    let e = assistant(&state, &id)?;
    let state_schema = state_schema(&e);
    let input_schema = if e.input_schema.get("properties").is_some() {
        (*e.input_schema).clone()
    } else {
        let mut s = state_schema.clone();
        if let Some(o) = s.as_object_mut() {
            o.remove("required");
        }
        s
    };
    let output_schema = if e.output_schema.get("properties").is_some() {
        (*e.output_schema).clone()
    } else {
        state_schema.clone()
    };
    Ok(Json(AssistantSchemas {
        graph_id: e.graph_id.clone(),
        input_schema,
        output_schema,
        state_schema,
        config_schema: json!({"type": "object", "properties": {}}),
        context_schema: (*e.context_schema).clone(),
    }))
}
