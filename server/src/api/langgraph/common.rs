//! What the LangGraph resources share: query parameters as the SDKs send them, small
//! checks, `select` projections, and finding a thread's graph and state.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::Response;
use palgraph::dynamic::DynSnapshot;
use serde_json::{Map, Value};

use crate::api::error::{ApiError, ApiResult};
use crate::api::AppState;
use crate::graphs::GraphEntry;
use crate::store::Thread;

/// Query parameters as sent; keys may repeat (`stream_mode=values&stream_mode=updates`), and
/// flags come as `1`/`0` (JS SDK) or `true`/`false` (Python SDK). `Q` describes them for the
/// OpenAPI document.
pub(crate) struct Params<Q = ()>(Vec<(String, String)>, std::marker::PhantomData<Q>);

impl<S: Send + Sync, Q> FromRequestParts<S> for Params<Q> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)?;
        Ok(Params(pairs, std::marker::PhantomData))
    }
}

impl<Q> Params<Q> {
    /// The last non-empty value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    }

    /// Every value of `key` (repeated keys and comma-separated lists).
    pub(crate) fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v.split(',').map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// A boolean flag.
    pub(crate) fn flag(&self, key: &str) -> ApiResult<Option<bool>> {
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

    /// A number (`default` when absent).
    pub(crate) fn number(&self, key: &str, default: i64) -> ApiResult<i64> {
        match self.get(key) {
            Some(v) => v
                .parse::<i64>()
                .map_err(|_| ApiError::BadRequest(format!("{key} must be a number, not `{v}`"))),
            None => Ok(default),
        }
    }
}

/// The path of a thread.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct ThreadPath {
    /// The thread's id.
    pub thread_id: String,
}

/// The path of a run of a thread.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct RunPath {
    /// The thread's id.
    pub thread_id: String,
    /// The run's id.
    pub(crate) run_id: String,
}

/// The path of an assistant.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct AssistantPath {
    /// The assistant's id, or its graph's name.
    pub(crate) id: String,
}

/// The path of a thread's checkpoint.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct CheckpointPath {
    /// The thread's id.
    pub thread_id: String,
    /// The checkpoint's id.
    pub(crate) checkpoint_id: String,
}

/// Refuses a value outside `allowed` (422).
pub(crate) fn one_of(field: &str, value: Option<&str>, allowed: &[&str]) -> ApiResult<()> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(ApiError::Invalid(format!(
            "{field} must be one of {}, not `{v}`",
            allowed.join(", ")
        ))),
        _ => Ok(()),
    }
}

/// Keeps only the `select`ed top-level fields of each object.
pub(crate) fn project(items: Vec<Value>, select: &Option<Vec<String>>) -> Vec<Value> {
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

/// `items` as JSON values (for [`project`]).
pub(crate) fn values<T: serde::Serialize>(items: impl IntoIterator<Item = T>) -> Vec<Value> {
    items
        .into_iter()
        .map(|i| serde_json::to_value(i).unwrap_or(Value::Null))
        .collect()
}

/// Sets a response header (skipped when the value is not a valid header value).
pub(crate) fn with_header(mut resp: Response, name: &'static str, value: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
    resp
}

/// An assistant by its id or its graph's name (404 otherwise).
pub(crate) fn assistant(state: &AppState, id: &str) -> ApiResult<GraphEntry> {
    state
        .graphs
        .find(id)
        .cloned()
        .ok_or_else(|| ApiError::NotFound(format!("assistant `{id}`")))
}

/// The checkpoint a request names: `checkpoint_id`, or `checkpoint.checkpoint_id`.
pub(crate) fn checkpoint_id_of(
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

/// The subgraph namespace a checkpoint config names, if any.
pub(crate) fn subgraph_ns(checkpoint: &Option<Map<String, Value>>) -> Option<&str> {
    checkpoint
        .as_ref()
        .and_then(|c| c.get("checkpoint_ns"))
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

/// The graph and the checkpointer thread that hold namespace `ns` of thread `id` run by
/// `g` (404 for a namespace that is not one of its subgraph tasks').
pub(crate) fn in_namespace(
    g: &GraphEntry,
    id: &str,
    ns: &str,
) -> ApiResult<(std::sync::Arc<dyn palgraph::dynamic::DynGraph>, String)> {
    palgraph::graph::subgraph::resolve(g.graph.clone(), id, ns)
        .ok_or_else(|| ApiError::NotFound(format!("subgraph namespace `{ns}`")))
}

/// The graph a thread runs: the one its metadata names (every run sets it), or the only
/// registered graph.
pub(crate) fn thread_graph<'a>(state: &'a AppState, t: &Thread) -> Option<&'a GraphEntry> {
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

/// A thread's latest state, if it has a graph and a checkpoint.
pub(crate) async fn thread_snapshot(
    state: &AppState,
    t: &Thread,
) -> ApiResult<Option<DynSnapshot>> {
    Ok(match thread_graph(state, t) {
        Some(g) => g.graph.state(&t.thread_id, None).await?,
        None => None,
    })
}
