//! A run's engine events as the chat contract's events, and the contract's event stream of
//! a run: `status` per node (and the status lines nodes report), `token` for streamed text
//! (`reset: true` when a message starts over), then exactly one terminal event: `response`,
//! `interrupt`, `error` or `cancelled`. Every SSE event carries the id `<run_id>:<seq>`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event as SseEvent;
use futures_util::{Stream, StreamExt};
use palgraph::{CancelReason, Event, RunEvent};
use serde_json::{json, Value};

use crate::api::sse::data_event;
use crate::api::AppState;
use crate::contract::ChatAdapter;
use crate::contract::OnDisconnect;
use crate::runs::Runs;
use crate::store::{CancelAction, Run};

/// How long the final state is read for when the database is away at that moment.
const FINAL_READ_BUDGET: Duration = Duration::from_secs(60);

/// Turns a run event into chat events (most events map to nothing).
pub(crate) async fn chat_events(
    state: &AppState,
    adapter: &dyn ChatAdapter,
    run: &Run,
    e: &RunEvent,
) -> Vec<Value> {
    match &e.event {
        Event::NodeStarted {
            node,
            status: Some(line),
            ..
        } => vec![json!({"type": "status", "node": node, "message": line})],
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
                FINAL_READ_BUDGET,
                || true,
                || async {
                    match (checkpoint_id.as_deref(), adapter.response_fields()) {
                        // The run's last checkpoint: usually still in memory.
                        (Some(id), Some(fields)) => {
                            g.graph.fields_at(&run.thread_id, id, fields).await
                        }
                        (Some(id), None) => g.graph.values_at(&run.thread_id, id).await,
                        (None, _) => {
                            Ok(g.graph.state(&run.thread_id, None).await?.map(|s| s.values))
                        }
                    }
                },
            )
            .await;
            match read {
                Ok(values) => vec![adapter.response(&values.unwrap_or(Value::Null))],
                Err(e) => vec![
                    json!({"type": "error", "message": format!("the answer was saved but could not be read: {e}")}),
                ],
            }
        }
        Event::Interrupted { interrupts } => match interrupts.first() {
            Some(i) => vec![adapter.prompt(i)],
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
    adapter: Arc<dyn ChatAdapter>,
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
    // Shared by every event's future: one reference count each, not a copy of the run's row
    // (its input and metadata) and the server's state per event.
    let shared = Arc::new((state, run, adapter));
    events
        .then(move |e| {
            let shared = Arc::clone(&shared);
            async move {
                let (state, run, adapter) = &*shared;
                let id = format!("{}:{}", run.run_id, e.seq);
                let out = chat_events(state, adapter.as_ref(), run, &e).await;
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
