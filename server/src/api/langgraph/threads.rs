//! `/threads`: create (with supersteps), search, count, get, patch, delete, prune, copy.
//! A thread belongs to its user; anyone else's is a 404.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use palgraph::checkpoint::PruneStrategy;
use palgraph::dynamic::DynSnapshot;
use palgraph::CancelReason;
use serde_json::{json, Map, Value};

use super::common::{assistant, one_of, project, thread_graph, thread_snapshot, ThreadPath};
use super::models::{CreateThread, PatchThread, PruneThreads, Pruned, SearchThreads, ThreadOut};
use crate::api::admission::{check_uuid, own_thread};
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::json_array::JsonArray;
use crate::api::AppState;
use crate::auth::User;
use crate::store::{CancelAction, IfExists, StoreError, Thread, ThreadQuery};

/// The thread as the API shows it (with its latest state).
pub(crate) async fn thread_out(state: &AppState, t: &Thread) -> ApiResult<ThreadOut> {
    let snap = thread_snapshot(state, t).await?;
    Ok(ThreadOut::of(t, snap.as_ref()))
}

/// `POST /threads`.
pub(crate) async fn create(
    State(state): State<AppState>,
    user: User,
    OptionalJson(req): OptionalJson<CreateThread>,
) -> ApiResult<Json<ThreadOut>> {
    let thread_id = match req.thread_id {
        Some(t) => {
            check_uuid(&t, "thread")?;
            t
        }
        None => crate::api::admission::new_thread_id(),
    };
    let mut metadata = req.metadata.unwrap_or_default();
    if let Some(g) = req.graph_id {
        metadata.insert("graph_id".into(), g.into());
    }
    // Checked first: a refused request leaves no thread behind.
    let ttl = super::thread_ttl::parse(req.ttl.as_ref())?;
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
    let new = Thread {
        thread_id: thread_id.clone(),
        owner: user.id.clone(),
        metadata: Value::Object(metadata),
        status: "idle".into(),
        created_at_ms: now,
        updated_at_ms: now,
    };
    // The insert first: a new thread (the usual case) costs one statement. Only a thread
    // that exists already is read, to tell whose it is.
    let t = match state
        .store
        .create_thread(new.clone(), IfExists::Raise)
        .await
    {
        Ok(t) => t,
        Err(StoreError::Exists(what)) => {
            let existing = state.store.get_thread_any(&thread_id).await?;
            match existing {
                Some(e) if e.owner != user.id => {
                    return Err(ApiError::Conflict {
                        code: "exists",
                        message: format!("thread `{thread_id}` already exists"),
                    })
                }
                Some(e) if req.if_exists.unwrap_or_default() == IfExists::DoNothing => {
                    return Ok(Json(thread_out(&state, &e).await?));
                }
                Some(_) => return Err(StoreError::Exists(what).into()),
                // Deleted since: created now, as if it had never existed.
                None => {
                    state
                        .store
                        .create_thread(new, req.if_exists.unwrap_or_default())
                        .await?
                }
            }
        }
        Err(e) => return Err(e.into()),
    };
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
    let t = match ttl {
        Some(ttl) => state
            .store
            .set_thread_ttl(&user.id, &thread_id, Some(ttl))
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("thread `{thread_id}`")))?,
        None => t,
    };
    Ok(Json(thread_out(&state, &t).await?))
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
pub(crate) async fn all_threads(
    state: &AppState,
    user: &User,
    q: &SearchThreads,
) -> ApiResult<Vec<Thread>> {
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

/// The owner's threads matching `q`, in the requested order and page (their states are
/// read as they are written out: see [`search`]).
async fn find(state: &AppState, user: &User, q: &SearchThreads) -> ApiResult<Vec<Thread>> {
    check_search(q)?;
    let limit = q.limit.unwrap_or(10).clamp(1, 1000) as usize;
    let offset = usize::try_from(q.offset.unwrap_or(0).max(0)).unwrap_or(usize::MAX);
    let filter_values = q.values.as_ref().is_some_and(|v| !v.is_empty());
    let default_order = matches!(q.sort_by.as_deref(), None | Some("updated_at"))
        && q.sort_order.as_deref() != Some("asc");
    if default_order && !filter_values {
        // The store pages in this order itself.
        return Ok(state
            .store
            .search_threads(
                &user.id,
                &ThreadQuery {
                    metadata: q.metadata.clone(),
                    status: q.status.clone(),
                    ids: q.ids.clone(),
                    limit: i64::try_from(limit).unwrap_or(i64::MAX),
                    offset: i64::try_from(offset).unwrap_or(i64::MAX),
                },
            )
            .await?);
    }
    // Another order or a values filter: every matching thread's sort key first, reading one
    // state at a time (a state is dropped once its key is taken).
    let needs_state = filter_values || q.sort_by.as_deref() == Some("state_updated_at");
    let mut rows: Vec<(String, Thread)> = Vec::new();
    for t in all_threads(state, user, q).await? {
        let snap = if needs_state {
            let snap = thread_snapshot(state, &t).await?;
            if !values_match(&q.values, snap.as_ref()) {
                continue;
            }
            snap.map(|s| s.created_at_ms)
        } else {
            None
        };
        let key = match q.sort_by.as_deref() {
            Some("thread_id") => t.thread_id.clone(),
            Some("status") => t.status.clone(),
            Some("created_at") => format!("{:020}", t.created_at_ms),
            Some("state_updated_at") => format!("{:020}", snap.unwrap_or(t.updated_at_ms)),
            _ => format!("{:020}", t.updated_at_ms),
        };
        rows.push((key, t));
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    if q.sort_order.as_deref() != Some("asc") {
        rows.reverse();
    }
    Ok(rows
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(_, t)| t)
        .collect())
}

/// `POST /threads/search`: the page of threads, each with its state read and written out
/// in turn ([`JsonArray`]); the response ends after the thread that takes it past the
/// server's response size (the client asks again from the next offset).
pub(crate) async fn search(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchThreads>,
) -> ApiResult<JsonArray<Vec<ThreadOut>>> {
    let page = find(&state, &user, &q).await?;
    let max_bytes = state.max_response_bytes;
    Ok(JsonArray::spawn(max_bytes, move |mut sink| async move {
        for t in &page {
            let out = match thread_out(&state, t).await {
                Ok(o) => serde_json::to_value(o).unwrap_or(Value::Null),
                Err(e) => return sink.fail(e).await,
            };
            let Some(item) = project(vec![out], &q.select).pop() else {
                continue;
            };
            if sink.send(&item).await.is_err() {
                break;
            }
        }
        sink.finish().await;
    }))
}

/// `POST /threads/count`.
pub(crate) async fn count(
    State(state): State<AppState>,
    user: User,
    OptionalJson(q): OptionalJson<SearchThreads>,
) -> ApiResult<Json<usize>> {
    check_search(&q)?;
    let threads = all_threads(&state, &user, &q).await?;
    let mut n = 0usize;
    for t in &threads {
        if q.values.is_none() || values_match(&q.values, thread_snapshot(&state, t).await?.as_ref())
        {
            n += 1;
        }
    }
    Ok(Json(n))
}

/// `GET /threads/{id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> ApiResult<Json<ThreadOut>> {
    let t = own_thread(&state, &user, &id).await?;
    Ok(Json(thread_out(&state, &t).await?))
}

