//! The seed's chat contract, served on top of threads and runs.
//!
//! - `POST /chat` starts a turn and streams `data: {json}` events: `status` per node (and
//!   `token` for streamed answer text), then exactly one terminal event: `response`,
//!   `interrupt`, `error`, or `cancelled` (a stop);
//! - `POST /chat/resume` answers a PalAssist prompt (`type: "cancel"` resumes with null);
//! - `GET /chat/history/{thread_id}` returns the messages and the pending prompt;
//! - `GET /chat/stream/{thread_id}` reconnects: a `snapshot` first, then live events
//!   (`Last-Event-ID: <run_id>:<seq>` resumes a dropped stream without a snapshot);
//! - `POST /threads/{thread_id}/cancel` stops the thread's active run.
//!
//! Every event carries an SSE id `<run_id>:<seq>`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use palgraph::{CancelReason, Event, RunEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::auth::User;
use super::error::{ApiError, ApiResult};
use super::extract::ApiJson;
use super::sse::{data_event, last_event_id, sse_response};
use super::AppState;
use crate::runs::spec::{CommandSpec, Resumed, RunSpec};
use crate::runs::Runs;
use crate::store::{CancelAction, MultitaskStrategy, NewRun, Run, RunState, Thread};

/// The longest chat message accepted, in bytes (its TipTap JSON counts apart, within the
/// request's 1 MiB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// What a client may do when it disconnects from a run's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnDisconnect {
    /// The run goes on (the default): results are kept, the stream can be joined again.
    #[default]
    Continue,
    /// The run is cancelled (reason `disconnect`).
    Cancel,
}

/// `POST /chat`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatRequest {
    /// The user's message (plain text).
    pub message: String,
    /// The editor's TipTap JSON, with mention nodes for tagged documents.
    #[serde(default)]
    pub tiptap_json: Option<Value>,
    /// The conversation (a UUID); a new one when absent or unknown.
    #[serde(default)]
    pub thread_id: Option<String>,
    /// Documents tagged in the message.
    #[serde(default)]
    pub tagged_doc_ids: Vec<String>,
    /// Document sets tagged in the message.
    #[serde(default)]
    pub tagged_set_ids: Vec<String>,
    /// An explicit action (summarize, inquire, compare, audit).
    #[serde(default)]
    pub action: Option<String>,
    /// Search the web too.
    #[serde(default)]
    pub enable_web_search: bool,
    /// A client turn id: a retried POST with the same id returns the same run.
    #[serde(default)]
    pub client_turn_id: Option<String>,
    /// What to do when the thread is busy (default: reject with 409).
    #[serde(default)]
    pub multitask_strategy: Option<MultitaskStrategy>,
    /// What a disconnect does to the run (default: continue).
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
}

/// A resume value.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResumeValue {
    /// `action_choice`, `doc_choice`, `text_input`, or `cancel`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The chosen value (an action, a document id, "all", free text); ignored for cancel.
    #[serde(default)]
    pub value: Value,
}

/// `POST /chat/resume`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResumeRequest {
    /// The conversation.
    pub thread_id: String,
    /// The answer.
    pub resume_value: ResumeValue,
    /// What a disconnect does to the run (default: continue).
    #[serde(default)]
    pub on_disconnect: Option<OnDisconnect>,
}

/// One message of `GET /chat/history`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMessage {
    /// Its id.
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Citations, prompt records, `interrupted`, ...
    pub metadata: Value,
}

/// `GET /chat/history/{thread_id}`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct History {
    /// The conversation.
    pub thread_id: String,
    /// Its messages, oldest first (no system messages).
    pub messages: Vec<HistoryMessage>,
    /// The prompt waiting for an answer, as the `interrupt` event shows it.
    pub pending_interrupt: Option<Value>,
}

/// Maps a chat request to the chat graph's input (PalAssist's `turn_input`).
pub type TurnInputFn = Arc<dyn Fn(&ChatRequest) -> Result<Value, String> + Send + Sync>;

/// The graph behind the chat endpoints.
#[derive(Clone)]
pub struct ChatBinding {
    /// Its graph id.
    pub graph_id: String,
    /// The request -> input mapping.
    pub turn_input: TurnInputFn,
}

fn binding(state: &AppState) -> ApiResult<&ChatBinding> {
    state
        .chat
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("the chat graph".into()))
}

pub(crate) fn check_uuid(id: &str, what: &str) -> ApiResult<()> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|_| ApiError::Invalid(format!("{what} `{id}` is not a valid UUID")))
}

