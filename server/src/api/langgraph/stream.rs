//! Streaming and awaiting a run the LangGraph way: the SSE stream of a run (ids
//! `seq * 1000 + n`: `seq` is the engine event's position in the run and `n` the index of
//! the SSE event made from it, so ids are unique, increasing and stable across joins of the
//! same run with the same modes), waiting for its end, its final values, and what ends with
//! a client's stream (a cancel on disconnect, a stateless run's thread).

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::Event as SseEvent;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use palgraph::CancelReason;
use serde_json::{json, Value};

use super::common::{assistant, with_header};
use super::models::Interrupt;
use super::threads::remove;
use super::translate::{Mode, Translator};
use crate::api::error::{ApiError, ApiResult};
use crate::api::sse::sse_response;
use crate::api::AppState;
use crate::auth::User;
use crate::store::{CancelAction, Run, RunState};

/// What ends with a run's stream or wait: a cancel when the client leaves early
/// (`on_disconnect: cancel`), and the deletion of a stateless run's thread.
pub(crate) struct RunGuard {
    pub(crate) state: AppState,
    pub(crate) run: Run,
    pub(crate) cancel_armed: bool,
    pub(crate) cleanup: bool,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.cancel_armed {
            let (runs, id) = (self.state.runs.clone(), self.run.run_id.clone());
            tokio::spawn(async move {
                let _ = runs
                    .cancel(&id, CancelAction::Interrupt, CancelReason::Disconnect)
                    .await;
            });
        }
        if self.cleanup {
            spawn_cleanup(self.state.clone(), self.run.clone());
        }
    }
}

/// Deletes a stateless run's thread once the run has ended (not when this server's
/// shutdown ends the wait first: the run goes on elsewhere, on that thread).
pub(crate) fn spawn_cleanup(state: AppState, run: Run) {
    tokio::spawn(async move {
        if !wait_for(&state, &run).await {
            return;
        }
        let user = User {
            id: run.owner.clone(),
        };
        if let Ok(Some(t)) = state.store.get_thread(&run.owner, &run.thread_id).await {
            if let Err(e) = remove(&state, &user, &t).await {
                tracing::warn!(thread_id = %run.thread_id, error = %e, "could not delete a stateless run's thread");
            }
        }
    });
}

/// The modes a run was created with.
pub(crate) fn run_modes(run: &Run) -> Vec<Mode> {
    run.kwargs
        .get("api")
        .and_then(|a| a.get("stream_mode"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().and_then(Mode::parse))
                .collect()
        })
        .filter(|m: &Vec<Mode>| !m.is_empty())
        .unwrap_or_else(|| vec![Mode::Values])
}

