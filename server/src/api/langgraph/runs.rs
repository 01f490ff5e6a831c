//! Creating runs: background, streamed and awaited, on a thread or stateless (on a
//! temporary thread). A thread's existing runs are in `thread_runs`.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use palgraph::dynamic::DynInput;
use palgraph::{NodeSet, Resume};
use serde_json::{json, Value};

use super::common::{assistant, checkpoint_id_of, with_header, ThreadPath};
use super::models::{
    CreateRun, DurabilityMode, Goto, IfNotExists, OnCompletion, RunConfigBody, RunOut, StreamModes,
};
use super::stream::{location, spawn_cleanup, stream_response, wait_response};
use super::translate::Mode;
use crate::api::admission::{admit, Admit, ThreadRule};
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::ApiJson;
use crate::api::AppState;
use crate::auth::User;
use crate::contract::OnDisconnect;
use crate::graphs::GraphEntry;
use crate::runs::spec::RunSpec;
use crate::store::{MultitaskStrategy, Run};

/// Stream modes by name, validated (default `values`).
pub(crate) fn checked_modes(asked: Vec<String>) -> ApiResult<Vec<Mode>> {
    StreamModes::named(asked)
        .map(|m| m.0)
        .map_err(ApiError::Invalid)
}

/// The checkpoint a request forks from: `checkpoint_id`, `checkpoint.checkpoint_id` or
/// `config.configurable.checkpoint_id`.
fn fork_of(req: &CreateRun) -> Option<String> {
    checkpoint_id_of(&req.checkpoint, &req.checkpoint_id).or_else(|| {
        req.config
            .as_ref()
            .and_then(RunConfigBody::checkpoint_id)
            .map(str::to_string)
    })
}

/// What a request runs: its input, its command, or (neither) a continue. An empty object
/// beside a command is no input: agent-chat-ui answers a prompt with
/// `submit({}, {command: {resume}})`.
fn input_of(req: &CreateRun) -> ApiResult<DynInput> {
    let empty = |v: &Value| v.is_null() || (req.command.is_some() && v == &json!({}));
    let has_input = req.input.as_ref().is_some_and(|v| !empty(v));
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
    let Goto { nodes: goto, sends } = c.goto.clone().unwrap_or_default();
    let update = c.update.clone().filter(|u| !u.is_null());
    if let Some(Value::Array(_)) = &update {
        return Err(ApiError::Invalid(
            "command.update must be an object of state fields".into(),
        ));
    }
    match &c.resume {
        Some(_) if update.is_some() || !goto.is_empty() || !sends.is_empty() => Err(ApiError::Invalid(
            "command.resume cannot be combined with update or goto in palgraph: resume first, then send the update".into(),
        )),
        Some(value) => Ok(DynInput::Resume(Resume::Value(value.clone()))),
        None => Ok(DynInput::Command {
            update,
            goto,
            sends,
        }),
    }
}

/// Validates everything a run request says that does not depend on the thread.
fn check_request(state: &AppState, req: &CreateRun) -> ApiResult<(GraphEntry, Vec<Mode>)> {
    let assistant_id = req
        .assistant_id
        .as_deref()
        .ok_or_else(|| ApiError::Invalid("assistant_id is required".into()))?;
    let modes = req.stream_mode.clone().unwrap_or_default().0;
    if req.after_seconds.is_some_and(|s| s > 0.0) {
        return Err(ApiError::Invalid(
            "after_seconds is not supported: create the run when it should start".into(),
        ));
    }
    if req.webhook.as_deref().is_some_and(|w| !w.is_empty()) {
        return Err(ApiError::Invalid("webhooks are not supported".into()));
    }
    let _ = (req.checkpoint_during, req.strict_resume);
    let entry = assistant(state, assistant_id)?;
    if let DynInput::Command { goto, sends, .. } = input_of(req)? {
        let limit = state.runs.settings.max_sends_per_step;
        if goto.len() + sends.len() > limit {
            return Err(ApiError::Invalid(format!(
                "command.goto starts {} tasks in one step, over this server's limit of {limit} (PALGRAPH_MAX_SENDS_PER_STEP)",
                goto.len() + sends.len()
            )));
        }
    }
    breakpoints(&entry, "interrupt_before", req.interrupt_before.as_ref())?;
    breakpoints(&entry, "interrupt_after", req.interrupt_after.as_ref())?;
    Ok((entry, modes))
}