/// The owner's thread, or 404 (also when it belongs to someone else).
pub(crate) async fn own_thread(
    state: &AppState,
    user: &User,
    thread_id: &str,
) -> ApiResult<Thread> {
    state
        .store
        .get_thread(&user.id, thread_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("thread `{thread_id}`")))
}

/// A PalAssist prompt as the `interrupt` event shows it.
fn prompt_event(interrupt: &palgraph::InterruptInfo) -> Value {
    let mut v = match &interrupt.value {
        Value::Object(m) => Value::Object(m.clone()),
        other => json!({"interrupt_type": "text_input", "message": other, "options": []}),
    };
    if let Some(m) = v.as_object_mut() {
        m.insert("type".into(), "interrupt".into());
        m.insert("interrupt_id".into(), interrupt.id.clone().into());
        m.entry("options").or_insert(json!([]));
    }
    v
}

fn response_event(values: &Value) -> Value {
    let pick = |k: &str, default: Value| values.get(k).cloned().unwrap_or(default);
    json!({
        "type": "response",
        "response": pick("response", json!("")),
        "citations": pick("citations", json!([])),
        "action": pick("action", Value::Null),
        "inference_confidence": pick("inference_confidence", Value::Null),
        "retrieval_confidence": pick("retrieval_confidence", Value::Null),
        "tokens_used": pick("tokens_used", json!(0)),
        "cost_usd": pick("cost_usd", json!(0.0)),
        "cancelled": pick("cancelled", json!(false)),
        "notices": pick("notices", json!([])),
        "answered_by": pick("answered_by", Value::Null),
    })
}

/// Turns a run event into chat events (most events map to nothing).
async fn chat_events(state: &AppState, run: &Run, e: &RunEvent) -> Vec<Value> {
    match &e.event {
        Event::NodeStarted {
            node,
            status: Some(line),
            ..
        } => {
            vec![json!({"type": "status", "node": node, "message": line})]
        }
        Event::Status {
            node,
            message,
            details,
        } => {
            let mut v = json!({"type": "status", "node": node, "message": message});
            if let (Some(o), Some(d)) = (v.as_object_mut(), details.as_object()) {
                for (k, x) in d {
                    o.insert(k.clone(), x.clone());
                }
            }
            vec![v]
        }
        Event::MessageDelta {
            node,
            message_id,
            delta,
        } => {
            vec![json!({"type": "token", "node": node, "message_id": message_id, "content": delta})]
        }
        // The message is streamed again from its start (its node ran again after a
        // takeover): the client replaces the partial text instead of appending to it.
        Event::MessageReset { node, message_id } => {
            vec![
                json!({"type": "token", "node": node, "message_id": message_id, "content": "", "reset": true}),
            ]
        }
        Event::Completed { checkpoint_id } => {
            let Some(g) = state.graphs.find(&run.graph_id) else {
                return vec![json!({"type": "error", "message": "the run's graph is not served"})];
            };
            // The answer is in the final checkpoint: read it even if the database is away
            // for a moment (a restart), rather than send an empty answer.
            let read = crate::retry::transient(
                "reading the final state",
                std::time::Duration::from_secs(60),
                || true,
                || g.graph.state(&run.thread_id, checkpoint_id.as_deref()),
            )
            .await;
            match read {
                Ok(snap) => vec![response_event(
                    &snap.map(|s| s.values).unwrap_or(Value::Null),
                )],
                Err(e) => vec![
                    json!({"type": "error", "message": format!("the answer was saved but could not be read: {e}")}),
                ],
            }
        }
        Event::Interrupted { interrupts } => match interrupts.first() {
            Some(i) => vec![prompt_event(i)],
            None => vec![
                json!({"type": "error", "message": "the run stopped at an interrupt without a prompt"}),
            ],
        },
        Event::Failed { error, .. } => vec![json!({"type": "error", "message": error})],
        Event::Cancelled { reason } => vec![json!({"type": "cancelled", "reason": reason})],
        _ => Vec::new(),
    }
}

/// Cancels the run if the stream is dropped before its terminal event (on_disconnect=cancel).
struct DisconnectGuard {
    runs: Arc<Runs>,
    run_id: String,
    armed: bool,
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if self.armed {
            let (runs, run_id) = (self.runs.clone(), self.run_id.clone());
            tokio::spawn(async move {
                if let Err(e) = runs
                    .cancel(&run_id, CancelAction::Interrupt, CancelReason::Disconnect)
                    .await
                {
                    tracing::warn!(error = %e, "could not cancel a run after its client left");
                }
            });
        }
    }
}

