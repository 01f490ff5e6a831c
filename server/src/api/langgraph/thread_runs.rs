//! A thread's existing runs: listed, read, deleted, joined and cancelled.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use palgraph::CancelReason;
use serde_json::{json, Value};

use super::common::{one_of, project, values, Params, RunPath, ThreadPath};
use super::models::{
    api_status, CancelMany, CancelManyParams, CancelParams, JoinParams, JoinStreamParams,
    ListRunsParams, RunOut, SearchThreads,
};
use super::runs::checked_modes;
use super::stream::{last_seq, lg_stream, run_modes, wait_for, RunGuard};
use super::threads::all_threads;
use crate::api::admission::{check_uuid, own_thread};
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::OptionalJson;
use crate::api::sse::{last_event_id, sse_response};
use crate::api::AppState;
use crate::auth::User;
use crate::store::{CancelAction, Run};

const RUN_STATUSES: [&str; 6] = [
    "pending",
    "running",
    "error",
    "success",
    "timeout",
    "interrupted",
];

/// Runs read at once while a status filter pages a thread's runs.
const RUNS_CHUNK: i64 = 200;

/// `GET /threads/{id}/runs?limit&offset&status&select`.
pub(crate) async fn list(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    params: Params<ListRunsParams>,
) -> ApiResult<Json<Vec<Value>>> {
    own_thread(&state, &user, &id).await?;
    let limit = params.number("limit", 10)?.clamp(1, 1000);
    let offset = params.number("offset", 0)?.max(0);
    let status = params.get("status");
    one_of("status", status, &RUN_STATUSES)?;
    let list: Vec<Run> = match status {
        None => state.store.list_runs(&id, limit, offset).await?,
        // Filtered before paging, reading the thread's runs a chunk at a time.
        Some(s) => {
            let (mut skip, mut out, mut at) = (offset, Vec::new(), 0);
            loop {
                let chunk = state.store.list_runs(&id, RUNS_CHUNK, at).await?;
                let read = chunk.len();
                for r in chunk.into_iter().filter(|r| api_status(r.status) == s) {
                    if skip > 0 {
                        skip -= 1;
                    } else if out.len() < limit as usize {
                        out.push(r);
                    }
                }
                at += RUNS_CHUNK;
                if out.len() >= limit as usize || (read as i64) < RUNS_CHUNK {
                    break out;
                }
            }
        }
    };
    let select = Some(params.all("select")).filter(|s| !s.is_empty());
    Ok(Json(project(
        values(list.iter().map(RunOut::from)),
        &select,
    )))
}

/// The caller's run of the caller's thread, or 404.
pub(crate) async fn own_run(
    state: &AppState,
    user: &User,
    thread_id: &str,
    run_id: &str,
) -> ApiResult<Run> {
    own_thread(state, user, thread_id).await?;
    check_uuid(run_id, "run")?;
    state
        .store
        .get_run(&user.id, thread_id, run_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("run `{run_id}`")))
}

/// `GET /threads/{id}/runs/{run_id}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    user: User,
    Path(RunPath {
        thread_id: id,
        run_id,
    }): Path<RunPath>,
) -> ApiResult<Json<RunOut>> {
    Ok(Json(RunOut::from(
        &own_run(&state, &user, &id, &run_id).await?,
    )))
}

/// `DELETE /threads/{id}/runs/{run_id}` (not while it runs).
pub(crate) async fn delete(
    State(state): State<AppState>,
    user: User,
    Path(RunPath {
        thread_id: id,
        run_id,
    }): Path<RunPath>,
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
pub(crate) async fn join(
    State(state): State<AppState>,
    user: User,
    Path(RunPath {
        thread_id: id,
        run_id,
    }): Path<RunPath>,
    params: Params<JoinParams>,
) -> ApiResult<Json<Value>> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    let mut guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: params.flag("cancel_on_disconnect")?.unwrap_or(false),
        cleanup: false,
    };
    let ended = wait_for(&state, &run).await;
    guard.cancel_armed = false;
    if !ended {
        return Err(super::stream::goes_on_elsewhere(&run));
    }
    Ok(Json(super::stream::final_values(&state, &run).await?))
}

/// Joins a run's stream: `Last-Event-ID: -1` replays the whole run, an event id resumes
/// after it, and no id follows the run from now on.
async fn join_response<Q>(
    state: &AppState,
    run: Run,
    headers: &HeaderMap,
    params: &Params<Q>,
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
        run,
        cancel_armed: params.flag("cancel_on_disconnect")?.unwrap_or(false),
        cleanup: false,
    };
    Ok(sse_response(
        state,
        lg_stream(state.clone(), modes, skip_through, head, guard),
        &[],
    ))
}

/// `GET /threads/{id}/runs/{run_id}/stream`.
pub(crate) async fn join_stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(RunPath {
        thread_id: id,
        run_id,
    }): Path<RunPath>,
    params: Params<JoinStreamParams>,
) -> ApiResult<Response> {
    let run = own_run(&state, &user, &id, &run_id).await?;
    join_response(&state, run, &headers, &params).await
}

/// The path of a run, without its thread.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct RunIdPath {
    /// The run's id.
    run_id: String,
}

/// `GET /runs/{run_id}/stream` (the JS SDK's `joinStream` without a thread).
pub(crate) async fn join_stream_by_run(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(RunIdPath { run_id }): Path<RunIdPath>,
    params: Params<JoinStreamParams>,
) -> ApiResult<Response> {
    check_uuid(&run_id, "run")?;
    let run = state
        .store
        .get_run_any(&run_id)
        .await?
        .filter(|r| r.owner == user.id)
        .ok_or_else(|| ApiError::NotFound(format!("run `{run_id}`")))?;
    join_response(&state, run, &headers, &params).await
}

fn cancel_action<Q>(params: &Params<Q>) -> ApiResult<CancelAction> {
    match params.get("action") {
        None | Some("interrupt") => Ok(CancelAction::Interrupt),
        Some("rollback") => Ok(CancelAction::Rollback),
        Some(other) => Err(ApiError::Invalid(format!(
            "action must be interrupt or rollback, not `{other}`"
        ))),
    }
}

/// `POST /threads/{id}/runs/{run_id}/cancel?wait&action` (idempotent).
pub(crate) async fn cancel(
    State(state): State<AppState>,
    user: User,
    Path(RunPath {
        thread_id: id,
        run_id,
    }): Path<RunPath>,
    params: Params<CancelParams>,
) -> ApiResult<Response> {
    let action = cancel_action(&params)?;
    let wait = params.flag("wait")?.unwrap_or(false);
    let run = own_run(&state, &user, &id, &run_id).await?;
    state
        .runs
        .cancel(&run.run_id, action, CancelReason::UserCancelled)
        .await?;
    if !wait {
        return Ok((StatusCode::ACCEPTED, Json(json!({}))).into_response());
    }
    // The run's terminal event is stored with its end (a rolled back run is deleted in the
    // same transaction), so once the stream ends the run is as it will stay.
    let _ = tokio::time::timeout(Duration::from_secs(30), wait_for(&state, &run)).await;
    let after = state.store.get_run_any(&run.run_id).await?;
    Ok(Json(
        after
            .as_ref()
            .map(|r| json!(RunOut::from(r)))
            .unwrap_or_else(|| json!({})),
    )
    .into_response())
}

/// `POST /runs/cancel?action`: the given runs of a thread, or every pending / running run of
/// the caller.
pub(crate) async fn cancel_many(
    State(state): State<AppState>,
    user: User,
    params: Params<CancelManyParams>,
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
