//! `GET /chat/stream/{thread_id}`: a client back after a reload or a dropped stream. With
//! `Last-Event-ID: <run_id>:<seq>` the stream resumes exactly after that event; otherwise a
//! `snapshot` comes first (the active run's status lines and partial text so far, or the
//! thread's result or pending prompt when nothing runs), then live events.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::StreamExt;
use palgraph::RunEvent;
use serde_json::{json, Value};

use super::events::{chat_events, chat_stream};
use super::thread_chat;
use crate::api::admission::own_thread;
use crate::api::error::ApiResult;
use crate::api::langgraph::common::ThreadPath;
use crate::api::sse::{data_event, last_event_id, sse_response};
use crate::api::AppState;
use crate::auth::User;
use crate::contract::ChatAdapter;
use crate::contract::OnDisconnect;
use crate::store::{Run, RunState};

/// The reconnect snapshot of a run: status lines so far, partial text so far.
async fn snapshot(
    state: &AppState,
    adapter: &dyn ChatAdapter,
    run: &Run,
) -> ApiResult<(Value, u64)> {
    let events: Vec<RunEvent> = match state.runs.hub.get(&run.run_id) {
        Some(ch) => ch.after(0).0,
        None => state.runs.stored_events(&run.run_id, 0).await?,
    };
    let mut statuses = Vec::new();
    let mut partial = String::new();
    let mut message_id = Value::Null;
    let mut last = 0;
    for e in &events {
        last = e.seq;
        for v in chat_events(state, adapter, run, e).await {
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
pub(crate) async fn stream(
    State(state): State<AppState>,
    user: User,
    headers: HeaderMap,
    Path(ThreadPath { thread_id }): Path<ThreadPath>,
) -> ApiResult<Response> {
    let thread = own_thread(&state, &user, &thread_id).await?;
    let (entry, adapter) = thread_chat(&state, &thread)?;
    // Resume a dropped stream exactly where it stopped.
    if let Some((run_id, seq)) = last_event_id(&headers).and_then(|id| {
        let (r, s) = id.rsplit_once(':')?;
        Some((r.to_string(), s.parse::<u64>().ok()?))
    }) {
        if let Some(run) = state.store.get_run(&user.id, &thread_id, &run_id).await? {
            let stream = chat_stream(state.clone(), adapter, run, seq, OnDisconnect::Continue);
            return Ok(sse_response(&state, stream, &[]));
        }
    }
    let active = state.store.active_runs(&thread_id).await?;
    if let Some(run) = active.into_iter().next() {
        let (snap, last) = snapshot(&state, adapter.as_ref(), &run).await?;
        let first_id = format!("{}:{last}", run.run_id);
        let first =
            futures_util::stream::once(async move { Ok(data_event(Some(first_id), &snap)) });
        let rest = chat_stream(
            state.clone(),
            Arc::clone(&adapter),
            run,
            last,
            OnDisconnect::Continue,
        );
        return Ok(sse_response(&state, first.chain(rest), &[]));
    }
    // Nothing runs: the snapshot holds the final result and the stream ends.
    let snap = entry.graph.state(&thread_id, None).await?;
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
            body["pending_interrupt"] = adapter.prompt(i);
        } else {
            body["result"] = adapter.response(&s.values);
        }
        // An answer that was stopped (cancelled, superseded, failed) is kept with what it
        // had written: the snapshot carries it.
        let history = adapter.history(&s.values);
        if let Some(m) = history
            .last()
            .filter(|m| m.role == "assistant" && m.metadata["interrupted"] == true)
        {
            body["partial_text"] = m.content.clone().into();
            body["message_id"] = m.id.clone().into();
            body["interrupted_reason"] = m.metadata["interrupted_reason"].clone();
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