/// The chat event stream of a run from `after` on.
pub(crate) fn chat_stream(
    state: AppState,
    run: Run,
    after: u64,
    on_disconnect: OnDisconnect,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    let mut guard = DisconnectGuard {
        runs: state.runs.clone(),
        run_id: run.run_id.clone(),
        armed: on_disconnect == OnDisconnect::Cancel,
    };
    let events = state.runs.watch(&run.run_id, after);
    events
        .then(move |e| {
            let (state, run) = (state.clone(), run.clone());
            async move {
                let id = format!("{}:{}", run.run_id, e.seq);
                let out = chat_events(&state, &run, &e).await;
                (e.event.is_terminal(), id, out)
            }
        })
        .flat_map(move |(terminal, id, out)| {
            // Capture the whole guard (not just its flag): it lives as long as the stream.
            let g = &mut guard;
            if terminal {
                g.armed = false;
            }
            futures_util::stream::iter(
                out.into_iter()
                    .map(move |v| Ok(data_event(Some(id.clone()), &v)))
                    .collect::<Vec<_>>(),
            )
        })
}

fn new_run_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

fn spec_json(spec: RunSpec) -> ApiResult<Value> {
    serde_json::to_value(spec).map_err(|e| ApiError::Internal(e.to_string()))
}

/// An assistant message that records a prompt abandoned by a new message.
fn abandoned_prompt(interrupt: &palgraph::InterruptInfo) -> Value {
    let v = &interrupt.value;
    json!({
        "type": "ai",
        "id": format!("prompt-{}", interrupt.id),
        "content": v.get("message").cloned().unwrap_or(Value::String(String::new())),
        "metadata": {
            "kind": "palassist_prompt",
            "interrupt_type": v.get("interrupt_type").cloned().unwrap_or(Value::Null),
            "answer": null,
            "cancelled": true
        }
    })
}

/// `POST /chat`.
pub async fn chat(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ChatRequest>,
) -> ApiResult<Response> {
    let chat = binding(&state)?.clone();
    let entry = state.graphs.find(&chat.graph_id).cloned().ok_or_else(|| {
        ApiError::Internal(format!("chat graph `{}` is not registered", chat.graph_id))
    })?;
    if req.message.trim().is_empty() && req.tiptap_json.is_none() {
        return Err(ApiError::Invalid("message is empty".into()));
    }
    if req.message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::Invalid(format!(
            "message is {} bytes long; the most a chat message may hold is {MAX_MESSAGE_BYTES} bytes (upload long texts as a document)",
            req.message.len()
        )));
    }
    let thread_id = match &req.thread_id {
        Some(t) => {
            check_uuid(t, "thread_id")?;
            t.clone()
        }
        None => uuid::Uuid::new_v4().to_string(),
    };
    // A thread id made here is new: nothing to look up, no prompt to abandon.
    let existing = match &req.thread_id {
        Some(_) => state.store.get_thread_any(&thread_id).await?,
        None => None,
    };
    let is_new = existing.is_none();
    match existing {
        Some(t) if t.owner != user.id => {
            return Err(ApiError::NotFound(format!("thread `{thread_id}`")))
        }
        Some(_) => {}
        None => {
            let now = crate::store::now_ms();
            state
                .store
                .create_thread(
                    Thread {
                        thread_id: thread_id.clone(),
                        owner: user.id.clone(),
                        metadata: json!({"graph_id": chat.graph_id, "assistant_id": entry.assistant_id}),
                        status: "idle".into(),
                        created_at_ms: now,
                        updated_at_ms: now,
                    },
                    crate::store::IfExists::DoNothing,
                )
                .await?;
        }
    }
    let mut input = (chat.turn_input)(&req).map_err(ApiError::Invalid)?;
    // A message on a thread waiting at a prompt abandons the prompt (recorded as cancelled)
    // in the same checkpoint that starts the new turn.
    let snap = match is_new {
        true => None,
        false => entry.graph.state(&thread_id, None).await?,
    };
    if let Some(snap) = snap {
        if let Some(pending) = snap.interrupts.first() {
            if let Some(Value::Array(msgs)) = input.get_mut("messages") {
                msgs.insert(0, abandoned_prompt(pending));
            }
        }
    }
    let mut context = Map::new();
    context.insert("user_id".into(), user.id.clone().into());
    let spec = RunSpec {
        input: Some(input),
        context,
        ..Default::default()
    };
    let idempotency_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.client_turn_id.clone());
    let created = state
        .runs
        .create(NewRun {
            run_id: new_run_id(),
            thread_id: thread_id.clone(),
            owner: user.id.clone(),
            assistant_id: entry.assistant_id.clone(),
            graph_id: entry.graph_id.clone(),
            kwargs: spec_json(spec)?,
            metadata: json!({}),
            multitask_strategy: req.multitask_strategy.unwrap_or(MultitaskStrategy::Reject),
            idempotency_key,
        })
        .await?;
    let run = created.run;
    let stream = chat_stream(
        state.clone(),
        run.clone(),
        0,
        req.on_disconnect.unwrap_or_default(),
    );
    Ok(sse_response(
        &state,
        stream,
        &[
            ("x-thread-id", thread_id.clone()),
            ("x-run-id", run.run_id.clone()),
            (
                "content-location",
                format!("/threads/{thread_id}/runs/{}", run.run_id),
            ),
        ],
    ))
}

