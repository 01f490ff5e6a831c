//! Runs: background, streamed and awaited, on a thread or stateless (on a temporary
//! thread); listed, read, deleted, joined and cancelled.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use palgraph::dynamic::DynInput;
use palgraph::{CancelReason, Resume};
use serde_json::{json, Value};

use super::common::{
    assistant, checkpoint_id_of, one_of, project, values, with_header, Params, RunPath, ThreadPath,
};
use super::models::{
    api_status, CancelMany, CancelManyParams, CancelParams, CreateRun, JoinParams,
    JoinStreamParams, ListRunsParams, RunOut, SearchThreads,
};
use super::stream::{
    last_seq, lg_stream, location, run_modes, spawn_cleanup, stream_response, wait_for,
    wait_response, RunGuard,
};
use super::threads::all_threads;
use super::translate::Mode;
use crate::api::admission::{admit, own_thread, Admit, ThreadRule};
use crate::api::auth::User;
use crate::api::chat::OnDisconnect;
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::{ApiJson, OptionalJson};
use crate::api::sse::{last_event_id, sse_response};
use crate::api::AppState;
use crate::graphs::GraphEntry;
use crate::runs::spec::RunSpec;
use crate::store::{CancelAction, MultitaskStrategy, Run};

/// The stream modes asked for (default `values`), validated.
fn parse_modes(v: &Option<Value>) -> ApiResult<Vec<Mode>> {
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

/// Stream modes by name, validated (default `values`).
pub(crate) fn checked_modes(asked: Vec<String>) -> ApiResult<Vec<Mode>> {
    let mut out: Vec<Mode> = Vec::new();
    for name in asked {
        let m = Mode::parse(&name).ok_or_else(|| {
            ApiError::Invalid(format!(
                "unknown stream_mode `{name}`; one of {}",
                Mode::ALL.map(Mode::as_str).join(", ")
            ))
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        out.push(Mode::Values);
    }
    Ok(out)
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

/// What a request runs: its input, its command, or (neither) a continue.
fn input_of(req: &CreateRun) -> ApiResult<DynInput> {
    let has_input = req.input.as_ref().is_some_and(|v| !v.is_null());
    let Some(c) = &req.command else {
        return Ok(match &req.input {
            Some(v) if has_input => DynInput::Turn(v.clone()),
            _ => DynInput::Continue,
        });
    };
    if has_input {
        return Err(ApiError::Invalid(
            "give either input or command, not both".into(),
        ));
    }
    let goto = goto_list(&c.goto)?;
    let update = c.update.clone().filter(|u| !u.is_null());
    if let Some(Value::Array(_)) = &update {
        return Err(ApiError::Invalid(
            "command.update must be an object of state fields".into(),
        ));
    }
    match &c.resume {
        Some(_) if update.is_some() || !goto.is_empty() => Err(ApiError::Invalid(
            "command.resume cannot be combined with update or goto in palgraph: resume first, then send the update".into(),
        )),
        Some(value) => Ok(DynInput::Resume(Resume::Value(value.clone()))),
        None => Ok(DynInput::Command { update, goto }),
    }
}

/// Validates everything a run request says that does not depend on the thread.
fn check_request(state: &AppState, req: &CreateRun) -> ApiResult<(GraphEntry, Vec<Mode>)> {
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
    input_of(req)?;
    Ok((entry, modes))
}

/// Creates a run from a LangGraph request body; refuses bad input before changing anything.
async fn start(state: &AppState, user: &User, thread_id: &str, req: &CreateRun) -> ApiResult<Run> {
    let (entry, modes) = check_request(state, req)?;
    let recursion_limit = req
        .config
        .as_ref()
        .and_then(|c| c.get("recursion_limit"))
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let mut engine_modes = Vec::new();
    for m in &modes {
        for e in m.engine_modes() {
            engine_modes.push(*e);
        }
    }
    let spec = RunSpec {
        stream_modes: engine_modes,
        recursion_limit,
        context: req.context.clone().unwrap_or_default(),
        api: json!({
            "stream_mode": modes.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
            "stream_subgraphs": req.stream_subgraphs.unwrap_or(false),
            "stream_resumable": req.stream_resumable.unwrap_or(false),
            "config": req.config,
        }),
        ..Default::default()
    };
    let created = admit(
        state,
        Admit {
            user,
            thread_id,
            thread: if req.if_not_exists.as_deref() == Some("create") {
                ThreadRule::CreateIfMissing
            } else {
                ThreadRule::Existing
            },
            graph: &entry,
            input: input_of(req)?,
            checkpoint_id: fork_of(req),
            multitask: req.multitask_strategy.unwrap_or(MultitaskStrategy::Reject),
            idempotency_key: None,
            metadata: req.metadata.clone().unwrap_or_default(),
            spec,
        },
    )
    .await?;
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
    let run = start(state, user, &thread_id, &req).await?;
    Ok((run, req.on_completion.as_deref() != Some("keep")))
}

fn created_response(run: &Run) -> Response {
    with_header(
        Json(RunOut::from(run)).into_response(),
        "content-location",
        &location(run),
    )
}

fn cancels(req: &CreateRun) -> bool {
    req.on_disconnect == Some(OnDisconnect::Cancel)
}

/// `POST /threads/{id}/runs`: a background run.
pub(crate) async fn create(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start(&state, &user, &id, &req).await?;
    Ok(created_response(&run))
}

/// `POST /runs`: a background stateless run.
pub(crate) async fn create_stateless(
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
) -> ApiResult<Json<Vec<RunOut>>> {
    for r in &reqs {
        check_request(&state, r)?;
    }
    let mut out = Vec::with_capacity(reqs.len());
    for r in &reqs {
        let (run, cleanup) = start_stateless(&state, &user, r).await?;
        if cleanup {
            spawn_cleanup(state.clone(), run.clone());
        }
        out.push(RunOut::from(&run));
    }
    Ok(Json(out))
}

/// `POST /threads/{id}/runs/stream`.
pub(crate) async fn stream(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start(&state, &user, &id, &req).await?;
    Ok(stream_response(&state, run, cancels(&req), false))
}

/// `POST /runs/stream`: a stateless run, streamed.
pub(crate) async fn stream_stateless(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let (run, cleanup) = start_stateless(&state, &user, &req).await?;
    Ok(stream_response(&state, run, cancels(&req), cleanup))
}

/// `POST /threads/{id}/runs/wait`.
pub(crate) async fn wait(
    State(state): State<AppState>,
    user: User,
    Path(ThreadPath { thread_id: id }): Path<ThreadPath>,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let run = start(&state, &user, &id, &req).await?;
    wait_response(&state, run, cancels(&req), false).await
}

/// `POST /runs/wait`: a stateless run, awaited.
pub(crate) async fn wait_stateless(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<CreateRun>,
) -> ApiResult<Response> {
    let (run, cleanup) = start_stateless(&state, &user, &req).await?;
    wait_response(&state, run, cancels(&req), cleanup).await
}

const RUN_STATUSES: [&str; 6] = [
    "pending",
    "running",
    "error",
    "success",
    "timeout",
    "interrupted",
];

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
    let runs = match status {
        // Filter before paging.
        Some(_) => state.store.list_runs(&id, 100_000, 0).await?,
        None => state.store.list_runs(&id, limit, offset).await?,
    };
    let mut list: Vec<&Run> = runs
        .iter()
        .filter(|r| status.is_none_or(|s| api_status(r.status) == s))
        .collect();
    if status.is_some() {
        list = list
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect();
    }
    let select = Some(params.all("select")).filter(|s| !s.is_empty());
    Ok(Json(project(
        values(list.into_iter().map(RunOut::from)),
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
    wait_for(&state, &run).await;
    guard.cancel_armed = false;
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