/// A run's `interrupt_before` / `interrupt_after` (absent: the graph's own), each node
/// one of the graph's.
fn breakpoints(entry: &GraphEntry, key: &str, set: Option<&NodeSet>) -> ApiResult<Option<NodeSet>> {
    if let Some(NodeSet::Nodes(names)) = set {
        let nodes = entry.graph.nodes();
        if let Some(bad) = names.iter().find(|n| !nodes.contains(n)) {
            return Err(ApiError::Invalid(format!(
                "{key} names `{bad}`, which is not a node of graph `{}` (its nodes: {})",
                entry.graph_id,
                nodes.join(", ")
            )));
        }
    }
    Ok(set.cloned())
}

/// Creates a run from a LangGraph request body; refuses bad input before changing anything.
pub(crate) async fn start(
    state: &AppState,
    user: &User,
    thread_id: &str,
    req: &CreateRun,
) -> ApiResult<Run> {
    Ok(start_keyed(state, user, thread_id, req, None).await?.run)
}

/// Checks a run request that will be made later (a cron's payload): 422 now rather than at
/// each tick.
pub(crate) fn check_later(state: &AppState, req: &CreateRun) -> ApiResult<()> {
    check_request(state, req).map(|_| ())
}

/// [`start`] with an idempotency key: a repeated key returns the run it made (`existing`).
pub(crate) async fn start_keyed(
    state: &AppState,
    user: &User,
    thread_id: &str,
    req: &CreateRun,
    idempotency_key: Option<String>,
) -> ApiResult<crate::store::CreatedRun> {
    let (entry, modes) = check_request(state, req)?;
    let count = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let config = req.config.clone().unwrap_or_default();
    let recursion_limit = count(config.recursion_limit);
    let mut engine_modes = Vec::new();
    for m in &modes {
        for e in m.engine_modes() {
            engine_modes.push(*e);
        }
    }
    let spec = RunSpec {
        interrupt_before: breakpoints(&entry, "interrupt_before", req.interrupt_before.as_ref())?,
        interrupt_after: breakpoints(&entry, "interrupt_after", req.interrupt_after.as_ref())?,
        stream_modes: engine_modes,
        recursion_limit,
        max_concurrency: count(config.max_concurrency),
        durability: req.durability.map(DurabilityMode::engine),
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
            thread: if req.if_not_exists == Some(IfNotExists::Create) {
                ThreadRule::CreateIfMissing
            } else {
                ThreadRule::Existing
            },
            graph: &entry,
            input: input_of(req)?,
            checkpoint_id: fork_of(req),
            multitask: req.multitask_strategy.unwrap_or(MultitaskStrategy::Reject),
            idempotency_key,
            metadata: req.metadata.clone().unwrap_or_default(),
            spec,
        },
    )
    .await?;
    Ok(created)
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
    req.if_not_exists = Some(IfNotExists::Create);
    let thread_id = crate::api::admission::new_thread_id();
    let run = start(state, user, &thread_id, &req).await?;
    Ok((run, req.on_completion != Some(OnCompletion::Keep)))
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
/// created; at most [`AppParts::max_batch_runs`](crate::api::AppParts::max_batch_runs)).
pub(crate) async fn create_batch(
    State(state): State<AppState>,
    user: User,
    ApiJson(reqs): ApiJson<Vec<CreateRun>>,
) -> ApiResult<Json<Vec<RunOut>>> {
    if reqs.len() > state.max_batch_runs {
        return Err(ApiError::Invalid(format!(
            "a batch holds at most {} runs (PALGRAPH_MAX_BATCH_RUNS), not {}",
            state.max_batch_runs,
            reqs.len()
        )));
    }
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