/// A run's LangGraph event stream: every SSE event after `skip_through` (an SSE id), after
/// a `metadata` event when `head`.
pub(crate) fn lg_stream(
    state: AppState,
    modes: Vec<Mode>,
    skip_through: Option<u64>,
    head: bool,
    guard: RunGuard,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static {
    let mut guard = guard;
    let run = &guard.run;
    // The metadata event has id 0, below every event of the run (seq starts at 1): a
    // client that resumes after it (`Last-Event-ID: 0`) gets the whole run.
    let head = head.then(|| {
        Ok(SseEvent::default().event("metadata").id("0").data(
            json!({"run_id": run.run_id, "thread_id": run.thread_id, "attempt": run.attempt.max(1)})
                .to_string(),
        ))
    });
    let translator = Arc::new(tokio::sync::Mutex::new(Translator::new(run, modes)));
    let events = state.runs.watch(&run.run_id, 0);
    let body = events
        .then(move |e| {
            let (state, translator) = (state.clone(), translator.clone());
            async move {
                let out = translator.lock().await.translate(&state, &e.event).await;
                (e.seq, e.event.is_terminal(), out)
            }
        })
        .flat_map(move |(seq, terminal, out)| {
            // Capture the whole guard (not just its flag): it lives as long as the stream.
            let g = &mut guard;
            if terminal {
                g.cancel_armed = false;
            }
            let items: Vec<Result<SseEvent, Infallible>> = out
                .into_iter()
                .enumerate()
                .filter_map(|(i, (name, data))| {
                    let id = seq * 1000 + i as u64;
                    if skip_through.is_some_and(|s| id <= s) {
                        return None;
                    }
                    Some(Ok(SseEvent::default()
                        .event(name)
                        .id(id.to_string())
                        .data(data.to_string())))
                })
                .collect();
            futures_util::stream::iter(items)
        });
    futures_util::stream::iter(head).chain(body)
}

/// The position of a run's latest event so far.
pub(crate) async fn last_seq(state: &AppState, run_id: &str) -> ApiResult<u64> {
    if let Some(ch) = state.runs.hub.get(run_id) {
        if let Some(e) = ch.after(0).0.last() {
            return Ok(e.seq);
        }
    }
    Ok(state
        .store
        .events_after(run_id, 0)
        .await?
        .last()
        .map(|r| r.seq as u64)
        .unwrap_or(0))
}

/// Where a run lives.
pub(crate) fn location(run: &Run) -> String {
    format!("/threads/{}/runs/{}", run.thread_id, run.run_id)
}

/// A new run's stream, as `/runs/stream` answers.
pub(crate) fn stream_response(state: &AppState, run: Run, cancel: bool, cleanup: bool) -> Response {
    let modes = run_modes(&run);
    let loc = location(&run);
    let guard = RunGuard {
        state: state.clone(),
        run,
        cancel_armed: cancel,
        cleanup,
    };
    sse_response(
        state,
        lg_stream(state.clone(), modes, None, true, guard),
        &[
            ("content-location", loc.clone()),
            ("location", format!("{loc}/stream")),
        ],
    )
}

/// Waits for a run to end (by watching its events): true when it did, false when this
/// server's shutdown ended the wait first (the run was handed back to go on elsewhere).
pub(crate) async fn wait_for(state: &AppState, run: &Run) -> bool {
    let mut events = Box::pin(state.runs.watch(&run.run_id, 0));
    while let Some(e) = events.next().await {
        if e.event.is_terminal() {
            return true;
        }
    }
    // A watch ends without the terminal event when shutdown ended it, or when the run
    // ended without one stored (it ended all the same).
    !state.runs.closed.is_cancelled()
}

/// The answer to a wait that this server's shutdown ended before the run (503, with where
/// to join the run on another replica).
pub(crate) fn goes_on_elsewhere(run: &Run) -> ApiError {
    ApiError::Unavailable(format!(
        "the server is shutting down; run `{}` continues on another replica: join it at {}/join",
        run.run_id,
        location(run)
    ))
}

/// The values a finished run leaves, LangGraph style (`__interrupt__` / `__error__`).
pub(crate) async fn final_values(state: &AppState, run: &Run) -> ApiResult<Value> {
    let run = state
        .store
        .get_run_any(&run.run_id)
        .await?
        .unwrap_or_else(|| run.clone());
    let g = assistant(state, &run.graph_id)?;
    let snap = g.graph.state(&run.thread_id, None).await?;
    let mut values = snap.as_ref().map(|s| s.values.clone()).unwrap_or(json!({}));
    if let (Some(keys), Some(o)) = (&g.output_keys, values.as_object_mut()) {
        o.retain(|k, _| keys.contains(k));
    }
    if let (Some(s), Some(o)) = (&snap, values.as_object_mut()) {
        if !s.interrupts.is_empty() {
            o.insert(
                "__interrupt__".into(),
                Value::Array(
                    s.interrupts
                        .iter()
                        .map(|i| json!(Interrupt::from(i)))
                        .collect(),
                ),
            );
        }
    }
    if run.status == RunState::Error {
        if let Some(o) = values.as_object_mut() {
            o.insert(
                "__error__".into(),
                json!({"error": "RunError", "message": run.error}),
            );
        }
    }
    Ok(values)
}

/// Waits for a new run to end and answers its final values, as `/runs/wait` does.
pub(crate) async fn wait_response(
    state: &AppState,
    run: Run,
    cancel: bool,
    cleanup: bool,
) -> ApiResult<Response> {
    let mut guard = RunGuard {
        state: state.clone(),
        run: run.clone(),
        cancel_armed: cancel,
        cleanup,
    };
    let ended = wait_for(state, &run).await;
    guard.cancel_armed = false;
    if !ended {
        return Err(goes_on_elsewhere(&run));
    }
    let values = final_values(state, &run).await?;
    drop(guard);
    let loc = location(&run);
    let resp = with_header(Json(values).into_response(), "content-location", &loc);
    Ok(with_header(resp, "location", &format!("{loc}/join")))
}
