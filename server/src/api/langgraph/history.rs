//! A thread's history (`POST` and `GET /threads/{id}/history`): its states newest first,
//! read from storage a few at a time and written out as they are read
//! ([`JsonArray`]), so a request's memory is a page of states, not the response.
//!
//! Bounds: at most `limit` states (1 to [`MAX_LIMIT`], default 10), and the response ends
//! after the state that takes it past the server's response size
//! (`PALGRAPH_MAX_RESPONSE_BYTES`). A client gets the rest by asking again with `before` set
//! to the last state's checkpoint, as it pages through history anyway.

use axum::extract::{Path, State};
use palgraph::dynamic::{DynGraph, DynSnapshot};
use palgraph::ListOptions;
use serde_json::{json, Value};
use std::sync::Arc;

use super::common::{in_namespace, subgraph_ns, thread_graph, Params, ThreadPath};
use super::models::{HistoryParams, HistoryQuery, ThreadState};
use crate::api::admission::own_thread;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::OptionalJson;
use crate::api::json_array::{ArraySink, JsonArray};
use crate::api::AppState;
use crate::auth::User;

/// The most states one history request returns.
pub(crate) const MAX_LIMIT: usize = 1000;

/// States read from storage at once: as many as fit about this many bytes, judged by the
/// ones read so far.
const PAGE_BYTES: usize = 4 * 1024 * 1024;
/// The most states read at once, and the first page's size.
const MAX_PAGE: usize = 32;
const FIRST_PAGE: usize = 4;

/// What one history request reads.
struct Reading {
    graph: Arc<dyn DynGraph>,
    thread: String,
    id: String,
    ns: String,
    filter: Option<serde_json::Map<String, Value>>,
    select: Option<Vec<String>>,
}

impl Reading {
    /// Up to `n` states older than `before`.
    async fn page(&self, before: Option<String>, n: usize) -> ApiResult<Vec<DynSnapshot>> {
        let opts = ListOptions {
            before,
            limit: Some(n),
            filter: self.filter.clone(),
        };
        Ok(self.graph.history(&self.thread, &opts).await?)
    }

    /// A state as the API shows it.
    async fn item(&self, snap: &DynSnapshot, page: &[DynSnapshot]) -> ApiResult<Value> {
        let mut item = serde_json::to_value(ThreadState::of_ns(&self.id, &self.ns, snap))
            .map_err(ApiError::internal)?;
        if let Some(values) = self.before_input(snap, page).await? {
            item["values"] = values;
        }
        Ok(match (&self.select, item) {
            (Some(keys), Value::Object(o)) if !keys.is_empty() => Value::Object(
                o.into_iter()
                    .filter(|(k, _)| keys.iter().any(|s| s == k))
                    .collect(),
            ),
            (_, item) => item,
        })
    }

    /// Shows a turn's input checkpoint with the values its input was applied to, as
    /// LangGraph's `input` checkpoints hold the input only as a pending write: a message is
    /// first seen in the checkpoint after it, whose parent is the input checkpoint, so a
    /// client that edits a message (agent-chat-ui's Edit, also of a thread's first message)
    /// runs from that parent and the engine replaces the input there. The base of a
    /// thread's first input is empty.
    async fn before_input(
        &self,
        snap: &DynSnapshot,
        page: &[DynSnapshot],
    ) -> ApiResult<Option<Value>> {
        if snap.metadata.get("source").and_then(Value::as_str) != Some("input") {
            return Ok(None);
        }
        let Some(base) = snap.metadata.get("turn_base").and_then(Value::as_str) else {
            return Ok(Some(json!({})));
        };
        if let Some(s) = page.iter().find(|s| s.checkpoint_id == base) {
            return Ok(Some(s.values.clone()));
        }
        Ok(Some(
            self.graph
                .state(&self.thread, Some(base))
                .await?
                .map_or_else(|| json!({}), |s| s.values),
        ))
    }

    /// Sends up to `limit` states: `page` (read asking for `asked`) and the pages after it.
    async fn stream(
        self,
        mut page: Vec<DynSnapshot>,
        mut asked: usize,
        limit: usize,
        mut sink: ArraySink,
    ) {
        let mut left = limit;
        loop {
            for snap in &page {
                let item = match self.item(snap, &page).await {
                    Ok(i) => i,
                    Err(e) => return sink.fail(e).await,
                };
                left -= 1;
                if sink.send(&item).await.is_err() || left == 0 {
                    return sink.finish().await;
                }
            }
            // A short page: the history ended.
            let Some(last) = page.last().filter(|_| page.len() >= asked) else {
                return sink.finish().await;
            };
            asked = page_size(sink.written(), sink.items()).min(left);
            let before = Some(last.checkpoint_id.clone());
            page = match self.page(before, asked).await {
                Ok(p) => p,
                Err(e) => return sink.fail(e).await,
            };
        }
    }
}

/// How many states to read next, given what the ones sent so far weighed.
fn page_size(bytes: usize, items: usize) -> usize {
    match bytes.checked_div(items) {
        Some(avg) if avg > 0 => (PAGE_BYTES / avg).clamp(1, MAX_PAGE),
        _ => FIRST_PAGE,
    }
}

async fn history_of(
    state: &AppState,
    user: &User,
    id: &str,
    q: HistoryQuery,
) -> ApiResult<JsonArray<Vec<ThreadState>>> {
    let t = own_thread(state, user, id).await?;
    let max_bytes = state.max_response_bytes;
    let Some(g) = thread_graph(state, &t) else {
        return Ok(JsonArray::spawn(max_bytes, |sink| sink.finish()));
    };
    let ns = subgraph_ns(&q.checkpoint).unwrap_or_default().to_string();
    let (graph, thread) = in_namespace(g, id, &ns)?;
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
    let limit = q.limit.unwrap_or(10).clamp(1, MAX_LIMIT);
    let reading = Reading {
        graph,
        thread,
        id: id.to_string(),
        ns,
        filter: q.metadata.filter(|m| !m.is_empty()),
        select: q.select,
    };
    // The first page is read before the response starts: an error there is answered with
    // its status.
    let asked = FIRST_PAGE.min(limit);
    let first = reading.page(before, asked).await?;
    Ok(JsonArray::spawn(max_bytes, move |sink| {
        reading.stream(first, asked, limit, sink)
    }))
}

/// `POST /threads/{id}/history`.
pub(crate) async fn post_history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    OptionalJson(q): OptionalJson<HistoryQuery>,
) -> ApiResult<JsonArray<Vec<ThreadState>>> {
    history_of(&state, &user, &id, q).await
}

/// `GET /threads/{id}/history?limit=&before=`.
pub(crate) async fn get_history(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    params: Params<HistoryParams>,
) -> ApiResult<JsonArray<Vec<ThreadState>>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_shrink_for_big_states_and_grow_for_small_ones() {
        assert_eq!(page_size(0, 0), FIRST_PAGE);
        assert_eq!(page_size(4 * 7 * 1024 * 1024, 4), 1);
        assert_eq!(page_size(4 * 1024 * 1024, 4), 4);
        assert_eq!(page_size(4 * 1000, 4), MAX_PAGE);
    }
}