/// `PATCH /threads/{id}`: merges metadata; a `ttl` replaces the thread's time to live.
pub(crate) async fn patch(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    OptionalJson(p): OptionalJson<PatchThread>,
) -> ApiResult<Json<ThreadOut>> {
    let ttl = super::thread_ttl::parse(p.ttl.as_ref())?;
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
        .patch_thread(&user.id, &id, &Value::Object(p.metadata), ttl)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("thread `{id}`")))?;
    Ok(Json(thread_out(&state, &t).await?))
}

/// Deletes a thread with its runs, events, checkpoints and crons (its active runs are
/// cancelled).
pub(crate) async fn remove(state: &AppState, user: &User, t: &Thread) -> ApiResult<()> {
    state
        .crons
        .delete_for_thread(&user.id, &t.thread_id)
        .await?;
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
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> ApiResult<StatusCode> {
    let t = own_thread(&state, &user, &id).await?;
    remove(&state, &user, &t).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /threads/prune`: deletes threads, or keeps only their latest checkpoint.
pub(crate) async fn prune(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<PruneThreads>,
) -> ApiResult<Json<Pruned>> {
    one_of(
        "strategy",
        req.strategy.as_deref(),
        &["delete", "keep_latest"],
    )?;
    let mut threads = Vec::new();
    for id in &req.thread_ids {
        check_uuid(id, "thread")?;
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
            remove(&state, &user, t).await?;
        }
    }
    Ok(Json(Pruned {
        pruned_count: threads.len(),
    }))
}

/// `POST /threads/{id}/copy`.
pub(crate) async fn copy(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
) -> ApiResult<Json<ThreadOut>> {
    let t = own_thread(&state, &user, &id).await?;
    let new_id = crate::api::admission::new_thread_id();
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
    Ok(Json(thread_out(&state, &copy).await?))
}
