//! `POST /chat` (a new turn) and `POST /chat/resume` (a prompt's answer): admitted as runs
//! of the chat graph, streamed back as the contract's events.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use palgraph::dynamic::DynInput;
use palgraph::Resume;
use serde_json::Value;

use super::events::chat_stream;
use super::{chat_graph, thread_chat, TurnRequest, MAX_MESSAGE_BYTES};
use crate::api::admission::{admit, check_uuid, own_thread, Admit, ThreadRule};
use crate::api::error::{ApiError, ApiResult};
use crate::api::extract::ApiJson;
use crate::api::sse::sse_response;
use crate::api::AppState;
use crate::auth::User;
use crate::contract::{ChatRequest, ResumeRequest};
use crate::runs::spec::RunSpec;
use crate::store::{MultitaskStrategy, Run};

fn headers_of(run: &Run) -> [(&'static str, String); 3] {
    [
        ("x-thread-id", run.thread_id.clone()),
        ("x-run-id", run.run_id.clone()),
        (
            "content-location",
            format!("/threads/{}/runs/{}", run.thread_id, run.run_id),
        ),
    ]
}

/// `POST /chat`.
pub(crate) async fn chat(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    ApiJson(req): ApiJson<ChatRequest>,
) -> ApiResult<Response> {
    if req.message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::Invalid(format!(
            "message is {} bytes long; the most a chat message may hold is {MAX_MESSAGE_BYTES} bytes (upload long texts as a document)",
            req.message.len()
        )));
    }
    let (thread_id, rule) = match &req.thread_id {
        Some(t) => {
            check_uuid(t, "thread")?;
            (t.clone(), ThreadRule::CreateIfMissing)
        }
        // A thread id made here is new: nothing to look up, no prompt to abandon.
        None => (crate::api::admission::new_thread_id(), ThreadRule::New),
    };
    let existing = match rule {
        ThreadRule::New => None,
        _ => state.store.get_thread_any(&thread_id).await?,
    };
    if existing.as_ref().is_some_and(|t| t.owner != user.id) {
        return Err(ApiError::NotFound(format!("thread `{thread_id}`")));
    }
    let (entry, adapter) = match &existing {
        Some(t) => {
            let chosen = thread_chat(&state, t)?;
            if let Some(g) = &req.graph_id {
                if *g != chosen.0.graph_id && *g != chosen.0.assistant_id {
                    return Err(ApiError::Conflict {
                        code: "graph_mismatch",
                        message: format!(
                            "thread `{thread_id}` is a conversation with graph `{}`, not `{g}`; start a new thread for another graph",
                            chosen.0.graph_id
                        ),
                    });
                }
            }
            chosen
        }
        None => chat_graph(&state, req.graph_id.as_deref())?,
    };
    let mut input = adapter
        .turn_input(TurnRequest {
            message: &req.message,
            fields: &req.fields,
        })
        .map_err(ApiError::Invalid)?;
    // A message on a thread waiting at a prompt abandons the prompt, recorded in the same
    // checkpoint that starts the new turn.
    if existing.is_some() {
        if let Some(pending) = entry.graph.pending_interrupts(&thread_id).await?.first() {
            adapter.abandon_prompt(&mut input, pending);
        }
    }
    let idempotency_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.client_turn_id.clone());
    let created = admit(
        &state,
        Admit {
            user: &user,
            thread_id: &thread_id,
            thread: rule,
            graph: &entry,
            input: DynInput::Turn(input),
            checkpoint_id: None,
            multitask: req.multitask_strategy.unwrap_or(MultitaskStrategy::Reject),
            idempotency_key,
            metadata: Default::default(),
            spec: with_client_turn(req.client_turn_id.as_deref()),
        },
    )
    .await?;
    let run = created.run;
    let headers = headers_of(&run);
    let stream = chat_stream(
        state.clone(),
        adapter,
        run,
        0,
        req.on_disconnect.unwrap_or_default(),
    );
    Ok(sse_response(&state, stream, &headers))
}

/// A run spec whose context names the client's turn (`client_turn_id`), which nodes and
/// the server write on the answers they stop.
fn with_client_turn(client_turn_id: Option<&str>) -> RunSpec {
    let mut spec = RunSpec::default();
    if let Some(c) = client_turn_id {
        spec.context.insert("client_turn_id".into(), c.into());
    }
    spec
}

/// The client turn of the thread's latest run: a resume continues that turn.
async fn latest_client_turn(state: &AppState, thread_id: &str) -> Option<String> {
    let run = state
        .store
        .list_runs(thread_id, 1, 0)
        .await
        .ok()?
        .into_iter()
        .next()?;
    let spec = RunSpec::from_kwargs(&run.kwargs).ok()?;
    spec.context
        .get("client_turn_id")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `POST /chat/resume`.
pub(crate) async fn resume(
    State(state): State<AppState>,
    user: User,
    ApiJson(req): ApiJson<ResumeRequest>,
) -> ApiResult<Response> {
    check_uuid(&req.thread_id, "thread")?;
    let thread = own_thread(&state, &user, &req.thread_id).await?;
    let (entry, adapter) = thread_chat(&state, &thread)?;
    // An answer that does not fit the prompt that waits is refused before any run starts:
    // the prompt stays pending. (With no prompt waiting, admission refuses the resume.)
    if let Some(pending) = entry
        .graph
        .pending_interrupts(&req.thread_id)
        .await?
        .first()
    {
        adapter
            .check_resume(&req.resume_value, pending)
            .map_err(ApiError::Invalid)?;
    }
    let value: Value = adapter.resume_value(&req.resume_value);
    let created = admit(
        &state,
        Admit {
            user: &user,
            thread_id: &req.thread_id,
            thread: ThreadRule::Existing,
            graph: &entry,
            input: DynInput::Resume(Resume::Value(value)),
            checkpoint_id: None,
            multitask: MultitaskStrategy::Reject,
            idempotency_key: None,
            metadata: Default::default(),
            spec: with_client_turn(latest_client_turn(&state, &req.thread_id).await.as_deref()),
        },
    )
    .await?;
    let run = created.run;
    let headers = headers_of(&run);
    let stream = chat_stream(
        state.clone(),
        adapter,
        run,
        0,
        req.on_disconnect.unwrap_or_default(),
    );
    Ok(sse_response(&state, stream, &headers))
}