/// `POST /chat/resume`.
pub async fn resume(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<ResumeRequest>,
) -> ApiResult<Response> {
    let chat = binding(&state)?.clone();
    check_uuid(&req.thread_id, "thread_id")?;
    own_thread(&state, &user, &req.thread_id).await?;
    let entry = state
        .graphs
        .find(&chat.graph_id)
        .cloned()
        .ok_or_else(|| ApiError::Internal("chat graph is not registered".into()))?;
    let snap = entry.graph.state(&req.thread_id, None).await?;
    let Some(pending) = snap.as_ref().and_then(|s| s.interrupts.first().cloned()) else {
        return Err(ApiError::BadRequest(format!(
            "thread `{}` has no pending prompt to resume",
            req.thread_id
        )));
    };
    let value = if req.resume_value.kind == "cancel" {
        Value::Null
    } else {
        req.resume_value.value.clone()
    };
    let mut context = Map::new();
    context.insert("user_id".into(), user.id.clone().into());
    let spec = RunSpec {
        command: Some(CommandSpec {
            resume: Some(Resumed {
                value: json!({ pending.id.clone(): value }),
            }),
            ..Default::default()
        }),
        context,
        ..Default::default()
    };
    let created = state
        .runs
        .create(NewRun {
            run_id: new_run_id(),
            thread_id: req.thread_id.clone(),
            owner: user.id.clone(),
            assistant_id: entry.assistant_id.clone(),
            graph_id: entry.graph_id.clone(),
            kwargs: spec_json(spec)?,
            metadata: json!({}),
            multitask_strategy: MultitaskStrategy::Reject,
            idempotency_key: None,
        })
        .await?;
    let run = created.run;
    let stream = chat_stream(
        state.clone(),
        run.clone(),
        0,
        req.on_disconnect.unwrap_or_default(),
    );
    Ok(sse_response(
        &state,
        stream,
        &[
            ("x-thread-id", req.thread_id.clone()),
            ("x-run-id", run.run_id.clone()),
            (
                "content-location",
                format!("/threads/{}/runs/{}", req.thread_id, run.run_id),
            ),
        ],
    ))
}

/// `GET /chat/history/{thread_id}`.
pub async fn history(
    State(state): State<AppState>,
    user: User,
    Path(thread_id): Path<String>,
) -> ApiResult<Json<History>> {
    let chat = binding(&state)?.clone();
    let empty = History {
        thread_id: thread_id.clone(),
        messages: Vec::new(),
        pending_interrupt: None,
    };
    match state.store.get_thread_any(&thread_id).await? {
        None => return Ok(Json(empty)),
        Some(t) if t.owner != user.id => {
            return Err(ApiError::NotFound(format!("thread `{thread_id}`")))
        }
        Some(_) => {}
    }
    let Some(entry) = state.graphs.find(&chat.graph_id) else {
        return Ok(Json(empty));
    };
    let Some(snap) = entry.graph.state(&thread_id, None).await? else {
        return Ok(Json(empty));
    };
    let messages = snap
        .values
        .get("messages")
        .and_then(Value::as_array)
        .map(|msgs| {
            msgs.iter()
                .filter_map(|m| {
                    let role = match m.get("type").and_then(Value::as_str)? {
                        "human" => "user",
                        "ai" => "assistant",
                        _ => return None,
                    };
                    Some(HistoryMessage {
                        id: m
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        role: role.into(),
                        content: m
                            .get("content")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        metadata: m.get("metadata").cloned().unwrap_or(json!({})),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Json(History {
        thread_id,
        messages,
        pending_interrupt: snap.interrupts.first().map(prompt_event),
    }))
}

/// The reconnect snapshot of a run: status lines so far, partial text so far.
async fn snapshot(state: &AppState, run: &Run) -> ApiResult<(Value, u64)> {
    let events: Vec<RunEvent> = match state.runs.hub.get(&run.run_id) {
        Some(ch) => ch.after(0).0,
        None => state
            .store
            .events_after(&run.run_id, 0)
            .await?
            .into_iter()
            .filter_map(|r| {
                serde_json::from_value(r.event).ok().map(|event| RunEvent {
                    seq: r.seq as u64,
                    event,
                })
            })
            .collect(),
    };
    let mut statuses = Vec::new();
    let mut partial = String::new();
    let mut message_id = Value::Null;
    let mut last = 0;
    for e in &events {
        last = e.seq;
        for v in chat_events(state, run, e).await {
            match v.get("type").and_then(Value::as_str) {
                Some("status") => statuses.push(v),
                Some("token") => {
                    if v.get("message_id") != Some(&message_id) || v["reset"] == true {
                        partial.clear();
                        message_id = v.get("message_id").cloned().unwrap_or(Value::Null);
                    }
                    partial.push_str(v.get("content").and_then(Value::as_str).unwrap_or_default());
                }
                _ => {}
            }
        }
    }
    Ok((
        json!({
            "type": "snapshot",
            "run_id": run.run_id,
            "status": run.status.as_str(),
            "statuses": statuses,
            "partial_text": partial,
            "message_id": message_id,
            "pending_interrupt": null,
        }),
        last,
    ))
}

/// `GET /chat/stream/{thread_id}`.
pub async fn stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(thread_id): Path<String>,
) -> ApiResult<Response> {
    let chat = binding(&state)?.clone();
    own_thread(&state, &user, &thread_id).await?;
    // Resume a dropped stream exactly where it stopped.
    if let Some((run_id, seq)) = last_event_id(&headers).and_then(|id| {
        let (r, s) = id.rsplit_once(':')?;
        Some((r.to_string(), s.parse::<u64>().ok()?))
    }) {
        if let Some(run) = state.store.get_run(&user.id, &thread_id, &run_id).await? {
            let stream = chat_stream(state.clone(), run, seq, OnDisconnect::Continue);
            return Ok(sse_response(&state, stream, &[]));
        }
    }
    let active = state.store.active_runs(&thread_id).await?;
    if let Some(run) = active.into_iter().next() {
        let (snap, last) = snapshot(&state, &run).await?;
        let first_id = format!("{}:{last}", run.run_id);
        let first =
            futures_util::stream::once(async move { Ok(data_event(Some(first_id), &snap)) });
        let rest = chat_stream(state.clone(), run, last, OnDisconnect::Continue);
        return Ok(sse_response(&state, first.chain(rest), &[]));
    }
    // Nothing runs: the snapshot holds the final result and the stream ends.
    let entry = state.graphs.find(&chat.graph_id).cloned();
    let snap = match &entry {
        Some(e) => e.graph.state(&thread_id, None).await?,
        None => None,
    };
    let last_run = state
        .store
        .list_runs(&thread_id, 1, 0)
        .await?
        .into_iter()
        .next();
    let mut body = json!({
        "type": "snapshot",
        "run_id": last_run.as_ref().map(|r| r.run_id.clone()),
        "status": "idle",
        "statuses": [],
        "partial_text": "",
        "pending_interrupt": null,
    });
    if let Some(s) = &snap {
        if let Some(i) = s.interrupts.first() {
            body["status"] = "interrupted".into();
            body["pending_interrupt"] = prompt_event(i);
        } else {
            body["result"] = response_event(&s.values);
        }
    }
    if let Some(r) = &last_run {
        if r.status == RunState::Error {
            body["status"] = "error".into();
            body["error"] = r.error.clone().map(Value::String).unwrap_or(Value::Null);
        }
    }
    Ok(sse_response(
        &state,
        futures_util::stream::once(async move { Ok(data_event(None, &body)) }),
        &[],
    ))
}

/// `POST /threads/{thread_id}/cancel`: stops the thread's active run (idempotent).
pub async fn cancel_thread(
    State(state): State<AppState>,
    user: User,
    Path(thread_id): Path<String>,
) -> ApiResult<impl IntoResponse> {
    own_thread(&state, &user, &thread_id).await?;
    let mut cancelled = Vec::new();
    for run in state.store.active_runs(&thread_id).await? {
        state
            .runs
            .cancel(
                &run.run_id,
                CancelAction::Interrupt,
                CancelReason::UserCancelled,
            )
            .await?;
        cancelled.push(run.run_id);
    }
    Ok(Json(
        json!({"thread_id": thread_id, "cancelled": cancelled}),
    ))
}
